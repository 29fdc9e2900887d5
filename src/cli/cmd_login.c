/*
 * `mcpvisor login NAME` and `mcpvisor logout NAME`: sign in to a hosted
 * server that asks for OAuth (the flow of src/auth/, with a loopback
 * redirect listener and the browser from $BROWSER or xdg-open; with
 * --no-browser the redirect may be pasted back), or forget its tokens. A
 * running runtime sees the new tokens by itself.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "auth/auth.h"
#include "auth/browser.h"
#include "cli/cli.h"
#include "config/config.h"
#include "config/secrets.h"
#include "http/httpc.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

#define LOGIN_MAX_PASTE 8192

static void login_usage(FILE *f)
{
	fprintf(f,
		"usage: mcpvisor login NAME [--no-browser] [--port N] "
		"[--scope \"A B\"]\n"
		"                      [--config FILE] [--home DIR]\n"
		"       mcpvisor logout NAME [--config FILE] [--home DIR]\n"
		"\n"
		"login signs in to server NAME, a url server that asks for "
		"OAuth: it finds\n"
		"the server's authorization server, registers mcpvisor there "
		"when needed,\n"
		"and opens the sign-in page with $BROWSER, else xdg-open; the "
		"address is\n"
		"always printed. The browser comes back to a listener on "
		"127.0.0.1 (--port N:\n"
		"that port, else any free one). --no-browser opens nothing "
		"and also reads\n"
		"the address the browser ends on from stdin, for a browser "
		"on another\n"
		"machine (or forward the port with the ssh -L line it "
		"prints). --scope asks\n"
		"for more scopes. Exits 0 once the tokens are stored; a "
		"running runtime\n"
		"uses them at once.\n"
		"logout forgets the server's tokens.\n"
		"NAME is looked up in --config FILE, else the config of the "
		"running runtime,\n"
		"else the global config.\n");
}

struct login_opts {
	const char *home;
	const char *config;
	const char *name;
	const char *scope;
	int port;
	bool no_browser;
	bool logout;
};

static int login_parse(int argc, char **argv, struct login_opts *o)
{
	static const struct option longopts[] = {
		{"home", required_argument, NULL, 'H'},
		{"config", required_argument, NULL, 'c'},
		{"scope", required_argument, NULL, 's'},
		{"port", required_argument, NULL, 'p'},
		{"no-browser", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "H:h", longopts, NULL)) != -1) {
		char *end = NULL;
		switch (ch) {
		case 'H':
			o->home = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 's':
			o->scope = optarg;
			break;
		case 'p':
			o->port = (int)strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || o->port < 1 ||
			    o->port > 65535) {
				fprintf(stderr,
					"mcpvisor login: --port takes a port "
					"number, 1 to 65535\n");
				return CLI_USAGE;
			}
			break;
		case 'n':
			o->no_browser = true;
			break;
		case 'h':
			login_usage(stdout);
			return CLI_OK;
		default:
			login_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (o->logout && (o->scope || o->port || o->no_browser)) {
		fprintf(stderr, "mcpvisor logout: takes only NAME, --config "
				"and --home\n");
		return CLI_USAGE;
	}
	if (argc - optind != 1) {
		login_usage(stderr);
		return CLI_USAGE;
	}
	o->name = argv[optind];
	return -1;
}

/* The config the running runtime of the home serves, when one runs and
 * says. Caller frees. */
static char *login_runtime_config(const struct paths *p)
{
	char *text = NULL;
	size_t len = 0;
	if (fsutil_read_file(p->runtime_file, 64 * 1024, &text, &len) < 0)
		return NULL;
	json_t *o = json_loadb(text, len, 0, NULL);
	free(text);
	const char *c = json_string_value(json_object_get(o, "config"));
	char *out = c && c[0] ? xstrdup(c) : NULL;
	json_decref(o);
	return out;
}

/* Finds the server: its config is *cfg (to free). A CLI_* code with the
 * message printed, or -1. */
