/*
 * The pool's idle timer against leases, on a fake clock: the timer's
 * decision reads the replaceable clock, so a lease taken just as the timer
 * fires keeps the instance, and a release starts the idle time again.
 * Real loop, real fixture server (build/san/demo-server).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include <ftw.h>

#include "config/config.h"
#include "journal/journal.h"
#include "pool/pool.h"
#include "toolcache/toolcache.h"
#include "util/clock.h"
#include "util/keymap.h"

#define POOL_TEST_IDLE_MS 100
#define POOL_TEST_BOUND_MS 8000

static uint64_t fake_now;

static uint64_t pool_test_clock(void)
{
	return fake_now;
}

static uv_loop_t loop;
static struct journal *pool_test_journal;
static struct config *cfg;
static struct pool *pool;
static struct pool_scope_ctx sc = {"s1", NULL, "/tmp", NULL};

static void pool_test_setup(void)
{
	/* The tests run from the repository's top. */
	const char *bin = getenv("DEMO_SERVER_BIN");
	char cwd[4096], path[4200];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(path, sizeof path, "%s/build/san/demo-server", cwd);
	char *text;
	/* One server per scope: demo (app), solo (session), room (space);
	 * and locked (app), which refuses our credentials. */
	const char *b = bin ? bin : path;
	if (asprintf(&text,
		     "{\"idleTimeout\":%d,\"mcpServers\":{"
		     "\"demo\":{\"command\":\"%s\",\"scope\":\"app\"},"
		     "\"solo\":{\"command\":\"%s\",\"scope\":\"session\"},"
		     "\"room\":{\"command\":\"%s\",\"scope\":\"space\"},"
		     "\"locked\":{\"command\":\"%s\",\"scope\":\"app\","
		     "\"args\":[\"--auth-fail\"]}"
		     "}}",
		     POOL_TEST_IDLE_MS, b, b, b, b) < 0)
		abort();
	cfg = config_parse(text, strlen(text), "/tmp/pool-test.json");
	free(text);
	cr_assert_null(cfg->fatal);
	for (size_t i = 0; i < cfg->nservers; i++)
		cr_assert_null(cfg->servers[i].error, "%s",
			       cfg->servers[i].error);
	fake_now = 1000000;
	clock_set_source(pool_test_clock);
	uv_loop_init(&loop);
	struct instance_cbs cbs = {0};
	pool = pool_new(&loop, &cbs, NULL, NULL, NULL);
	pool_set_idle_ms(pool, POOL_TEST_IDLE_MS);
}

static void pool_test_teardown(void)
{
	pool_free(pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "every handle closed");
	config_free(cfg);
	clock_set_source(NULL);
}

static void pool_test_ready_cb(void *arg, struct instance *inst, int err)
{
	*(int *)arg = err == 0 ? 1 : -1;
}

/* Wakes the loop now and then, so a wait checks its condition. */
static void pool_test_tick_cb(uv_timer_t *t)
{
	(void)t;
}

/* Runs the loop until cond holds or POOL_TEST_BOUND_MS of real time. */
static bool pool_test_run_until(bool (*cond)(struct instance *),
				struct instance *inst)
{
	uv_update_time(&loop);
	uint64_t until = uv_now(&loop) + POOL_TEST_BOUND_MS;
	uv_timer_t guard;
	uv_timer_init(&loop, &guard);
	uv_timer_start(&guard, pool_test_tick_cb, 10, 10);
	while (!cond(inst) && uv_now(&loop) < until)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&guard, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	return cond(inst);
}

static bool pool_test_is_stopped(struct instance *inst)
{
	return instance_state(inst) == INSTANCE_STOPPED;
}

static int pool_test_fired;
static bool pool_test_timer_fired(struct instance *inst)
{
	return pool_test_fired > 0;
}

static void pool_test_count_cb(uv_timer_t *t)
{
	pool_test_fired++;
}

/* Lets more than the idle time pass in real time (so the pool's timer
 * fires), while the fake clock says what the test wants. */
static void pool_test_let_timer_fire(struct instance *inst)
{
	uv_timer_t t;
	uv_timer_init(&loop, &t);
	pool_test_fired = 0;
	uv_timer_start(&t, pool_test_count_cb, POOL_TEST_IDLE_MS * 3, 0);
	cr_assert(pool_test_run_until(pool_test_timer_fired, inst));
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
}

