/*
 * `mcpvisor serve`: one loop, one hub, one endpoint, and the runtime file.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "auth/auth.h"
#include "config/config.h"
#include "endpoint/endpoint.h"
#include "home/info.h"
#include "home/launch.h"
#include "journal/journal.h"
#include "proc/reaper.h"
#include "proc/stop.h"
#include "proc/supervisor.h"
#include "runtime/reload.h"
#include "session/hub.h"
#include "toolcache/toolcache.h"
#include "trust/trust.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/paths.h"
#include "util/xmalloc.h"

/* How long a second serve waits for the first one's endpoint, to name it:
 * 100 x 50 ms, longer than a start that reconciles a journal (about 2 s). */
#define CLAIM_NAME_TRIES 100
#define CLAIM_NAME_NS (50 * 1000 * 1000)

struct runtime {
	uv_loop_t *loop;
	struct paths paths;
	const char *config_path;
	struct hub *hub;
	struct auth *auth; /* url servers' tokens (OAuth) */
	struct endpoint *ep;
	struct journal *journal;
	struct toolcache *cache;
	struct reloader *reloader;
	uv_signal_t sigterm, sigint, sighup;
	uv_signal_t sigchld; /* reaps the orphans we adopt (reaper.c) */
	uv_timer_t grace;
	uint64_t grace_ms;
	int lock_fd;	/* the home's lock, held for life */
	int asked_port; /* the default port, when it was taken */
	bool stopping;
	bool finished;
	int exit_code;
};

/* Everything in flight is settled (or the grace period ran out): close the
 * endpoint and every instance. The loop returns once the last server
 * process is reaped. */
static void runtime_finish(struct runtime *rt)
{
	if (rt->finished)
		return;
	rt->finished = true;
	uv_timer_stop(&rt->grace);
	unsigned left = hub_requests(rt->hub);
	if (left > 0) {
		log_warn("%u call(s) still running after the %llu ms grace "
			 "period were cancelled",
			 left, (unsigned long long)rt->grace_ms);
		rt->exit_code = 1;
	}
	/* Calls still running are answered with an error first, then the
	 * connections close. */
	hub_free(rt->hub);
	rt->hub = NULL;
	/* After the instances let go of their refreshes, before the HTTP
	 * client they ran on goes. */
	auth_free(rt->auth);
	rt->auth = NULL;
	endpoint_free(rt->ep);
	rt->ep = NULL;
	runtime_file_remove_own(rt->paths.runtime_file);
	/* The signal handlers stay, unreferenced, until the servers are gone:
	 * a second SIGTERM must not kill the runtime before its children. */
	uv_unref((uv_handle_t *)&rt->sigterm);
	uv_unref((uv_handle_t *)&rt->sigint);
	uv_unref((uv_handle_t *)&rt->sighup);
	uv_close((uv_handle_t *)&rt->grace, NULL);
}

static void runtime_grace_cb(uv_timer_t *t);

/* Called from deep inside the last call's answer: finish on the next loop
 * turn, when that call's callbacks have all returned. */
static void runtime_quiet_cb(void *arg)
{
	struct runtime *rt = arg;
	uv_timer_start(&rt->grace, runtime_grace_cb, 0, 0);
}

static void runtime_grace_cb(uv_timer_t *t)
{
	runtime_finish(t->data);
}

/* Drain: stop accepting, let calls in flight finish within the grace
 * period, then close everything. */
static void runtime_stop(struct runtime *rt, const char *why)
{
	if (rt->stopping) {
		log_info("already stopping (%s)", why);
		return;
	}
	rt->stopping = true;
	/* A draining runtime takes no new config. */
	reloader_free(rt->reloader);
	rt->reloader = NULL;
	unsigned n = hub_requests(rt->hub);
	log_info("stopping (%s); %u call(s) in flight, grace %llu ms", why, n,
		 (unsigned long long)rt->grace_ms);
	endpoint_stop_accepting(rt->ep);
	endpoint_set_draining(rt->ep);
	runtime_file_remove_own(rt->paths.runtime_file);
	uv_timer_start(&rt->grace, runtime_grace_cb, rt->grace_ms, 0);
	hub_when_quiet(rt->hub, runtime_quiet_cb, rt);
}

