/*
 * The runtime's own HTTP resources: GET /status, and what only the Unix
 * socket serves: GET /metrics and the control actions (stop, reload, stop
 * or restart a server).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "endpoint/endpoint_int.h"
#include "http/httpparse.h"
#include "http/httpresp.h"
#include "http/query.h"
#include "jsonrpc/jsonrpc.h"
#include "metrics/prom.h"
#include "session/exchange.h"
#include "session/hub.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* Status over TCP is the public view: no stderr, pids or keys, which
 * only the Unix socket (the runtime's user alone) shows. No view shows a
 * session id: whoever holds one can act in that session. */
void ep_handle_status(struct conn *c, const struct http_request *req)
{
	char *v = http_query_param(req->url, "verbose");
	bool verbose = v && strcmp(v, "1") == 0;
	free(v);
	if (verbose && !c->is_unix) {
		ep_fail(c, 403, JR_INVALID_REQUEST,
			"Forbidden: the verbose status needs the Unix socket "
			"(mcpvisor status -v)");
		return;
	}
	json_t *st = hub_status(c->ep->hub, !c->is_unix ? HUB_STATUS_PUBLIC
					    : verbose	? HUB_STATUS_VERBOSE
							: HUB_STATUS_NORMAL);
	json_object_set_new(st, "pid", json_integer(getpid()));
	json_object_set_new(st, "port", json_integer(c->ep->port));
	ep_respond_json(c, 200, st, NULL);
	json_decref(st);
	ep_conn_request_done(c);
}

/* Control actions: only on the Unix socket (mode 0600), so only the user
 * who runs the runtime can stop or reconfigure it. */
void ep_handle_control(struct conn *c, const struct http_request *req,
		       const char *path)
{
	if (!c->is_unix) {
		ep_fail(c, 403, JR_INVALID_REQUEST,
			"Forbidden: control actions need the Unix socket");
		return;
	}
	if (req->method != HTTP_M_POST || c->ep->control == NULL) {
		ep_respond(c, 405, "text/plain", "Method Not Allowed\n", 19,
			   "Allow: POST\r\n");
		ep_conn_request_done(c);
		return;
	}
	char *force_s = http_query_param(req->url, "force");
	bool force = force_s && strcmp(force_s, "1") == 0;
	free(force_s);
	const char *action = NULL;
	char *server = NULL;
	const char *rest = path + 9;
	if (strcmp(rest, "stop") == 0) {
		action = "shutdown";
	} else if (strcmp(rest, "reload") == 0) {
		action = "reload";
	} else if (strncmp(rest, "servers/", 8) == 0) {
		const char *name = rest + 8;
		const char *slash = strchr(name, '/');
		if (slash && slash > name && slash - name <= CONFIG_MAX_NAME &&
		    (strcmp(slash + 1, "stop") == 0 ||
		     strcmp(slash + 1, "restart") == 0)) {
			server = xstrndup(name, (size_t)(slash - name));
			action = slash + 1;
		}
	}
	if (action == NULL) {
		ep_respond(c, 404, "text/plain", "Not Found\n", 10, NULL);
		ep_conn_request_done(c);
		return;
	}
	char *msg = NULL;
	int rc =
		c->ep->control(c->ep->control_arg, action, server, force, &msg);
	free(server);
	int status = rc == 0	     ? 200
		     : rc == -EBUSY  ? 409
		     : rc == -ENOENT ? 404
				     : 400;
	json_t *body = json_pack("{s:b,s:s}", "ok", rc == 0, "message",
				 msg ? msg : "");
	free(msg);
	if (strcmp(action, "shutdown") == 0)
		c->close_after = true;
	ep_respond_json(c, status, body, NULL);
	json_decref(body);
	ep_conn_request_done(c);
}

static void ep_metrics_cb(void *arg, json_t *figures)
{
	struct conn *c = arg;
	c->metrics = NULL;
	json_object_set_new(json_object_get(figures, "runtime"), "connections",
			    json_integer((json_int_t)c->ep->nconns));
	if (c->metrics_json) {
		ep_respond_json(c, 200, figures, NULL);
	} else {
		struct buf b;
		buf_init(&b);
		prom_render(figures, &b);
		ep_respond(c, 200, PROM_CONTENT_TYPE, b.data ? b.data : "",
			   b.len, NULL);
		buf_free(&b);
	}
	ep_conn_request_done(c);
}

/* Metrics are the Unix socket's, like the verbose status: what runs, how
 * busy and how large it is are the runtime user's business only. The
 * answer waits for /proc to be read off the loop (c->metrics cancels). */
void ep_handle_metrics(struct conn *c, const struct http_request *req)
{
	if (!c->is_unix) {
		ep_fail(c, 403, JR_INVALID_REQUEST,
			"Forbidden: metrics need the Unix socket (curl "
			"--unix-socket RUNTIME_DIR/mcpvisor.sock "
			"http://localhost/metrics)");
		return;
	}
	if (req->method != HTTP_M_GET) {
		ep_respond(c, 405, "text/plain", "Method Not Allowed\n", 19,
			   "Allow: GET\r\n");
		ep_conn_request_done(c);
		return;
	}
	char *fmt = http_query_param(req->url, "format");
	c->metrics_json = fmt && strcmp(fmt, "json") == 0;
	free(fmt);
	struct hub_metrics_req *r =
		hub_metrics_async(c->ep->hub, ep_metrics_cb, c);
	if (r)
		c->metrics = r;
}
