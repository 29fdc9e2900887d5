/*
 * The container upstream on the real podman (skipped where there is none):
 * both forms answer MCP, the container is reported owned by name before it
 * exists and again with its id, the stop ladder removes it and only then
 * reports it gone; the engine's own error line is the fault's reason; an
 * engine that cannot remove it leaves it reported live (and named in the
 * log); a missing engine fails the open. Every container a test starts
 * carries its own owner token and is removed by that label at the end.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "http/httpc.h"
#include "instance/instance.h"
#include "journal/journal.h"
#include "pool/pool.h"
#include "ports/ports.h"
#include "transport/upstream.h"
#include "util/xmalloc.h"

#define UC_INIT                                                                \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"  \
	"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"             \
	"\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
#define UC_WAIT_MS 30000

static char uc_image[256];
static char uc_token[JOURNAL_TOKEN_LEN + 1];

struct uc {
	uv_loop_t loop;
	uv_timer_t guard;
	struct httpc *http;
	struct upstream *up;
	const struct upstream_ops *ops;
	int messages, faults, closed;
	int id_at_first; /* id reports when the first answer came */
	int container_live, container_gone, container_kept, id_reports;
	int process_live, process_gone;
	enum upstream_fault_kind fault_kind;
	char fault_text[1024];
	bool in_stop;	 /* the test is inside ops->stop */
	int inside_stop; /* callbacks that came from inside it */
	char name[256];
	char id[80];
};

/* The test image from the project's own static fixture (the container
 * tests' script); false when there is no podman to run it. */
static bool uc_ready(void)
{
	if (access("/usr/bin/podman", X_OK) != 0)
		return false;
	if (!getenv("CONTAINERS_CONF")) {
		char *conf = realpath("tests/containers/containers.conf", NULL);
		cr_assert_not_null(conf, "run from the repository's root");
		setenv("CONTAINERS_CONF", conf, 1);
		free(conf);
	}
	FILE *p = popen("sh tests/containers/image.sh 2>/dev/null", "r");
	cr_assert_not_null(p);
	bool ok = fgets(uc_image, sizeof uc_image, p) != NULL;
	pclose(p);
	uc_image[strcspn(uc_image, "\n")] = '\0';
	cr_assert(ok && uc_image[0], "tests/containers/image.sh gave no image");
	journal_new_token(uc_token);
	return true;
}

/* Removes what carries this test's token, one at a time. */
static void uc_cleanup(void)
{
	if (!uc_token[0])
		return;
	char *cmd = xasprintf("podman ps -aq --filter label=mcpvisor.owner=%s "
			      "| xargs -r -n1 podman rm -f >/dev/null 2>&1",
			      uc_token);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed: %s\n", cmd);
	free(cmd);
}

TestSuite(up_container, .fini = uc_cleanup, .timeout = 60);

