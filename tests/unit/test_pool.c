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

#include "config/config.h"
#include "pool/pool.h"
#include "util/clock.h"

#define POOL_TEST_IDLE_MS 100
#define POOL_TEST_BOUND_MS 8000

static uint64_t fake_now;

static uint64_t pool_test_clock(void)
{
	return fake_now;
}

static uv_loop_t loop;
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
	if (asprintf(&text,
		     "{\"idleTimeout\":%d,\"mcpServers\":{\"demo\":{"
		     "\"command\":\"%s\",\"scope\":\"app\"}}}",
		     POOL_TEST_IDLE_MS, bin ? bin : path) < 0)
		abort();
	cfg = config_parse(text, strlen(text), "/tmp/pool-test.json");
	free(text);
	cr_assert_null(cfg->fatal);
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
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

Test(pool, a_session_gone_closes_what_only_it_used_at_once)
{
	struct instance *inst = pool_test_start();
	pid_t pid = instance_pid(inst);
	/* Its request is cut short with the session: one step. */
	pool_session_gone(pool, "s1");
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(pool_requests(pool), 0, "no stale lease");
	char *key = pool_instance_key(&cfg->servers[0], &sc, NULL);
	cr_assert_null(pool_instance_find(pool, key), "forgotten at once");
	free(key);
	/* The process goes with the stop ladder, in real time. */
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert(kill(pid, 0) < 0, "its process is gone");
}