static int login_find(const struct login_opts *o, const struct paths *p,
		      struct config **cfg, const struct server_config **sv)
{
	const char *cmd = o->logout ? "logout" : "login";
	char *rt = o->config ? NULL : login_runtime_config(p);
	const char *file = o->config ? o->config : rt ? rt : p->config_file;
	*cfg = config_load_file(file);
	if ((*cfg)->fatal) {
		fprintf(stderr, "mcpvisor %s: %s\n", cmd, (*cfg)->fatal);
		free(rt);
		return CLI_USAGE;
	}
	*sv = config_find(*cfg, o->name);
	if (*sv == NULL) {
		char *shown = escape_str(o->name, 0);
		fprintf(stderr, "mcpvisor %s: no server \"%s\" in %s", cmd,
			shown, file);
		free(shown);
		const char *sep = "; its url servers: ";
		for (size_t i = 0; i < (*cfg)->nservers; i++)
			if ((*cfg)->servers[i].url) {
				fprintf(stderr, "%s%s", sep,
					(*cfg)->servers[i].name);
				sep = ", ";
			}
		fprintf(stderr, "\n");
		free(rt);
		return CLI_USAGE;
	}
	free(rt);
	if ((*sv)->url == NULL || (*sv)->kind != SERVER_HTTP_REMOTE) {
		fprintf(stderr,
			"mcpvisor %s: server \"%s\" is not a remote url "
			"server: "
			"there is nothing to sign in to\n",
			cmd, (*sv)->name);
		return CLI_USAGE;
	}
	if ((*sv)->error) {
		fprintf(stderr, "mcpvisor %s: %s\n", cmd, (*sv)->error);
		return CLI_USAGE;
	}
	return -1;
}

struct login {
	uv_loop_t loop;
	struct httpc *http;
	struct auth *auth;
	struct auth_flow *flow;
	uv_pipe_t in; /* --no-browser: the pasted address */
	bool reading;
	struct buf line;
	const struct login_opts *o;
	char *url_shown; /* the server's url, secrets masked */
	int rc;
	bool done;
};

static struct httpc *login_http(void *arg)
{
	struct login *l = arg;
	return l->http;
}

static void login_stop_reading(struct login *l)
{
	if (l->reading) {
		uv_read_stop((uv_stream_t *)&l->in);
		uv_close((uv_handle_t *)&l->in, NULL);
		l->reading = false;
	}
}

static void login_done(void *arg, int err, const char *why)
{
	struct login *l = arg;
	l->flow = NULL;
	l->done = true;
	login_stop_reading(l);
	if (err == 0) {
		fprintf(stderr,
			"mcpvisor: signed in to server \"%s\"; its tokens are "
			"stored\n",
			l->o->name);
		l->rc = CLI_OK;
	} else {
		fprintf(stderr, "mcpvisor login: %s\n", why);
		l->rc = CLI_FAILED;
	}
}

static void login_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char slab[4096];
	*b = uv_buf_init(slab, sizeof slab);
}

/* A line pasted on stdin: the address the browser ended on. */
static void login_pasted(struct login *l, char *s)
{
	s[strcspn(s, "\r")] = '\0';
	s += strspn(s, " \t");
	if (s[0] == '\0' || l->flow == NULL)
		return;
	const char *why = NULL;
	if (auth_flow_redirect(l->flow, s, &why) < 0)
		fprintf(stderr,
			"mcpvisor login: %s; paste the whole address "
			"the browser ended on\n",
			why);
}

static void login_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct login *l = s->data;
	if (n < 0) {
		/* stdin closed: the listener may still get the redirect. */
		login_stop_reading(l);
		return;
	}
	for (ssize_t i = 0; i < n && l->reading; i++) {
		if (b->base[i] != '\n') {
			if (l->line.len < LOGIN_MAX_PASTE)
				buf_append(&l->line, &b->base[i], 1);
			continue;
		}
		char *text = buf_steal(&l->line);
		login_pasted(l, text ? text : (char *)"");
		free(text);
	}
}

static void login_url(void *arg, const char *auth_url, const char *redirect)
{
	struct login *l = arg;
	int port = 0;
	sscanf(redirect, "http://127.0.0.1:%d/", &port);
	fprintf(stderr, "Sign in to server \"%s\" (%s) at this address:\n\n",
		l->o->name, l->url_shown);
	char *shown = escape_str(auth_url, 0);
	fprintf(stderr, "  %s\n\n", shown);
	free(shown);
	if (!l->o->no_browser) {
		const char *what = NULL;
		int rc = browser_open(&l->loop, auth_url, &what);
		if (rc == 0)
			fprintf(stderr, "Opened it with %s. ", what);
		else if (rc == -ENOENT)
			fprintf(stderr, "No browser to open it with ($BROWSER "
					"is not set, no display for "
					"xdg-open): open it yourself. ");
		else
			fprintf(stderr,
				"Could not open a browser (%s): open "
				"it yourself. ",
				uv_strerror(rc));
		fprintf(stderr, "Waiting for the browser to come back to %s\n",
			redirect);
		return;
	}
	char host[256] = "this-host";
	if (gethostname(host, sizeof host) < 0 || host[0] == '\0')
		snprintf(host, sizeof host, "this-host");
	host[sizeof host - 1] = '\0';
	fprintf(stderr,
		"Waiting for the browser to come back to %s.\n"
		"With the browser on another machine, forward the port "
		"first:\n\n  ssh -L %d:127.0.0.1:%d %s\n\n"
		"or paste here the whole address the browser ends on (its "
		"page will not load):\n",
		redirect, port, port, host);
	if (uv_pipe_init(&l->loop, &l->in, 0) == 0 &&
	    uv_pipe_open(&l->in, 0) == 0) {
		l->in.data = l;
		l->reading = uv_read_start((uv_stream_t *)&l->in, login_alloc,
					   login_read) == 0;
		if (!l->reading)
			uv_close((uv_handle_t *)&l->in, NULL);
	}
}