/* How many containers carry this test's token. */
static int uc_count(void)
{
	char *cmd = xasprintf("podman ps -aq --filter label=mcpvisor.owner=%s "
			      "| wc -l",
			      uc_token);
	FILE *p = popen(cmd, "r");
	free(cmd);
	int n = -1;
	if (p == NULL || fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

static void uc_message(void *ctx, const char *msg, size_t len, int64_t rel)
{
	struct uc *t = ctx;
	t->inside_stop += t->in_stop;
	if (t->messages++ == 0)
		t->id_at_first = t->id_reports;
}

static void uc_fault(void *ctx, const struct upstream_fault *f)
{
	struct uc *t = ctx;
	t->inside_stop += t->in_stop;
	t->faults++;
	t->fault_kind = f->kind;
	snprintf(t->fault_text, sizeof t->fault_text, "%s",
		 f->text ? f->text : "");
}

static void uc_owned(void *ctx, const struct upstream_owned *o, bool live)
{
	struct uc *t = ctx;
	t->inside_stop += t->in_stop;
	if (o->kind == UPSTREAM_OWNED_PROCESS) {
		live ? t->process_live++ : t->process_gone++;
		return;
	}

	snprintf(t->name, sizeof t->name, "%s", o->container_name);
	if (live && o->container_id) {
		t->id_reports++;
		snprintf(t->id, sizeof t->id, "%s", o->container_id);
	} else if (live) {
		t->container_live++;
	} else if (o->kept) {
		t->container_kept++;
	} else {
		t->container_gone++;
	}
}

static void uc_lost(void *ctx, int64_t id, enum outbox_fact f)
{
}

static void uc_closed(void *ctx)
{
	struct uc *t = ctx;
	t->inside_stop += t->in_stop;
	t->closed++;
	t->up = NULL;
}

static const struct upstream_cbs uc_cbs = {
	.on_message = uc_message,
	.on_lost = uc_lost,
	.on_fault = uc_fault,
	.on_owned = uc_owned,
	.on_closed = uc_closed,
};

static void uc_guard_cb(uv_timer_t *h)
{
	cr_assert_fail("timed out");
}

static void uc_run_until(struct uc *t, const int *counter, int want)
{
	uv_timer_start(&t->guard, uc_guard_cb, UC_WAIT_MS, 0);
	while (*counter < want)
		uv_run(&t->loop, UV_RUN_ONCE);
	uv_timer_stop(&t->guard);
}

static int uc_open_as(struct uc *t, const char *json, const char *token)
{
	memset(t, 0, sizeof *t);
	uv_loop_init(&t->loop);
	uv_timer_init(&t->loop, &t->guard);
	char *text = xasprintf("{\"mcpServers\": {\"s\": %s}}", json);
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	free(text);
	const struct server_config *s = &cfg->servers[0];
	cr_assert_null(s->error, "%s", s->error);
	t->ops = upstream_ops_for(s);
	cr_assert_not_null(t->ops);
	const char *why = NULL;
	if (t->ops->caps & UPSTREAM_HTTP)
		cr_assert_not_null(t->http = httpc_new(&t->loop, &why), "%s",
				   why);
	struct upstream_spec spec = {
		.server = s,
		.token = token,
		.http = t->http,
		.key = "{\"name\":\"s\"}",
		.stop_grace_ms = 1000,
	};
	int rc = t->ops->open(&t->loop, &spec, &uc_cbs, t, &t->up);
	config_free(cfg);
	return rc;
}

static int uc_open(struct uc *t, const char *json)
{
	return uc_open_as(t, json, uc_token);
}

static void uc_finish(struct uc *t)
{
	if (t->up)
		t->ops->stop(t->up);
	uc_run_until(t, &t->closed, 1);
	if (t->http)
		httpc_free(t->http);
	uv_close((uv_handle_t *)&t->guard, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t->loop), 0, "handles left open");
}

static void uc_serves_and_goes(const char *json, const char *transport)
{
	struct uc t;
	cr_assert_eq(uc_open(&t, json), 0);
	/* Named (and journaled) before the engine could make it. */
	cr_assert_eq(t.container_live, 1);
	cr_assert_eq(strncmp(t.name, "mcpv-s-", 7), 0, "%s", t.name);
	cr_assert_eq(t.ops->send(t.up, UC_INIT, strlen(UC_INIT), 1), 0);
	uc_run_until(&t, &t.messages, 1);
	cr_assert_eq(t.faults, 0, "%s", t.fault_text);
	/* The first answer waited for the id: a server that runs is known
	 * by it (status, journal). */
	cr_assert_eq(t.id_at_first, 1);
	cr_assert_geq(strlen(t.id), 12);
	json_t *d = t.ops->describe(t.up, true);
	cr_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 transport);
	cr_assert_str_eq(json_string_value(json_object_get(d, "container")),
			 t.name);
	cr_assert_str_eq(json_string_value(json_object_get(d, "containerId")),
			 t.id);
	cr_assert_str_eq(json_string_value(json_object_get(d, "image")),
			 uc_image);
	json_decref(d);
	cr_assert_eq(uc_count(), 1);
	t.ops->stop(t.up);
	uc_run_until(&t, &t.closed, 1);
	/* Gone only once the engine said so, and really gone. */
	cr_assert_eq(t.container_gone, 1);
	cr_assert_eq(t.process_gone, t.process_live);
	cr_assert_eq(uc_count(), 0);
	uc_finish(&t);
}