static void runtime_stop_later_cb(uv_timer_t *t)
{
	runtime_stop(t->data, "stop requested");
}

static int runtime_reload(struct runtime *rt, char **msg)
{
	return reloader_apply(rt->reloader, msg);
}

static void runtime_signal_cb(uv_signal_t *h, int signum)
{
	struct runtime *rt = h->data;
	if (signum == SIGHUP) {
		char *msg = NULL;
		if (!rt->stopping)
			runtime_reload(rt, &msg);
		free(msg);
		return;
	}
	runtime_stop(rt, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static int runtime_control_cb(void *arg, const char *action, const char *server,
			      bool force, char **msg)
{
	struct runtime *rt = arg;
	if (rt->stopping) {
		*msg = xstrdup("the runtime is stopping");
		return -EBUSY;
	}
	if (strcmp(action, "shutdown") == 0) {
		/* From the next loop turn, so this answer goes out first. */
		*msg = xstrdup("stopping");
		uv_timer_start(&rt->grace, runtime_stop_later_cb, 0, 0);
		return 0;
	}
	if (strcmp(action, "reload") == 0)
		return runtime_reload(rt, msg);
	if (strcmp(action, "stop") == 0)
		return hub_stop_server(rt->hub, server, force, msg);
	if (strcmp(action, "restart") == 0)
		return hub_restart_server(rt->hub, server, force, msg);
	*msg = xasprintf("unknown action %s", action);
	return -EINVAL;
}

static int runtime_write_file(struct runtime *rt, const char *config_path)
{
	int port = endpoint_port(rt->ep);
	json_t *o =
		json_pack("{s:I,s:i,s:s,s:s,s:s}", "pid", (json_int_t)getpid(),
			  "port", port, "socket", rt->paths.socket_path,
			  "config", config_path, "version", "0.1.0");
	char *url = xasprintf("http://127.0.0.1:%d/mcp", port);
	json_object_set_new(o, "url", json_string(url));
	/* Where its log goes, when that is the home's log file. */
	if (log_file())
		json_object_set_new(o, "log", json_string(log_file()));
	if (rt->asked_port)
		json_object_set_new(o, "askedPort",
				    json_integer(rt->asked_port));
	free(url);
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(o);
	int rc =
		fsutil_write_atomic(rt->paths.runtime_file, s, strlen(s), 0600);
	free(s);
	return rc;
}

static void runtime_log_config(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->nwarnings; i++)
		log_warn("%s", cfg->warnings[i]);
	for (size_t i = 0; i < cfg->nservers; i++)
		if (cfg->servers[i].error)
			log_error("%s (this server is skipped; the others "
				  "run)",
				  cfg->servers[i].error);
}

/* What runtime_serve holds outside its loop: the paths, the trust room's
 * state folder and the lock. */
static void runtime_release(struct runtime *rt)
{
	trust_clear_state_dir();
	log_release_file();
	if (rt->lock_fd >= 0)
		close(rt->lock_fd);
	rt->lock_fd = -1;
	paths_free(&rt->paths);
}

/* Makes the home ours before anything in it is read: private folders, then
 * the lock that makes this the home's only runtime (held until exit, so
 * the journal has one writer). Returns 0 or the exit code. */
static int runtime_claim_home(struct runtime *rt, const char *home)
{
	char *err = NULL;
	if (paths_create(&rt->paths, &err) < 0) {
		fprintf(stderr, "mcpvisor: %s\n", err);
		free(err);
		return 1;
	}
	long holder = 0;
	rt->lock_fd = runtime_lock_take(rt->paths.lock_file, &holder);
	if (rt->lock_fd == -EWOULDBLOCK) {
		/* Started together with it: give it a moment to open its
		 * endpoint, so the message can name it. */
		struct runtime_info other;
		int found;
		for (int i = 0;
		     (found = runtime_info_read(home, &other)) == -EAGAIN &&
		     i < CLAIM_NAME_TRIES;
		     i++) {
			runtime_info_free(&other);
			struct timespec ts = {0, CLAIM_NAME_NS};
			nanosleep(&ts, NULL);
		}
		fprintf(stderr,
			"mcpvisor: a runtime already runs on this home (pid "
			"%ld, %s); stop it with `mcpvisor stop` or use "
			"another --home\n",
			found == 0 ? other.pid : holder,
			found == 0 && other.url ? other.url
						: "endpoint not open yet");
		runtime_info_free(&other);
		return 2;
	}
	if (rt->lock_fd < 0) {
		fprintf(stderr, "mcpvisor: cannot lock %s: %s\n",
			rt->paths.lock_file, strerror(-rt->lock_fd));
		return 1;
	}
	/* Another home whose runtime folder is this one: its socket answers,
	 * and it must not be taken from it. */
	if (runtime_socket_answers(rt->paths.socket_path)) {
		fprintf(stderr,
			"mcpvisor: another runtime answers on %s (a home "
			"that shares this runtime folder); stop it or use "
			"another --home\n",
			rt->paths.socket_path);
		return 2;
	}
	return 0;
}

/* The log, the config and the drain grace. The home's log file is this
 * runtime's to rotate from now (the home is ours). 0, or 2 when the config
 * cannot be used (said on stderr). */
static int runtime_read_config(struct runtime *rt,
			       const struct runtime_opts *opts,
			       struct reload_seen *seen, struct config **out)
{
	char *log_path = xasprintf("%s/" LAUNCH_LOG_NAME, rt->paths.state_dir);
	log_adopt_file(log_path, opts->log_max ? opts->log_max : LOG_FILE_MAX);
	free(log_path);
	struct config *cfg = reload_read(rt->config_path, seen);
	if (cfg->fatal) {
		fprintf(stderr, "mcpvisor: %s%s\n", cfg->fatal,
			opts->config ? ""
				     : " (the default config: pass --config "
				       "FILE, or create it)");
		config_free(cfg);
		return 2;
	}
	runtime_log_config(cfg);
	rt->grace_ms = opts->grace_ms ? opts->grace_ms
		       : cfg->shutdown_grace_ms > 0
			       ? (uint64_t)cfg->shutdown_grace_ms
			       : CONFIG_DEFAULT_GRACE_MS;
	*out = cfg;
	return 0;
}

/* After a crash, stop what the last runtime started and left behind, and
 * nothing else; then the tool cache. Either may be missing: the runtime
 * serves without. */
static void runtime_recover(struct runtime *rt)
{
	int rc = journal_open(rt->paths.state_dir, &rt->journal);
	if (rc < 0) {
		log_warn("cannot open the journal in %s: %s",
			 rt->paths.state_dir, strerror(-rc));
		rt->journal = NULL;
	} else {
		struct journal_report rep;
		journal_reconcile(rt->journal, PROC_STOP_GRACE_MS, &rep);
	}
	rc = toolcache_open(rt->paths.cache_dir, &rt->cache);
	if (rc < 0) {
		log_warn("no tool cache (%s): %s", rt->paths.cache_dir,
			 strerror(-rc));
		rt->cache = NULL;
	}
}

/* Orphaned grandchildren of our servers come to us, so they can be
 * reaped; children get a parent-death signal through the exec step. */
static void runtime_adopt_children(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	char exe[4096];
	size_t exelen = sizeof exe;
	if (uv_exepath(exe, &exelen) == 0)
		sup_set_exec_shim(exe);
}

/* Runs the loop until what is on it is closed, then closes it; the
 * journal and tool cache write in place again. */
static void runtime_close_loop(struct runtime *rt)
{
	journal_detach(rt->journal);
	toolcache_detach(rt->cache);
	uv_run(rt->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(rt->loop) != 0) {
		log_warn("loop closed with handles still open");
		rt->exit_code = 1;
	}
	free(rt->loop);
	rt->loop = NULL;
}

/* The loop's HTTP client, for auth: the pool's, made on first use. */
static struct httpc *runtime_auth_http_cb(void *arg)
{
	return pool_http(arg);
}

/* A login or logout (from the terminal), another process's refresh. */
static void runtime_auth_watch_cb(void *arg, const char *name, const char *url)
{
	struct runtime *rt = arg;
	if (rt->hub)
		pool_credentials_changed(hub_pool(rt->hub), name, url);
}

/* The loop, the hub (it takes cfg) and the endpoint. 0, or 1 when the
 * endpoint cannot open (said on stderr; nothing is left open). */
static int runtime_open(struct runtime *rt, const struct runtime_opts *opts,
			struct config *cfg)
{
	rt->loop = xmalloc(sizeof *rt->loop);
	uv_loop_init(rt->loop);
	/* From here on journal and tool cache writes leave the loop. */
	journal_attach(rt->journal, rt->loop);
	toolcache_attach(rt->cache, rt->loop);
	char cwd[4096];
	if (getcwd(cwd, sizeof cwd) == NULL)
		strcpy(cwd, "/");
	rt->hub = hub_new(rt->loop, cfg, cwd, rt->journal, rt->cache);
	if (opts->page_size)
		hub_set_page_size(rt->hub, opts->page_size);
	if (opts->session_timeout_ms)
		hub_set_session_timeout(rt->hub, opts->session_timeout_ms);
	hub_set_max_sessions(rt->hub, opts->max_sessions);
	/* url servers sign in with the tokens `mcpvisor login` stored; a
	 * login is picked up at once. */
	rt->auth = auth_new(rt->loop, runtime_auth_http_cb, hub_pool(rt->hub),
			    rt->paths.state_dir);
	pool_set_auth(hub_pool(rt->hub), rt->auth);
	auth_watch(rt->auth, runtime_auth_watch_cb, rt);
	uv_timer_init(rt->loop, &rt->grace);
	rt->grace.data = rt;
	struct endpoint_opts eo = {
		.host = "127.0.0.1",
		.port = opts->port,
		.socket_path = rt->paths.socket_path,
		.sse_close_ms = opts->sse_close_ms,
		.control = runtime_control_cb,
		.arg = rt,
	};
	char *err = NULL;
	int rc = endpoint_start(rt->loop, rt->hub, &eo, &rt->ep, &err);
	if (rc < 0) {
		fprintf(stderr, "mcpvisor: %s\n", err);
		free(err);
		hub_free(rt->hub);
		rt->hub = NULL;
		auth_free(rt->auth);
		rt->auth = NULL;
		uv_close((uv_handle_t *)&rt->grace, NULL);
		runtime_close_loop(rt);
		return 1;
	}
	if (opts->port < 0 && endpoint_port(rt->ep) != EP_DEFAULT_PORT)
		rt->asked_port = EP_DEFAULT_PORT;
	return 0;
}

/* What makes the runtime reachable and steerable: the reloader, the
 * runtime file clients find it by, the signals, the reaper. */
static void runtime_listen(struct runtime *rt, const struct runtime_opts *opts,
			   struct reload_seen *seen)
{
	rt->reloader = reloader_new(rt->loop, rt->hub, rt->config_path,
				    rt->paths.state_dir, seen, !opts->no_watch);
	int rc = runtime_write_file(rt, rt->config_path);
	if (rc < 0)
		log_warn("cannot write %s: %s", rt->paths.runtime_file,
			 strerror(-rc));
	uv_signal_init(rt->loop, &rt->sigterm);
	uv_signal_init(rt->loop, &rt->sigint);
	uv_signal_init(rt->loop, &rt->sighup);
	rt->sigterm.data = rt->sigint.data = rt->sighup.data = rt;
	uv_signal_start(&rt->sigterm, runtime_signal_cb, SIGTERM);
	uv_signal_start(&rt->sigint, runtime_signal_cb, SIGINT);
	uv_signal_start(&rt->sighup, runtime_signal_cb, SIGHUP);
	reaper_start(rt->loop, &rt->sigchld);
}

/* What the user starting `serve` in a terminal reads. */
static void runtime_announce(const struct runtime *rt, size_t nservers,
			     size_t nbad)
{
	if (nbad)
		printf("mcpvisor: serving %zu of %zu servers from %s (%zu "
		       "with config errors, above)\n",
		       nservers - nbad, nservers, rt->config_path, nbad);
	else
		printf("mcpvisor: serving %zu server%s from %s\n", nservers,
		       nservers == 1 ? "" : "s", rt->config_path);
	printf("mcpvisor: endpoint http://127.0.0.1:%d/mcp\n"
	       "mcpvisor: socket %s\n",
	       endpoint_port(rt->ep), rt->paths.socket_path);
	if (rt->asked_port)
		printf("mcpvisor: port %d was taken, so another port was "
		       "chosen; clients set to %d must use the one above\n",
		       rt->asked_port, rt->asked_port);
	fflush(stdout);
}

/* After the loop returned: its last handles, then what the journal could
 * not confirm gone (the next start stops it). */
static void runtime_close(struct runtime *rt)
{
	reloader_free(rt->reloader);
	rt->reloader = NULL;
	uv_close((uv_handle_t *)&rt->sigterm, NULL);
	uv_close((uv_handle_t *)&rt->sigint, NULL);
	uv_close((uv_handle_t *)&rt->sighup, NULL);
	uv_close((uv_handle_t *)&rt->sigchld, NULL);
	runtime_close_loop(rt);
	if (rt->journal && journal_count(rt->journal) > 0) {
		char *left = journal_left_text(rt->journal);
		log_warn("%zu owned resource(s) could not be confirmed gone "
			 "(%s); the next start will stop them",
			 journal_count(rt->journal), left ? left : "?");
		free(left);
		rt->exit_code = 1;
	}
}

int runtime_serve(const struct runtime_opts *opts)
{
	struct runtime rt;
	struct reload_seen seen = {0};
	struct config *cfg = NULL;
	bool served = false;
	memset(&rt, 0, sizeof rt);
	rt.lock_fd = -1;
	paths_resolve(&rt.paths, opts->home);
	int rc = runtime_claim_home(&rt, opts->home);
	if (rc != 0)
		goto fail;
	/* Spaces' .mcp.json files run only as this home's store allows. */
	trust_set_state_dir(rt.paths.state_dir);
	rt.config_path = opts->config ? opts->config : rt.paths.config_file;
	rc = runtime_read_config(&rt, opts, &seen, &cfg);
	if (rc != 0)
		goto fail;
	size_t nservers = cfg->nservers, nbad = 0;
	for (size_t i = 0; i < nservers; i++)
		nbad += cfg->servers[i].error != NULL;
	runtime_recover(&rt);
	runtime_adopt_children();
	rc = runtime_open(&rt, opts, cfg);
	if (rc != 0)
		goto fail;
	runtime_listen(&rt, opts, &seen);
	runtime_announce(&rt, nservers, nbad);

	uv_run(rt.loop, UV_RUN_DEFAULT);
	runtime_close(&rt);
	rc = rt.exit_code;
	served = true;
fail:
	journal_free(rt.journal);
	toolcache_free(rt.cache);
	reload_seen_clear(&seen);
	/* The lock goes last: the journal above was this home's until now. */
	runtime_release(&rt);
	if (served)
		log_info("stopped%s", rc ? " (not everything settled)" : "");
	return rc;
}
