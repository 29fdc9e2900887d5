/*
 * Admission of a request: the peer's uid on TCP (read once per
 * connection), bearer API keys for other users, and the existence of the
 * space an initialize names. The answer to a request that is not
 * admitted is given here.
 */
#include "endpoint/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "endpoint/endpoint_int.h"
#include "endpoint/peer.h"
#include "http/query.h"
#include "jsonrpc/jsonrpc.h"
#include "session/hub.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

/* The keys of --api-key-file: set once before the loop runs. */
static char **auth_file_keys;
static size_t auth_file_nkeys;

void auth_keys_clear(void)
{
	for (size_t i = 0; i < auth_file_nkeys; i++) {
		explicit_bzero(auth_file_keys[i], strlen(auth_file_keys[i]));
		free(auth_file_keys[i]);
	}
	free(auth_file_keys);
	auth_file_keys = NULL;
	auth_file_nkeys = 0;
}

size_t auth_file_key_count(void)
{
	return auth_file_nkeys;
}

int auth_keys_load_file(const char *path, char **err)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		int rc = -errno;
		*err = xasprintf("cannot read the API key file %s: %s", path,
				 strerror(errno));
		return rc;
	}
	if (st.st_mode & 0077) {
		*err = xasprintf("the API key file %s may be read by other "
				 "users (mode %03o); run `chmod 600 %s`",
				 path, (unsigned)(st.st_mode & 0777), path);
		return -EPERM;
	}
	char *text = NULL;
	size_t len = 0;
	int rc = fsutil_read_user_file(path, AUTH_MAX_KEY_FILE, &text, &len);
	if (rc < 0) {
		*err = xasprintf("cannot read the API key file %s: %s", path,
				 strerror(-rc));
		return rc;
	}
	auth_keys_clear();
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t n = strlen(line);
		while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' ||
				 line[n - 1] == '\t'))
			line[--n] = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '\0' || *line == '#')
			continue;
		auth_file_keys = xrealloc(auth_file_keys,
					  (auth_file_nkeys + 1) *
						  sizeof *auth_file_keys);
		auth_file_keys[auth_file_nkeys++] = xstrdup(line);
	}
	explicit_bzero(text, len);
	free(text);
	if (auth_file_nkeys == 0) {
		*err = xasprintf("the API key file %s holds no key", path);
		return -EINVAL;
	}
	return 0;
}

/* Digests of equal length, compared without an early exit, and every key
 * looked at: the time says nothing about which key or byte differed. */
static unsigned auth_match_in(char *const *keys, size_t n,
			      const unsigned char want[SHA256_BYTES])
{
	unsigned found = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char d[SHA256_BYTES];
		sha256_bytes(keys[i], strlen(keys[i]), d);
		found |= sha256_equal(d, want);
	}
	return found;
}

bool auth_key_match(char *const *keys, size_t nkeys, const char *presented,
		    size_t len)
{
	unsigned char want[SHA256_BYTES];
	sha256_bytes(presented, len, want);
	unsigned found = auth_match_in(keys, nkeys, want);
	found |= auth_match_in(auth_file_keys, auth_file_nkeys, want);
	return found != 0;
}

/* Another user on TCP: served only with a valid key. */
static bool ep_admit_other(struct conn *c, const struct http_request *req)
{
	const struct config *cfg = hub_config(c->ep->hub);
	if (cfg->napi_keys == 0 && auth_file_nkeys == 0) {
		char *m = xasprintf("Forbidden: this runtime serves only its "
				    "own user (uid %u) on TCP; connect as "
				    "that user or through its Unix socket",
				    (unsigned)geteuid());
		ep_fail(c, 403, JR_INVALID_REQUEST, m);
		free(m);
		return false;
	}
	const char *a = http_request_known(req, HTTP_H_AUTHORIZATION);
	if (a && strncasecmp(a, "Bearer ", 7) == 0) {
		const char *k = a + 7;
		while (*k == ' ')
			k++;
		if (auth_key_match(cfg->api_keys, cfg->napi_keys, k, strlen(k)))
			return true;
	}
	json_t *err = jr_error(NULL, JR_INVALID_REQUEST,
			       a ? "Unauthorized: the API key is not valid"
				 : "Unauthorized: this runtime serves other "
				   "users only with an API key "
				   "(Authorization: Bearer KEY)",
			       NULL);
	ep_respond_json(c, 401, err,
			"WWW-Authenticate: Bearer realm=\"mcpvisor\"\r\n");
	json_decref(err);
	ep_conn_request_done(c);
	return false;
}

/* Once per connection: the kernel says who opened the other end. A peer
 * it cannot name (gone, or not on this host) counts as another user. */
static void ep_peer_learn(struct conn *c)
{
	uv_os_fd_t fd;
	uid_t uid = 0;
	int rc = uv_fileno(&c->u.h, &fd);
	if (rc == 0)
		rc = peer_tcp_uid(fd, &uid);
	if (rc == 0 && uid == geteuid()) {
		c->peer = EP_PEER_OWN;
		return;
	}
	c->peer = EP_PEER_OTHER;
	if (rc == 0)
		log_info("TCP connection from uid %u, not the runtime's user: "
			 "served only with an API key",
			 (unsigned)uid);
	else
		log_info("TCP connection from an unknown user (%s): served "
			 "only with an API key",
			 strerror(-rc));
}

/* A space that is not a folder would start servers in a folder that does
 * not exist and fail each with a puzzling error: refuse the session. Only
 * a request without a session can start one. */
static bool ep_admit_space(struct conn *c, const struct http_request *req)
{
	if (http_request_known(req, HTTP_H_MCP_SESSION_ID))
		return true;
	char *space = http_query_param(req->url, "space");
	if (space == NULL || space[0] != '/')
		goto ok;
	struct stat st;
	const char *why = NULL;
	if (stat(space, &st) < 0)
		why = errno == ENOENT || errno == ENOTDIR ? "does not exist"
							  : "cannot be read";
	else if (!S_ISDIR(st.st_mode))
		why = "is not a folder";
	if (why == NULL)
		goto ok;
	char *m = xasprintf("The space folder %.300s %s; pass an existing "
			    "folder in ?space=",
			    space, why);
	free(space);
	ep_fail(c, 400, JR_INVALID_REQUEST, m);
	free(m);
	return false;
ok:
	free(space);
	return true;
}

bool ep_admit(struct conn *c, const struct http_request *req)
{
	if (!c->is_unix && c->peer != EP_PEER_OWN) {
		if (c->peer == EP_PEER_UNKNOWN)
			ep_peer_learn(c);
		if (c->peer != EP_PEER_OWN && !ep_admit_other(c, req))
			return false;
	}
	if (strchr(req->url, '?') && !ep_admit_space(c, req))
		return false;
	return true;
}
