/*
 * Unit tests for what an instance remembers of its server's MCP era
 * (instance_int.h era_legacy): a remote server's opens probe for
 * 2026-07-28 until an initialize is answered with a 2025 revision; then
 * they do not, and the lists (the tool cache's) carry "era": "2025" so a
 * next runtime does not either; a start that fails probes again; a
 * 2026-07-28 answer keeps probing (the discover is its handshake).
 */
#include <criterion/criterion.h>

#include "instance_fixture.h"

static void handshake_as(struct fake_conn *c, const char *version)
{
	int64_t id;
	cr_assert(sent_method(c, "initialize", &id));
	char line[256];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
		 "\"protocolVersion\":\"%s\",\"capabilities\":{},"
		 "\"serverInfo\":{\"name\":\"f\",\"version\":\"1\"}}}",
		 (long long)id, version);
	serve(c, line);
}

/* Stops it keeping its lists (an idle close) and starts it again (the
 * start's waiter outlives the call: finish wakes it). */
static int restart_err;
static void restart(struct instance *inst)
{
	instance_stop(inst, "idle", true);
	fake_close(conns[nconns - 1]);
	instance_ensure(inst, ready_cb, &restart_err);
}

Test(era, a_2025_answer_spares_the_next_opens_the_probe)
{
	struct instance *inst = make_kind(0, SERVER_HTTP_REMOTE, false, NULL);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert(conns[0]->probe_era, "unknown: the first open probes");
	handshake_as(conns[0], "2025-06-18");
	cr_assert_eq(err, 0);
	json_t *l = instance_lists_json(inst);
	cr_assert_str_eq(json_string_value(json_object_get(l, "era")), "2025");
	json_decref(l);
	restart(inst);
	cr_assert_eq(nconns, 2);
	cr_assert_not(conns[1]->probe_era);
	finish(inst);
}

Test(era, a_2026_answer_keeps_probing_and_is_not_cached_as_2025)
{
	struct instance *inst = make_kind(0, SERVER_HTTP_REMOTE, false, NULL);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	handshake_as(conns[0], "2026-07-28");
	cr_assert_eq(err, 0, "2026-07-28 is a version the instance takes");
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	json_t *l = instance_lists_json(inst);
	cr_assert_null(json_object_get(l, "era"));
	json_decref(l);
	restart(inst);
	cr_assert(conns[1]->probe_era);
	finish(inst);
}

Test(era, the_cache_seeds_it_and_a_failed_start_forgets_it)
{
	struct instance *inst = make_kind(0, SERVER_HTTP_REMOTE, false, NULL);
	json_t *seed = json_pack("{s:[],s:s}", "tools", "era", "2025");
	instance_seed_lists(inst, seed);
	json_decref(seed);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_not(conns[0]->probe_era, "the cache said 2025");
	/* The start fails: the server may have changed; the next probes. */
	fake_exit(conns[0], 1);
	cr_assert_neq(err, 0);
	fake_now += 600000; /* past the backoff */
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(nconns, 2);
	cr_assert(conns[1]->probe_era);
	finish(inst);
}

Test(era, only_a_remote_server_keeps_an_era_in_its_lists)
{
	struct instance *inst = make_ready(0); /* stdio, 2025-11-25 */
	json_t *l = instance_lists_json(inst);
	cr_assert_null(json_object_get(l, "era"));
	json_decref(l);
	finish(inst);
}