Test(up_container, command_form_serves_and_is_removed)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char *json = xasprintf("{\"command\": \"podman\", \"args\": [\"run\", "
			       "\"-i\", \"%s\"]}",
			       uc_image);
	uc_serves_and_goes(json, "container");
	free(json);
}

Test(up_container, http_form_serves_on_a_loopback_port)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char *json = xasprintf(
		"{\"container\": {\"image\": \"%s\", \"port\": 8080, \"args\": "
		"[\"--http\", \"8080\", \"--listen-all\"], \"engine\": "
		"\"podman\"}, \"url\": \"http://127.0.0.1:{port}/mcp\"}",
		uc_image);
	uc_serves_and_goes(json, "container-http");
	free(json);
}

Test(up_container, a_run_with_a_url_serves_on_the_port_it_publishes)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char *json = xasprintf(
		"{\"command\": \"podman\", \"args\": [\"run\", \"--rm\", "
		"\"-p\", \"127.0.0.1:{port}:8080\", \"%s\", \"--http\", "
		"\"8080\", \"--listen-all\"], \"url\": "
		"\"http://127.0.0.1:{port}/mcp\"}",
		uc_image);
	uc_serves_and_goes(json, "container-http");
	free(json);
}

Test(up_container, the_engine_s_error_line_is_the_reason)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	struct uc t;
	cr_assert_eq(uc_open(&t, "{\"command\": \"podman\", \"args\": "
				 "[\"run\", \"-i\", \"--pull=never\", "
				 "\"localhost/mcpv-no-such-image:1\"]}"),
		     0);
	uc_run_until(&t, &t.faults, 1);
	cr_assert_eq(t.fault_kind, UPSTREAM_EXITED);
	cr_assert_not_null(strstr(t.fault_text, "podman could not run the "
						"container: "),
			   "%s", t.fault_text);
	cr_assert_not_null(strstr(t.fault_text, "image not known"), "%s",
			   t.fault_text);
	/* It never existed: the engine says so, and it is reported gone. */
	uc_run_until(&t, &t.closed, 1);
	cr_assert_eq(t.container_gone, 1);
	uc_finish(&t);
}

Test(up_container, a_missing_engine_fails_the_open)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	struct uc t;
	int rc = uc_open(&t, "{\"command\": \"/nonexistent/podman\", \"args\": "
			     "[\"run\", \"-i\", \"img\"]}");
	cr_assert_eq(rc, -ENOENT);
	cr_assert_null(t.up);
	/* Reported and forgotten at once: nothing was made. */
	cr_assert_eq(t.container_live, 1);
	cr_assert_eq(t.container_gone, 1);
	uv_close((uv_handle_t *)&t.guard, NULL);
	uv_run(&t.loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t.loop), 0);
}

/* An engine that runs containers but cannot stop or remove them: the
 * container is not reported gone (the journal keeps it). */
Test(up_container, not_confirmed_gone_stays_owned)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char dir[] = "/tmp/uc-engine-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *fake = xasprintf("%s/podman", dir);
	FILE *f = fopen(fake, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\ncase \"$1\" in stop|rm) echo \"Error: refused "
		   "by the test\" >&2; exit 125;; esac\nexec podman \"$@\"\n");
	fclose(f);
	chmod(fake, 0755);
	char *json = xasprintf("{\"command\": \"%s\", \"args\": [\"run\", "
			       "\"-i\", \"%s\"]}",
			       fake, uc_image);
	struct uc t;
	cr_assert_eq(uc_open(&t, json), 0);
	cr_assert_eq(t.ops->send(t.up, UC_INIT, strlen(UC_INIT), 1), 0);
	uc_run_until(&t, &t.messages, 1);
	t.ops->stop(t.up);
	uc_run_until(&t, &t.closed, 1);
	cr_assert_eq(t.container_gone, 0);
	cr_assert_eq(t.container_kept, 1, "given up on, for the journal");
	uc_finish(&t);
	free(json);
	unlink(fake);
	free(fake);
	rmdir(dir);
}