static struct instance *pool_test_start(void)
{
	char *key = pool_instance_key(&cfg->servers[0], &sc, NULL);
	struct instance *inst =
		pool_instance_for(pool, &cfg->servers[0], &sc, key);
	free(key);
	int ready = 0;
	pool_acquire(pool, inst, "s1");
	instance_ensure(inst, pool_test_ready_cb, &ready);
	while (ready == 0)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_eq(ready, 1, "the fixture server starts: %s",
		     instance_last_error(inst) ? instance_last_error(inst)
					       : "");
	return inst;
}

TestSuite(pool, .init = pool_test_setup, .fini = pool_test_teardown,
	  .timeout = 30);

Test(pool, idles_out_after_the_last_release)
{
	struct instance *inst = pool_test_start();
	pid_t pid = instance_pid(inst);
	cr_assert_gt(pid, 0);
	pool_release(pool, inst, "s1");
	/* The timer fires, and the clock says the idle time has passed. */
	fake_now += POOL_TEST_IDLE_MS;
	cr_assert(pool_test_run_until(pool_test_is_stopped, inst),
		  "closed after the idle time: %s",
		  instance_state_name(instance_state(inst)));
	cr_assert(kill(pid, 0) < 0, "its process is gone");
	/* The lists stay offered after an idle close. */
	cr_assert(instance_lists_known(inst));
}

Test(pool, a_lease_taken_as_the_timer_fires_keeps_the_instance)
{
	struct instance *inst = pool_test_start();
	pool_release(pool, inst, "s1");
	/* The deadline comes, and in the same turn a request takes a lease
	 * before the timer's callback runs. */
	fake_now += POOL_TEST_IDLE_MS;
	pool_acquire(pool, inst, "s2");
	pool_test_let_timer_fire(inst);
	cr_assert_eq(instance_state(inst), INSTANCE_READY,
		     "never closed under a request");
	/* The request ends later: the idle time starts from there. */
	fake_now += 50;
	pool_release(pool, inst, "s2");
	fake_now += POOL_TEST_IDLE_MS - 1;
	pool_test_let_timer_fire(inst);
	cr_assert_eq(instance_state(inst), INSTANCE_READY,
		     "one ms short of the idle time");
	fake_now += 1;
	cr_assert(pool_test_run_until(pool_test_is_stopped, inst));
}

static int pool_test_answers;
static void pool_test_answer_cb(void *arg, json_t *resp, bool sent)
{
	cr_assert_null(json_object_get(resp, "error"));
	pool_test_answers++;
}

static bool pool_test_answered(struct instance *inst)
{
	return pool_test_answers > 0;
}

/* A client of inst follows demo://readme (the server answered). */
static void pool_test_follow(struct instance *inst)
{
	pool_test_answers = 0;
	cr_assert_gt(
		instance_request(inst, "resources/subscribe",
				 json_pack("{s:s}", "uri", "demo://readme"),
				 pool_test_answer_cb, NULL),
		0);
	cr_assert(pool_test_run_until(pool_test_answered, inst));
}

/* A resource its sessions follow keeps coming (updates): the instance is
 * not closed for idleness while a session follows one, and is once none
 * does. */
Test(pool, a_followed_instance_is_not_closed_for_idleness)
{
	struct instance *inst = pool_test_start();
	pool_test_follow(inst);
	pool_release(pool, inst, "s1");
	for (int i = 0; i < 3; i++) {
		fake_now += POOL_TEST_IDLE_MS;
		pool_test_let_timer_fire(inst);
		cr_assert_eq(instance_state(inst), INSTANCE_READY,
			     "followed, so in use (%d idle times)", i + 1);
	}
	/* Its follower leaves: an idle time after the timer last found it
	 * followed, it closes. */
	instance_subs_leave(inst, "demo://readme", 1);
	fake_now += POOL_TEST_IDLE_MS;
	cr_assert(pool_test_run_until(pool_test_is_stopped, inst));
}

static bool pool_test_is_failed(struct instance *inst)
{
	return instance_state(inst) == INSTANCE_FAILED;
}

static bool pool_test_is_ready(struct instance *inst)
{
	return instance_state(inst) == INSTANCE_READY;
}

/* Nothing else would ask for a server whose resources sessions follow:
 * after a crash it starts again once its backoff is over, and is sent
 * the subscriptions again (instance/subs.c). */