static void login_close_walk(uv_handle_t *h, void *arg)
{
	/* A browser still running (browser_open's handle, on the heap) is
	 * left to itself; its handle goes with the loop. */
	if (!uv_is_closing(h))
		uv_close(h, h->type == UV_PROCESS ? (uv_close_cb)free : NULL);
}

static int login_run(const struct login_opts *o, const struct paths *p,
		     const struct server_config *sv)
{
	struct login l = {.o = o, .rc = CLI_FAILED};
	const char *why = NULL;
	uv_loop_init(&l.loop);
	buf_init(&l.line);
	l.url_shown = secrets_server_url(sv);
	l.http = httpc_new(&l.loop, &why);
	if (l.http == NULL) {
		fprintf(stderr, "mcpvisor login: %s\n", why);
		goto done;
	}
	l.auth = auth_new(&l.loop, login_http, &l, p->state_dir);
	struct auth_flow_opts fo = {.name = sv->name,
				    .url = sv->url,
				    .oauth = sv->oauth,
				    .scope = o->scope,
				    .port = o->port};
	static const struct auth_flow_cbs cbs = {login_url, login_done};
	int rc = auth_flow_start(l.auth, &fo, &cbs, &l, &l.flow);
	if (rc < 0) {
		fprintf(stderr,
			"mcpvisor login: cannot sign in to server "
			"\"%s\": %s\n",
			sv->name,
			rc == -EPROTONOSUPPORT
				? "its url is neither https nor on a loopback "
				  "host"
				: strerror(-rc));
		goto done;
	}
	while (!l.done && uv_run(&l.loop, UV_RUN_ONCE))
		;
done:
	login_stop_reading(&l);
	auth_free(l.auth);
	httpc_free(l.http);
	uv_walk(&l.loop, login_close_walk, NULL);
	uv_run(&l.loop, UV_RUN_DEFAULT);
	uv_loop_close(&l.loop);
	buf_free(&l.line);
	free(l.url_shown);
	return l.rc;
}

static int login_main(int argc, char **argv, bool logout)
{
	struct login_opts o = {.logout = logout};
	int rc = login_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct paths p;
	char *err = NULL;
	paths_resolve(&p, o.home);
	struct config *cfg = NULL;
	const struct server_config *sv = NULL;
	rc = login_find(&o, &p, &cfg, &sv);
	if (rc >= 0)
		goto done;
	/* Everything written from here on is ours alone. */
	umask(077);
	if (paths_create(&p, &err) < 0) {
		fprintf(stderr, "mcpvisor %s: %s\n",
			logout ? "logout" : "login", err);
		free(err);
		rc = CLI_FAILED;
		goto done;
	}
	if (logout) {
		int f = auth_store_forget(p.state_dir, sv->name, sv->url);
		if (f == 0)
			printf("mcpvisor: forgot the tokens of server \"%s\"\n",
			       sv->name);
		else if (f == -ENOENT)
			printf("mcpvisor: no tokens were stored for server "
			       "\"%s\"\n",
			       sv->name);
		else
			fprintf(stderr,
				"mcpvisor logout: cannot forget the tokens of "
				"server \"%s\": %s\n",
				sv->name, strerror(-f));
		rc = f == 0 || f == -ENOENT ? CLI_OK : CLI_FAILED;
		goto done;
	}
	rc = login_run(&o, &p, sv);
done:
	config_free(cfg);
	paths_free(&p);
	return rc;
}

int cmd_login(int argc, char **argv)
{
	return login_main(argc, argv, false);
}

int cmd_logout(int argc, char **argv)
{
	return login_main(argc, argv, true);
}