static int uc_port;

static int uc_port_source(void *arg, int *port)
{
	*port = uc_port;
	return 0;
}

/* A free loopback port, by the kernel's choice. */
static int uc_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* Another program takes the port between our reservation and the
 * engine's bind: the engine's "address already in use" is a lost port
 * (start again on a new one), not a failed start; the squatter's
 * listener is never taken for the server. */
Test(up_container, a_squatted_port_is_a_lost_port)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	uc_port = uc_free_port();
	ports_set_source(ports_default(), uc_port_source, NULL);
	char *json = xasprintf(
		"{\"container\": {\"image\": \"%s\", \"port\": 8080, \"args\": "
		"[\"--http\", \"8080\", \"--listen-all\"], \"engine\": "
		"\"podman\"}, \"url\": \"http://127.0.0.1:{port}/mcp\"}",
		uc_image);
	struct uc t;
	cr_assert_eq(uc_open(&t, json), 0);
	int sq = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(sq, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)uc_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(sq, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(sq, 8), 0);
	cr_assert_eq(t.ops->send(t.up, UC_INIT, strlen(UC_INIT), 1), 0);
	uc_run_until(&t, &t.faults, 1);
	cr_assert_eq(t.fault_kind, UPSTREAM_LOST_PORT, "%d: %s", t.fault_kind,
		     t.fault_text);
	cr_assert_eq(t.messages, 0);
	uc_run_until(&t, &t.closed, 1);
	cr_assert_eq(t.container_gone, 1);
	cr_assert_eq(uc_count(), 0);
	close(sq);
	ports_set_source(ports_default(), NULL, NULL);
	uc_finish(&t);
	free(json);
}

/* The docker CLI with no daemon behind it: its own line is the reason,
 * not the "--help" hint it prints after it. */
Test(up_container, a_daemon_that_is_not_running_is_the_reason)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	if (system("docker --version 2>/dev/null | grep -qi '^docker "
		   "version'") != 0)
		cr_skip_test("no docker CLI of Docker's own");
	if (access("/var/run/docker.sock", F_OK) == 0 || getenv("DOCKER_HOST"))
		cr_skip_test("a Docker daemon may be running here");
	struct uc t;
	cr_assert_eq(uc_open(&t, "{\"command\": \"docker\", \"args\": "
				 "[\"run\", \"-i\", \"img\"]}"),
		     0);
	uc_run_until(&t, &t.faults, 1);
	cr_assert_not_null(strstr(t.fault_text, "docker could not run the "
						"container: "),
			   "%s", t.fault_text);
	cr_assert_not_null(strstr(t.fault_text, "Cannot connect to the Docker "
						"daemon"),
			   "%s", t.fault_text);
	/* The daemon was never reached: nothing was made, nothing is left
	 * to the journal. */
	uc_run_until(&t, &t.closed, 1);
	cr_assert_eq(t.container_gone, 1);
	cr_assert_eq(t.container_kept, 0);
	uc_finish(&t);
}

/* ---- through the pool: what the runtime does ---- */

/* Wakes the loop now and then, so a wait checks its condition. */
static void uc_tick_cb(uv_timer_t *t)
{
}

static void uc_ready_cb(void *arg, struct instance *inst, int err)
{
	*(int *)arg = err == 0 ? 1 : -1;
}