Test(pool, a_followed_instance_that_crashed_starts_again)
{
	struct instance *inst = pool_test_start();
	pool_test_follow(inst);
	pool_release(pool, inst, "s1");
	pid_t pid = instance_pid(inst);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert(pool_test_run_until(pool_test_is_failed, inst));
	fake_now += 600000; /* past any backoff */
	cr_assert(pool_test_run_until(pool_test_is_ready, inst),
		  "started again: %s",
		  instance_state_name(instance_state(inst)));
	cr_assert_eq(instance_starts(inst), 2);
	cr_assert_neq(instance_pid(inst), pid);
	cr_assert_eq(instance_subs_followed(inst), 1);
}

/* One that nobody follows waits for its next use, as before. */
Test(pool, an_instance_nobody_follows_stays_down_after_a_crash)
{
	struct instance *inst = pool_test_start();
	pool_release(pool, inst, "s1");
	cr_assert_eq(kill(instance_pid(inst), SIGKILL), 0);
	cr_assert(pool_test_run_until(pool_test_is_failed, inst));
	fake_now += 600000;
	/* Longer than the least wait of a revive. */
	for (int i = 0; i < 5; i++)
		pool_test_let_timer_fire(inst);
	cr_assert_eq(instance_starts(inst), 1);
}

Test(pool, the_timer_is_early_by_the_clock_and_waits_again)
{
	struct instance *inst = pool_test_start();
	pool_release(pool, inst, "s1");
	/* The real timer fires but the clock has not moved: not yet. */
	pool_test_let_timer_fire(inst);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	json_t *d = pool_describe(pool, inst);
	cr_assert_eq(json_integer_value(json_object_get(d, "holders")), 0);
	cr_assert_eq(json_integer_value(json_object_get(d, "idleClosesInMs")),
		     POOL_TEST_IDLE_MS);
	json_decref(d);
	fake_now += POOL_TEST_IDLE_MS;
	cr_assert(pool_test_run_until(pool_test_is_stopped, inst));
}

/* Starts server srv as seen from ctx, for session ctx->session_id, and
 * ends that request (the session still uses it). */
static struct instance *pool_test_start_as(size_t srv,
					   const struct pool_scope_ctx *ctx)
{
	char *key = pool_instance_key(&cfg->servers[srv], ctx, NULL);
	struct instance *inst =
		pool_instance_for(pool, &cfg->servers[srv], ctx, key);
	free(key);
	int ready = 0;
	pool_acquire(pool, inst, ctx->session_id);
	instance_ensure(inst, pool_test_ready_cb, &ready);
	while (ready == 0)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_eq(ready, 1, "%s starts", cfg->servers[srv].name);
	pool_release(pool, inst, ctx->session_id);
	return inst;
}

static bool pool_test_found(size_t srv, const struct pool_scope_ctx *ctx)
{
	char *key = pool_instance_key(&cfg->servers[srv], ctx, NULL);
	bool found = pool_instance_find(pool, key) != NULL;
	free(key);
	return found;
}

static const char *pool_test_key_of;
static bool pool_test_forgotten(struct instance *inst)
{
	(void)inst;
	return pool_instance_find(pool, pool_test_key_of) == NULL;
}

/* The lifetime rules when the last session of an instance ends (seed
 * 003): a shared instance (app, space) stays warm for the idle time, so
 * the next session (each `mcpvisor call` is one) finds the same process;
 * one that only its session could use closes at once. */
static const struct {
	const char *what;
	size_t srv;
	const char *space;
	bool kept;
} pool_test_last_session[] = {
	{"app", 0, NULL, true},
	{"space with a folder", 2, "/tmp", true},
	{"space without a folder (private)", 2, NULL, false},
	{"session", 1, NULL, false},
};

