/*
 * Loads libcurl on first use (dlopen) and fills the function table of
 * curlso.h. Loaded once per process and never unloaded: libcurl and the
 * TLS library keep global state that must outlive every handle. Also
 * says what a CURLcode means to us.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "http/curlso.h"
#include "util/dl.h"

/* Debian's libcurl4 (the OpenSSL flavour, which shares the libcrypto the
 * runtime already maps). */
#define CURLSO_NAME "libcurl.so.4"

static struct curlso curlso;
static bool curlso_tried;
static const char *curlso_why;

#define CURLSO_SYM(field, name)                                                \
	dl_sym(h, name, &curlso.field, sizeof curlso.field)

static const char *curlso_load(void)
{
	void *h = dlopen(CURLSO_NAME, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return "libcurl (" CURLSO_NAME ") cannot be loaded; install "
		       "libcurl4";
	bool ok = CURLSO_SYM(global_init, "curl_global_init") &&
		  CURLSO_SYM(easy_init, "curl_easy_init") &&
		  CURLSO_SYM(easy_cleanup, "curl_easy_cleanup") &&
		  CURLSO_SYM(easy_reset, "curl_easy_reset") &&
		  CURLSO_SYM(easy_setopt, "curl_easy_setopt") &&
		  CURLSO_SYM(easy_getinfo, "curl_easy_getinfo") &&
		  CURLSO_SYM(easy_pause, "curl_easy_pause") &&
		  CURLSO_SYM(easy_strerror, "curl_easy_strerror") &&
		  CURLSO_SYM(multi_init, "curl_multi_init") &&
		  CURLSO_SYM(multi_cleanup, "curl_multi_cleanup") &&
		  CURLSO_SYM(multi_setopt, "curl_multi_setopt") &&
		  CURLSO_SYM(multi_add_handle, "curl_multi_add_handle") &&
		  CURLSO_SYM(multi_remove_handle, "curl_multi_remove_handle") &&
		  CURLSO_SYM(multi_socket_action, "curl_multi_socket_action") &&
		  CURLSO_SYM(multi_assign, "curl_multi_assign") &&
		  CURLSO_SYM(multi_info_read, "curl_multi_info_read") &&
		  CURLSO_SYM(url, "curl_url") &&
		  CURLSO_SYM(url_set, "curl_url_set") &&
		  CURLSO_SYM(url_cleanup, "curl_url_cleanup");
	/* Kept loaded even on failure: dlclose of a half-used TLS stack is
	 * not worth the risk for a process that will report and go on. */
	if (!ok)
		return "libcurl (" CURLSO_NAME ") lacks a function mcpvisor "
		       "needs; it is older than 7.85";
	/* CURL_GLOBAL_ALL initialises TLS once; no signal handlers are
	 * installed (each easy handle sets CURLOPT_NOSIGNAL). */
	if (curlso.global_init(CURL_GLOBAL_ALL) != CURLE_OK)
		return "libcurl failed to initialise";
	return NULL;
}

const struct curlso *curlso_get(const char **why)
{
	if (!curlso_tried) {
		curlso_tried = true;
		curlso_why = curlso_load();
	}
	if (curlso_why) {
		if (why)
			*why = curlso_why;
		return NULL;
	}
	return &curlso;
}

/* A CURLcode as -errno and a sentence that names no header value and no
 * URL (either may hold a secret). */
int curlso_errno(const struct curlso *cu, CURLcode code, bool heard,
		 const char *errbuf, char *out, size_t out_size,
		 const char **why)
{
	const char *what = cu->easy_strerror(code);
	switch (code) {
	case CURLE_OK:
		*why = "";
		return 0;
	case CURLE_COULDNT_CONNECT:
		*why = "the server refused the connection";
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		*why = "the server's host name did not resolve";
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		*why = heard ? "the response did not finish in time"
			     : "the server did not answer in time";
		return -ETIMEDOUT;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		*why = heard ? "the connection closed before the response "
			       "was whole"
			     : "the connection closed without a response";
		return -ECONNRESET;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_USE_SSL_FAILED:
		/* TLS errors name the certificate problem and at most the
		 * host; never a header or a path. */
		snprintf(out, out_size, "TLS failed: %.150s",
			 errbuf && errbuf[0] ? errbuf : what);
		*why = out;
		return -EPROTO;
	case CURLE_WRITE_ERROR:
	case CURLE_ABORTED_BY_CALLBACK:
		*why = "the request was ended by its owner";
		return -ECANCELED;
	case CURLE_OUT_OF_MEMORY:
		*why = "out of memory";
		return -ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		*why = "the URL is not a valid http or https URL";
		return -EINVAL;
	default:
		snprintf(out, out_size, "the HTTP exchange failed: %.150s",
			 what);
		*why = out;
		return -EPROTO;
	}
}