/* Runs server (a container server's JSON, %s: its image) in a pool with a
 * journal until the pool let it go, and returns how many entries the
 * journal still holds. The pool's entry must end either way. A server name
 * of this test's own, to clean up by. */
static size_t uc_through_pool(const char *server_fmt, bool wait_id)
{
	char dir[] = "/tmp/uc-pool-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct journal *j = NULL;
	cr_assert_eq(journal_open(dir, &j), 0);
	char server[16];
	snprintf(server, sizeof server, "uc%.8s", uc_token);
	char *entry = xasprintf(server_fmt, uc_image);
	char *text = xasprintf("{\"mcpServers\": {\"%s\": %s}}", server, entry);
	free(entry);
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	free(text);
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct instance_cbs cbs = {0};
	struct pool *pool = pool_new(&loop, &cbs, NULL, j, NULL);
	struct pool_scope_ctx sc = {"s1", NULL, "/tmp", NULL};
	char *key = pool_instance_key(&cfg->servers[0], &sc, NULL);
	struct instance *inst =
		pool_instance_for(pool, &cfg->servers[0], &sc, key);
	free(key);
	pool_acquire(pool, inst, "s1");
	int ready = 0;
	instance_ensure(inst, uc_ready_cb, &ready);
	while (ready == 0)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_eq(ready, 1, "%s", instance_last_error(inst));
	uv_timer_t tick;
	uv_timer_init(&loop, &tick);
	uv_timer_start(&tick, uc_tick_cb, 50, 50);
	if (wait_id) {
		/* Until its id is in the journal: the second report. */
		char *id_cmd =
			xasprintf("grep -q '\"id\"' %s/" JOURNAL_FILE, dir);
		for (int i = 0; i < 400 && system(id_cmd) != 0; i++)
			uv_run(&loop, UV_RUN_ONCE);
		cr_assert_eq(system(id_cmd), 0, "the id is journaled");
		free(id_cmd);
	}
	pool_session_gone(pool, "s1");
	uv_close((uv_handle_t *)&tick, NULL);
	pool_free(pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "the pool's entry ended");
	size_t left = journal_count(j);
	journal_free(j);
	config_free(cfg);
	char *rm = xasprintf("podman ps -aq --filter label=mcpvisor.server=%s "
			     "| xargs -r -n1 podman rm -f >/dev/null 2>&1; "
			     "rm -rf %s",
			     server, dir);
	cr_assert_eq(system(rm), 0);
	free(rm);
	return left;
}

/* The container is reported twice while it lives (by name, then with its
 * id) and gone once: the pool's entry still ends, and the journal holds
 * nothing after. */
Test(up_container, the_pool_entry_ends_after_the_container)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	size_t left = uc_through_pool(
		"{\"container\": {\"image\": \"%s\", \"port\": 8080, \"args\": "
		"[\"--http\", \"8080\", \"--listen-all\"], \"engine\": "
		"\"podman\"}, \"url\": \"http://127.0.0.1:{port}/mcp\", "
		"\"scope\": \"session\"}",
		true);
	cr_assert_eq(left, 0);
}

/* A container its engine cannot remove: the pool's entry ends all the
 * same (nothing more will come of it), and the journal keeps it for the
 * drain's message and the next start. */
Test(up_container, a_container_given_up_on_stays_in_the_journal)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char dir[] = "/tmp/uc-engine-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *fake = xasprintf("%s/podman", dir);
	FILE *f = fopen(fake, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\ncase \"$1\" in stop|rm) echo \"Error: refused "
		   "by the test\" >&2; exit 125;; esac\nexec podman \"$@\"\n");
	fclose(f);
	chmod(fake, 0755);
	char *fmt = xasprintf("{\"command\": \"%s\", \"args\": [\"run\", "
			      "\"-i\", \"%%s\"], \"scope\": \"session\"}",
			      fake);
	size_t left = uc_through_pool(fmt, false);
	cr_assert_eq(left, 1);
	free(fmt);
	unlink(fake);
	free(fake);
	rmdir(dir);
}