Test(pool, the_last_session_ending_keeps_shared_instances_warm)
{
	for (size_t t = 0; t < sizeof pool_test_last_session /
				       sizeof pool_test_last_session[0];
	     t++) {
		size_t srv = pool_test_last_session[t].srv;
		const char *what = pool_test_last_session[t].what;
		struct pool_scope_ctx a = {
			"sa", pool_test_last_session[t].space, "/tmp", NULL};
		struct pool_scope_ctx b = {
			"sb", pool_test_last_session[t].space, "/tmp", NULL};
		struct instance *inst = pool_test_start_as(srv, &a);
		pid_t pid = instance_pid(inst);
		pool_session_gone(pool, "sa");
		uv_run(&loop, UV_RUN_NOWAIT);
		cr_assert_eq(pool_test_found(srv, &a),
			     pool_test_last_session[t].kept, "%s: %s", what,
			     pool_test_last_session[t].kept ? "kept"
							    : "closed");
		if (!pool_test_last_session[t].kept) {
			cr_assert_not(pool_test_found(srv, &b));
			while (kill(pid, 0) == 0)
				uv_run(&loop, UV_RUN_ONCE);
			continue;
		}
		/* The next session finds the same process. */
		struct instance *again = pool_test_start_as(srv, &b);
		cr_assert_eq(again, inst, "%s: the same instance", what);
		cr_assert_eq(instance_pid(again), pid, "%s: the same pid",
			     what);
		pool_session_gone(pool, "sb");
		/* Short of the idle time it stays; then it goes, and is
		 * forgotten, since no session uses it. */
		fake_now += POOL_TEST_IDLE_MS - 1;
		pool_test_let_timer_fire(inst);
		cr_assert(pool_test_found(srv, &a), "%s: not yet", what);
		fake_now += 1;
		char *key = pool_instance_key(&cfg->servers[srv], &a, NULL);
		pool_test_key_of = key;
		cr_assert(pool_test_run_until(pool_test_forgotten, NULL),
			  "%s: closed after the idle time", what);
		free(key);
		while (kill(pid, 0) == 0)
			uv_run(&loop, UV_RUN_ONCE);
	}
}

static bool pool_test_reload_wanted_none(void *arg, const char *name,
					 const char *ident)
{
	(void)arg;
	(void)name;
	(void)ident;
	return false;
}

Test(pool, a_reload_closes_a_kept_instance_at_once)
{
	struct instance *inst = pool_test_start_as(0, &sc);
	pid_t pid = instance_pid(inst);
	pool_session_gone(pool, "s1");
	cr_assert(pool_test_found(0, &sc), "kept warm");
	cr_assert_eq(pool_reload(pool, pool_test_reload_wanted_none, NULL), 1);
	cr_assert_not(pool_test_found(0, &sc), "closed at once");
	while (kill(pid, 0) == 0)
		uv_run(&loop, UV_RUN_ONCE);
}

Test(pool, a_session_gone_closes_its_own_instance_at_once)
{
	struct pool_scope_ctx own = {"s1", NULL, "/tmp", NULL};
	char *key = pool_instance_key(&cfg->servers[1], &own, NULL);
	struct instance *inst =
		pool_instance_for(pool, &cfg->servers[1], &own, key);
	int ready = 0;
	pool_acquire(pool, inst, "s1");
	instance_ensure(inst, pool_test_ready_cb, &ready);
	while (ready == 0)
		uv_run(&loop, UV_RUN_ONCE);
	pid_t pid = instance_pid(inst);
	/* Its request is cut short with the session: one step. */
	pool_session_gone(pool, "s1");
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(pool_requests(pool), 0, "no stale lease");
	cr_assert_null(pool_instance_find(pool, key), "forgotten at once");
	free(key);
	/* The process goes with the stop ladder, in real time. */
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert(kill(pid, 0) < 0, "its process is gone");
}

static void pool_test_collect_cb(void *arg, const char *session_id)
{
	json_array_append_new(arg, json_string(session_id));
}

Test(pool, members_and_holders_of_an_instance)
{
	struct instance *inst = pool_test_start();
	struct pool_scope_ctx other = {"s2", NULL, "/tmp", NULL};
	char *key = pool_instance_key(&cfg->servers[0], &other, NULL);
	cr_assert_eq(pool_instance_for(pool, &cfg->servers[0], &other, key),
		     inst, "app scope: one instance");
	free(key);
	json_t *all = json_array(), *holders = json_array();
	pool_foreach_member(pool, inst, false, pool_test_collect_cb, all);
	pool_foreach_member(pool, inst, true, pool_test_collect_cb, holders);
	cr_assert_eq(json_array_size(all), 2);
	cr_assert_eq(json_array_size(holders), 1);
	cr_assert_str_eq(json_string_value(json_array_get(holders, 0)), "s1");
	json_decref(all);
	json_decref(holders);
	pool_release(pool, inst, "s1");
}

/* ---- lists from the tool cache ---- */

static char pool_test_dir[64];

