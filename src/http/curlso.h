/*
 * libcurl, loaded at run time: the table of the functions httpc uses.
 * The binary is not linked against libcurl (it and its dependencies add
 * about 6 MB of RSS), so a runtime that never speaks HTTP outward never
 * maps it. <curl/curl.h> gives the types; calls go through the table
 * (the header's curl_easy_setopt and friends are type-checking macros).
 */
#ifndef MCPV_HTTP_CURLSO_H
#define MCPV_HTTP_CURLSO_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

struct curlso {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_reset) *easy_reset;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_pause) *easy_pause;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_multi_init) *multi_init;
	__typeof__(curl_multi_cleanup) *multi_cleanup;
	__typeof__(curl_multi_setopt) *multi_setopt;
	__typeof__(curl_multi_add_handle) *multi_add_handle;
	__typeof__(curl_multi_remove_handle) *multi_remove_handle;
	__typeof__(curl_multi_socket_action) *multi_socket_action;
	__typeof__(curl_multi_assign) *multi_assign;
	__typeof__(curl_multi_info_read) *multi_info_read;
	__typeof__(curl_url) *url;
	__typeof__(curl_url_set) *url_set;
	__typeof__(curl_url_cleanup) *url_cleanup;
};

/* The table, loading libcurl.so.4 and running curl_global_init on the
 * first call (not thread safe: call it from the loop thread only). NULL
 * with *why (static text) when it cannot be loaded; later calls give the
 * same answer without trying again. */
const struct curlso *curlso_get(const char **why);

/* A finished transfer's CURLcode as -errno (0, -ECONNREFUSED, -ETIMEDOUT,
 * -ECONNRESET, -EHOSTUNREACH, -EPROTO, -ECANCELED, -EINVAL, -ENOMEM) and
 * *why, a sentence that names no header value and no URL (either may hold
 * a secret): static text, or written into out. heard: any byte of a
 * response came. errbuf: curl's error buffer, used for TLS errors only
 * (they name a certificate problem and at most the host). */
int curlso_errno(const struct curlso *cu, CURLcode code, bool heard,
		 const char *errbuf, char *out, size_t out_size,
		 const char **why);
#endif