/* A --name of the user's, taken by another instance's container: the
 * engine refuses the second run, and its stop removes nothing (the
 * container of that name carries another owner token). */
Test(up_container, a_user_s_name_in_use_is_never_removed_by_another)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char *json =
		xasprintf("{\"command\": \"podman\", \"args\": [\"run\", "
			  "\"-i\", \"--rm\", \"--name\", \"uct%.8s\", \"%s\"]}",
			  uc_token, uc_image);
	struct uc a, b;
	cr_assert_eq(uc_open(&a, json), 0);
	cr_assert_eq(a.ops->send(a.up, UC_INIT, strlen(UC_INIT), 1), 0);
	uc_run_until(&a, &a.messages, 1);
	char other[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(other);
	cr_assert_eq(uc_open_as(&b, json, other), 0);
	uc_run_until(&b, &b.faults, 1);
	cr_assert_not_null(strstr(b.fault_text, "already in use"), "%s",
			   b.fault_text);
	uc_run_until(&b, &b.closed, 1);
	cr_assert_eq(b.container_gone, 1, "its own was never made");
	uc_finish(&b);
	cr_assert_eq(uc_count(), 1, "the first one's container stays");
	uc_finish(&a);
	cr_assert_eq(a.container_gone, 1);
	cr_assert_eq(uc_count(), 0);
	free(json);
}

/* The HTTP form whose engine is gone by the time it stops (uninstalled,
 * PATH changed): the container is given up on (kept for the journal) and
 * the CLI stopped, all from the loop: nothing is reported from inside the
 * stop, nor is the local upstream told its driver stopped from inside the
 * driver's own stop hook (up_cmd.h). */
Test(up_container, an_engine_gone_at_stop_is_given_up_from_the_loop)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char dir[] = "/tmp/uc-engine-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *fake = xasprintf("%s/docker", dir);
	FILE *f = fopen(fake, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\ncase \"$1\" in run) exec sleep 30;; esac\n"
		   "exit 0\n");
	fclose(f);
	chmod(fake, 0755);
	char *json = xasprintf(
		"{\"container\": {\"image\": \"img\", \"port\": 8080, "
		"\"engine\": \"%s\"}, \"url\": "
		"\"http://127.0.0.1:{port}/mcp\"}",
		fake);
	struct uc t;
	cr_assert_eq(uc_open(&t, json), 0);
	uc_run_until(&t, &t.process_live, 1);
	unlink(fake);
	t.in_stop = true;
	t.ops->stop(t.up);
	t.in_stop = false;
	cr_assert_eq(t.inside_stop, 0, "a callback came from inside stop");
	uc_run_until(&t, &t.closed, 1);
	cr_assert_eq(t.container_kept, 1, "given up on, for the journal");
	cr_assert_eq(t.container_gone, 0);
	cr_assert_eq(t.process_gone, t.process_live, "the CLI was stopped");
	uc_finish(&t);
	free(json);
	free(fake);
	rmdir(dir);
}

/* ---- a proxy on the port, no server behind it ---- */

static int uc_accepted;

static void uc_free_conn_cb(uv_handle_t *h)
{
	free(h);
}

/* What docker-proxy does while nothing listens in the container: accept,
 * find nobody behind, close. */
static void uc_proxy_cb(uv_stream_t *srv, int status)
{
	uv_tcp_t *c = malloc(sizeof *c);
	uv_tcp_init(srv->loop, c);
	if (uv_accept(srv, (uv_stream_t *)c) == 0)
		uc_accepted++;
	uv_close((uv_handle_t *)c, uc_free_conn_cb);
}

static int uc_waited;

static void uc_wait_cb(uv_timer_t *t)
{
	uc_waited = 1;
}

/* The HTTP form with a --name another container holds: the engine's
 * "name ... is already in use" is a failed start with that line, not a
 * lost port (which would start it again on a new port, three times). */