static int pool_test_rm_cb(const char *path, const struct stat *st, int flag,
			   struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The pool over a fresh tool cache. */
static struct toolcache *pool_test_with_cache(void)
{
	strcpy(pool_test_dir, "/tmp/mcpv-pool-XXXXXX");
	cr_assert_not_null(mkdtemp(pool_test_dir));
	struct toolcache *tc;
	cr_assert_eq(toolcache_open(pool_test_dir, &tc), 0);
	pool_free(pool);
	struct instance_cbs cbs = {0};
	pool = pool_new(&loop, &cbs, NULL, NULL, tc);
	pool_set_idle_ms(pool, POOL_TEST_IDLE_MS);
	return tc;
}

static void pool_test_cache_done(struct toolcache *tc)
{
	pool_free(pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	toolcache_free(tc);
	nftw(pool_test_dir, pool_test_rm_cb, 8, FTW_DEPTH | FTW_PHYS);
	struct instance_cbs cbs = {0};
	pool = pool_new(&loop, &cbs, NULL, NULL, NULL);
}

#define POOL_TEST_PLAIN "{\"roots\":{\"listChanged\":true}}"
#define POOL_TEST_RICH "{\"roots\":{\"listChanged\":true},\"sampling\":{}}"

Test(pool, cached_lists_are_kept_per_capability_set)
{
	struct toolcache *tc = pool_test_with_cache();
	/* A client that can answer sampling fills the cache of solo. */
	struct pool_scope_ctx rich = {"r1", NULL, "/tmp", POOL_TEST_RICH};
	struct instance *inst = pool_test_start_as(1, &rich);
	cr_assert_not_null(instance_list(inst, INSTANCE_TOOLS));
	pool_session_gone(pool, "r1");
	static const struct {
		const char *id, *caps;
		bool offered;
	} cases[] = {
		{"p1", POOL_TEST_PLAIN, false},
		{"p2", NULL, false},
		{"r2", POOL_TEST_RICH, true},
	};
	for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
		struct pool_scope_ctx c = {cases[t].id, NULL, "/tmp",
					   cases[t].caps};
		char *key = pool_instance_key(&cfg->servers[1], &c, NULL);
		json_t *known =
			pool_lists_known(pool, &cfg->servers[1], &c, key);
		cr_assert_eq(known != NULL, cases[t].offered,
			     "%s: the rich client's list %s", cases[t].id,
			     cases[t].offered ? "offered" : "not offered");
		free(key);
	}
	pool_test_cache_done(tc);
}

Test(pool, cached_lists_make_no_instance_per_session)
{
	struct toolcache *tc = pool_test_with_cache();
	struct pool_scope_ctx first = {"f1", NULL, "/tmp", NULL};
	pool_test_start_as(1, &first);
	pool_session_gone(pool, "f1");
	char id[16];
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof id, "g%d", i);
		struct pool_scope_ctx c = {id, NULL, "/tmp", NULL};
		char *key = pool_instance_key(&cfg->servers[1], &c, NULL);
		cr_assert_not_null(
			pool_lists_known(pool, &cfg->servers[1], &c, key));
		json_t *tools = pool_lists_offered(pool, key, INSTANCE_TOOLS);
		cr_assert(json_array_size(tools) > 0);
		cr_assert_null(pool_instance_find(pool, key),
			       "no instance made to list");
		free(key);
		if (i % 2)
			pool_session_gone(pool, id);
	}
	/* A call makes the instance, seeded with the same lists. */
	struct pool_scope_ctx c = {"g0", NULL, "/tmp", NULL};
	char *key = pool_instance_key(&cfg->servers[1], &c, NULL);
	struct instance *inst =
		pool_instance_for(pool, &cfg->servers[1], &c, key);
	cr_assert(instance_lists_known(inst));
	cr_assert_eq(instance_state(inst), INSTANCE_STOPPED);
	free(key);
	pool_test_cache_done(tc);
}

/* ---- the map behind every lookup ---- */