Test(up_container, a_name_in_use_is_a_start_failure_not_a_lost_port)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	char *json = xasprintf(
		"{\"command\": \"podman\", \"args\": [\"run\", \"--rm\", "
		"\"--name\", \"ucn%.8s\", \"-p\", \"127.0.0.1:{port}:8080\", "
		"\"%s\", \"--http\", \"8080\", \"--listen-all\"], \"url\": "
		"\"http://127.0.0.1:{port}/mcp\"}",
		uc_token, uc_image);
	struct uc a, b;
	cr_assert_eq(uc_open(&a, json), 0);
	cr_assert_eq(a.ops->send(a.up, UC_INIT, strlen(UC_INIT), 1), 0);
	uc_run_until(&a, &a.messages, 1);
	char other[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(other);
	cr_assert_eq(uc_open_as(&b, json, other), 0);
	cr_assert_eq(b.ops->send(b.up, UC_INIT, strlen(UC_INIT), 1), 0);
	uc_run_until(&b, &b.faults, 1);
	cr_assert_eq(b.fault_kind, UPSTREAM_EXITED, "%d: %s", b.fault_kind,
		     b.fault_text);
	cr_assert_not_null(strstr(b.fault_text, "podman could not run the "
						"container: "),
			   "%s", b.fault_text);
	cr_assert_not_null(strstr(b.fault_text, "already in use"), "%s",
			   b.fault_text);
	uc_run_until(&b, &b.closed, 1);
	uc_finish(&b);
	cr_assert_eq(uc_count(), 1, "the first one's container stays");
	uc_finish(&a);
	cr_assert_eq(uc_count(), 0);
	free(json);
}

Test(up_container, a_proxy_with_no_server_behind_is_not_ready)
{
	if (!uc_ready())
		cr_skip_test("no podman");
	uc_port = uc_free_port();
	ports_set_source(ports_default(), uc_port_source, NULL);
	char dir[] = "/tmp/uc-engine-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *fake = xasprintf("%s/docker", dir);
	FILE *f = fopen(fake, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"#!/bin/sh\ncase \"$1\" in run) exec sleep 30;; port) echo "
		"127.0.0.1:%d;; esac\nexit 0\n",
		uc_port);
	fclose(f);
	chmod(fake, 0755);
	char *json = xasprintf(
		"{\"container\": {\"image\": \"img\", \"port\": 8080, "
		"\"engine\": \"%s\"}, \"url\": "
		"\"http://127.0.0.1:{port}/mcp\"}",
		fake);
	struct uc t;
	cr_assert_eq(uc_open(&t, json), 0);
	uv_tcp_t proxy;
	uv_tcp_init(&t.loop, &proxy);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", uc_port, &a);
	cr_assert_eq(uv_tcp_bind(&proxy, (struct sockaddr *)&a, 0), 0);
	cr_assert_eq(uv_listen((uv_stream_t *)&proxy, 8, uc_proxy_cb), 0);
	cr_assert_eq(t.ops->send(t.up, UC_INIT, strlen(UC_INIT), 1), 0);
	uv_timer_t wait;
	uv_timer_init(&t.loop, &wait);
	uc_waited = 0;
	uv_timer_start(&wait, uc_wait_cb, 1500, 0);
	uc_run_until(&t, &uc_waited, 1);
	cr_assert_geq(uc_accepted, 2, "it was probed, more than once");
	cr_assert_eq(t.faults, 0, "no session was opened: %s", t.fault_text);
	json_t *d = t.ops->describe(t.up, false);
	cr_assert(json_is_false(json_object_get(d, "listening")));
	json_decref(d);
	uv_close((uv_handle_t *)&wait, NULL);
	uv_close((uv_handle_t *)&proxy, NULL);
	ports_set_source(ports_default(), NULL, NULL);
	uc_finish(&t);
	free(json);
	unlink(fake);
	free(fake);
	rmdir(dir);
}