Test(pool, keymap_puts_finds_and_deletes)
{
	struct keymap m;
	keymap_init(&m);
	enum { N = 500 };
	static char keys[N][32];
	for (int i = 0; i < N; i++) {
		/* Long shared prefixes, as canonical keys have. */
		snprintf(keys[i], sizeof keys[i], "{\"connection\":%d}", i);
		keymap_put(&m, keys[i], keys[i]);
	}
	cr_assert_eq(keymap_count(&m), N);
	static const struct {
		int from, step;
	} dels[] = {{0, 3}, {1, 7}, {2, 2}};
	bool gone[N] = {false};
	for (size_t d = 0; d < sizeof dels / sizeof dels[0]; d++) {
		for (int i = dels[d].from; i < N; i += dels[d].step) {
			void *v = keymap_del(&m, keys[i]);
			cr_assert_eq(v, gone[i] ? NULL : (void *)keys[i]);
			gone[i] = true;
		}
		for (int i = 0; i < N; i++)
			cr_assert_eq(keymap_get(&m, keys[i]),
				     gone[i] ? NULL : (void *)keys[i],
				     "key %d after deletions", i);
	}
	cr_assert_null(keymap_get(&m, "absent"));
	keymap_free(&m);
}

/* Whether libcurl is mapped into this process. */
static bool pool_test_curl_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, "libcurl") != NULL;
	fclose(f);
	return found;
}

/* The HTTP client is made on first use, once: a pool of stdio servers
 * never loads libcurl; it is freed with the pool (the teardown's loop
 * close finds every handle closed). */
Test(pool, the_http_client_is_made_on_first_use)
{
	struct instance *inst = pool_test_start();
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	cr_assert(!pool_test_curl_mapped(), "a stdio server loaded libcurl");
	struct httpc *c = pool_http(pool);
	cr_assert_not_null(c);
	cr_assert_eq(pool_http(pool), c, "one client per pool");
	cr_assert(pool_test_curl_mapped());
}

static bool pool_test_none_wanted(void *arg, const char *name,
				  const char *ident)
{
	(void)arg;
	(void)ident;
	return strcmp(name, "locked") != 0;
}

static bool pool_test_journal_empty(struct instance *inst)
{
	(void)inst;
	return pool_test_journal != NULL &&
	       journal_count(pool_test_journal) == 0;
}

/* What an instance owns is journaled as a typed process entry while it
 * runs, and forgotten once it is gone. */
Test(pool, owned_processes_are_journaled_while_they_run)
{
	char dir[] = "/tmp/mcpv-pool-journal-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(journal_open(dir, &pool_test_journal), 0);
	pool_free(pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	struct instance_cbs cbs = {0};
	pool = pool_new(&loop, &cbs, NULL, pool_test_journal, NULL);
	struct instance *inst = pool_test_start();
	pid_t pid = instance_pid(inst);
	cr_assert_eq(journal_count(pool_test_journal), 1);
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, JOURNAL_FILE);
	json_t *root = json_load_file(path, 0, NULL);
	json_t *e = json_array_get(json_object_get(root, "entries"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(e, "kind")),
			 "process");
	cr_assert_eq(json_integer_value(json_object_get(e, "pid")), pid);
	json_decref(root);
	instance_stop(inst, "test", false);
	cr_assert(pool_test_run_until(pool_test_journal_empty, inst),
		  "the entry goes with the process");
	pool_free(pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	pool = pool_new(&loop, &cbs, NULL, NULL, NULL);
	journal_free(pool_test_journal);
	pool_test_journal = NULL;
	unlink(path);
	rmdir(dir);
}

/* A shared server that refused our credentials is kept after its last
 * session: the next session is refused at once, nothing is started
 * again; a reload that changes it closes it. */
Test(pool, a_server_that_refused_credentials_outlives_its_sessions)
{
	const struct server_config *s = &cfg->servers[3];
	struct pool_scope_ctx s2 = {"s2", NULL, "/tmp", NULL};
	char *key = pool_instance_key(s, &sc, NULL);
	struct instance *inst = pool_instance_for(pool, s, &sc, key);
	int ready = 0;
	instance_ensure(inst, pool_test_ready_cb, &ready);
	while (ready == 0)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_eq(ready, -1);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	pool_session_gone(pool, "s1");
	cr_assert_eq(pool_instance_find(pool, key), inst, "kept");
	cr_assert_eq(pool_instance_for(pool, s, &s2, key), inst);
	ready = 0;
	instance_ensure(inst, pool_test_ready_cb, &ready);
	cr_assert_eq(ready, -1, "refused at once, not tried again");
	cr_assert_eq(instance_pid(inst), 0, "nothing started");
	pool_session_gone(pool, "s2");
	cr_assert_not_null(pool_instance_find(pool, key));
	cr_assert_eq(pool_reload(pool, pool_test_none_wanted, NULL), 1);
	cr_assert_null(pool_instance_find(pool, key), "a reload closes it");
	free(key);
}
