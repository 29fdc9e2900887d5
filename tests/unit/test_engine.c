/*
 * The container engine runner against a fake engine (engine_fixture.h):
 * output and error line bounds, no shell, stdin /dev/null, the deadline
 * that kills the whole group, a missing engine, the stop ladder's argv
 * and outcomes, the list of owned containers from ps + inspect (garbage
 * and odd labels tolerated); and once against the real podman when it is
 * installed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "container/engine.h"
#include "engine_fixture.h"
#include "proc/procfs.h"
#include "util/random.h"
#include "util/xmalloc.h"

static struct fake_engine fe;

static void eng_setup(void)
{
	fake_engine_init(&fe);
}

static void eng_teardown(void)
{
	fake_engine_cleanup(&fe);
}

TestSuite(engine, .init = eng_setup, .fini = eng_teardown, .timeout = 30);

static const char *const no_args[] = {"version", NULL};

static uint64_t eng_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether pid is gone (or a zombie, its group killed), polled a while:
 * an orphan is reaped by whoever adopts it. */
static bool eng_pid_gone(pid_t pid)
{
	for (int i = 0; i < 300; i++) {
		struct procfs_stat st;
		if (procfs_read_stat(pid, &st) < 0 ||
		    procfs_state_dead(st.state))
			return true;
		usleep(10000);
	}
	return false;
}

Test(engine, keeps_stdout_and_the_last_non_blank_error_line)
{
	fake_engine_put(&fe, "version.out", "line one\nline two\n");
	fake_engine_put(&fe, "version.err",
			"warning: a\n\tError: image not known  \n\n  \n");
	fake_engine_put(&fe, "version.rc", "125");
	struct engine_result r;
	cr_assert_eq(engine_run_sync(fe.path, no_args, 5000, &r), 0);
	cr_assert_eq(r.exit_status, 125);
	cr_assert_eq(r.err, 0);
	cr_assert_str_eq(r.out, "line one\nline two\n");
	cr_assert_str_eq(r.err_line, "Error: image not known");
	engine_result_clear(&r);

	/* Nothing said: both "". */
	fake_engine_put(&fe, "version.out", "");
	fake_engine_put(&fe, "version.err", "");
	fake_engine_put(&fe, "version.rc", "0");
	cr_assert_eq(engine_run_sync(fe.path, no_args, 5000, &r), 0);
	cr_assert_eq(r.exit_status, 0);
	cr_assert_str_eq(r.out, "");
	cr_assert_str_eq(r.err_line, "");
	engine_result_clear(&r);
}

Test(engine, the_error_line_is_cut_at_512_bytes_on_a_character_boundary)
{
	/* 511 bytes, then a 2-byte character across the cut, control
	 * characters earlier and a last line without a newline. */
	char line[2100];
	memset(line, 'a', 511);
	memcpy(line + 511, "\xc3\xa9", 2);
	memset(line + 513, 'b', 1500);
	line[5] = '\r';
	line[6] = '\x1b';
	line[2013] = '\0';
	char *err = xasprintf("first\n%s", line);
	fake_engine_put(&fe, "version.err", err);
	free(err);
	struct engine_result r;
	cr_assert_eq(engine_run_sync(fe.path, no_args, 5000, &r), 0);
	cr_assert_eq(strlen(r.err_line), 511, "%zu", strlen(r.err_line));
	cr_assert_eq(r.err_line[5], ' ');
	cr_assert_eq(r.err_line[6], ' ');
	json_t *probe = json_string(r.err_line);
	cr_assert_not_null(probe, "the cut left invalid UTF-8");
	json_decref(probe);
	engine_result_clear(&r);
}

Test(engine, stdout_is_kept_up_to_its_bound_and_the_rest_drained)
{
	size_t n = ENGINE_OUT_MAX + 100000;
	char *big = xmalloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\0';
	fake_engine_put(&fe, "version.out", big);
	free(big);
	struct engine_result r;
	cr_assert_eq(engine_run_sync(fe.path, no_args, 10000, &r), 0);
	cr_assert_eq(r.exit_status, 0,
		     "the engine was not blocked on a "
		     "full pipe");
	cr_assert_eq(strlen(r.out), ENGINE_OUT_MAX);
	engine_result_clear(&r);
}

Test(engine, arguments_reach_the_engine_as_given_without_a_shell)
{
	char *marker = xasprintf("%s/pwned", fe.dir);
	char *inject = xasprintf("$(touch %s); touch %s", marker, marker);
	const char *args[] = {"version", "a b", inject, "*", "", NULL};
	struct engine_result r;
	cr_assert_eq(engine_run_sync(fe.path, args, 5000, &r), 0);
	engine_result_clear(&r);
	char *log = fake_engine_log(&fe);
	char *want = xasprintf("version|a b|%s|*||\n", inject);
	cr_assert_str_eq(log, want);
	cr_assert_neq(access(marker, F_OK), 0, "a shell ran the arguments");
	free(want);
	free(log);
	free(inject);
	free(marker);
}

Test(engine, stdin_is_dev_null)
{
	fake_engine_put(&fe, "version.stdin", "");
	struct engine_result r;
	uint64_t t0 = eng_now_ms();
	cr_assert_eq(engine_run_sync(fe.path, no_args, 5000, &r), 0);
	cr_assert_lt(eng_now_ms() - t0, 4000, "stdin was not at its end");
	cr_assert_eq(r.exit_status, 0);
	cr_assert_str_eq(r.out, "");
	engine_result_clear(&r);
}

struct eng_calls {
	int calls;
	bool returned; /* engine_run returned before the callback */
	struct engine_result copy;
};

static void eng_count_cb(void *ctx, const struct engine_result *r)
{
	struct eng_calls *c = ctx;
	c->calls++;
	cr_assert(c->returned, "callback from inside engine_run");
	c->copy.exit_status = r->exit_status;
	c->copy.err = r->err;
}

Test(engine, the_callback_runs_once_and_never_inside_the_call)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct eng_calls c = {0};
	fake_engine_put(&fe, "version.rc", "3");
	cr_assert_eq(
		engine_run(&loop, fe.path, no_args, 5000, eng_count_cb, &c), 0);
	c.returned = true;
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(c.calls, 1);
	cr_assert_eq(c.copy.exit_status, 3);
	cr_assert_eq(uv_loop_close(&loop), 0, "a handle left open");
}

Test(engine, a_missing_engine_is_enoent_and_no_callback)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct eng_calls c = {0};
	cr_assert_eq(engine_run(&loop, "mcpv-no-such-engine", no_args, 5000,
				eng_count_cb, &c),
		     -ENOENT);
	char *abs = xasprintf("%s/docker", fe.dir);
	cr_assert_eq(engine_run(&loop, abs, no_args, 5000, eng_count_cb, &c),
		     -ENOENT);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(c.calls, 0);
	cr_assert_eq(uv_loop_close(&loop), 0, "a handle left open");

	struct engine_result r;
	cr_assert_eq(engine_run_sync(abs, no_args, 5000, &r), -ENOENT);
	cr_assert_eq(r.err, -ENOENT);
	cr_assert_eq(r.exit_status, -1);
	cr_assert_str_eq(r.out, "");
	engine_result_clear(&r);
	free(abs);
	cr_assert_eq(engine_run_sync("", no_args, 5000, &r), -EINVAL);
	engine_result_clear(&r);
}

Test(engine, a_hung_engine_is_killed_with_its_group_at_the_deadline)
{
	fake_engine_put(&fe, "version.hang", "");
	fake_engine_put(&fe, "version.out", "partial\n");
	struct engine_result r;
	uint64_t t0 = eng_now_ms();
	cr_assert_eq(engine_run_sync(fe.path, no_args, 1500, &r), -ETIMEDOUT);
	uint64_t took = eng_now_ms() - t0;
	cr_assert_geq(took, 1400);
	cr_assert_lt(took, 4000, "%llu ms", (unsigned long long)took);
	cr_assert_eq(r.err, -ETIMEDOUT);
	cr_assert_eq(r.exit_status, -1);
	cr_assert_str_eq(r.out, "partial\n", "what came before is kept");
	engine_result_clear(&r);
	pid_t leader = fake_engine_pid(&fe, "leader.pid");
	pid_t grandchild = fake_engine_pid(&fe, "grandchild.pid");
	cr_assert_gt(leader, 0, "the fake did not get going in 1.5 s");
	cr_assert_gt(grandchild, 0);
	cr_assert(eng_pid_gone(leader));
	cr_assert(eng_pid_gone(grandchild), "the group was not killed");
}

/* The command ended but left something holding its output: its answer
 * is taken after a short while, and what lingers is not signalled (the
 * leader reaped, its group's number may be another's). */
Test(engine, an_ended_command_is_answered_though_its_output_lingers)
{
	fake_engine_put(&fe, "version.linger", "");
	fake_engine_put(&fe, "version.out", "done\n");
	struct engine_result r;
	uint64_t t0 = eng_now_ms();
	cr_assert_eq(engine_run_sync(fe.path, no_args, 20000, &r), 0);
	uint64_t took = eng_now_ms() - t0;
	pid_t linger = fake_engine_pid(&fe, "linger.pid");
	cr_assert_gt(linger, 0);
	bool alive = kill(linger, 0) == 0;
	kill(linger, SIGKILL);
	cr_assert_lt(took, 5000, "%llu ms", (unsigned long long)took);
	cr_assert_eq(r.exit_status, 0);
	cr_assert_eq(r.err, 0);
	cr_assert_str_eq(r.out, "done\n");
	engine_result_clear(&r);
	cr_assert(alive, "a process was signalled after its leader ended");
}

Test(engine, an_engine_without_its_daemon_gives_its_own_line)
{
	fake_engine_put(&fe, "all.err", FAKE_ENGINE_DOWN "\n");
	fake_engine_put(&fe, "all.rc", "125");
	struct engine_result r;
	cr_assert_eq(engine_run_sync(fe.path, no_args, 5000, &r), 0);
	cr_assert_eq(r.exit_status, 125);
	cr_assert_str_eq(r.err_line, FAKE_ENGINE_DOWN);
	cr_assert_not(engine_says_gone(r.err_line));
	engine_result_clear(&r);
}

Test(engine, gone_in_the_words_of_podman_and_docker)
{
	static const char *const gone[] = {
		/* podman 4.3.1, measured */
		"Error: no container with name or ID \"x\" found: no such "
		"container",
		"Error: no container with ID or name \"x\" found: no such "
		"container",
		"Error: inspecting object: no such object: \"x\"",
		/* docker */
		"Error response from daemon: No such container: x",
		"Error: No such container: x",
		"Error: No such object: x",
	};
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
		cr_assert(engine_says_gone(gone[i]), "%s", gone[i]);
	static const char *const not_gone[] = {
		FAKE_ENGINE_DOWN,
		"Error: localhost/x:1: image not known",
		"Error: container state improper",
		"",
	};
	for (size_t i = 0; i < sizeof not_gone / sizeof not_gone[0]; i++)
		cr_assert_not(engine_says_gone(not_gone[i]), "%s", not_gone[i]);
	cr_assert_not(engine_says_gone(NULL));
}

Test(engine, remove_runs_stop_then_rm_f)
{
	char *why = NULL;
	cr_assert(engine_remove_sync(fe.path, "mcpv-a", 3, &why));
	cr_assert_null(why);
	char *log = fake_engine_log(&fe);
	cr_assert_str_eq(log, "stop|-t|3|mcpv-a|\nrm|-f|mcpv-a|\n");
	free(log);
}

Test(engine, remove_of_a_container_already_gone_needs_no_rm)
{
	fake_engine_put(&fe, "stop.err",
			"Error: no container with name or ID \"mcpv-a\" found: "
			"no such container\n");
	fake_engine_put(&fe, "stop.rc", "125");
	char *why = NULL;
	cr_assert(engine_remove_sync(fe.path, "mcpv-a", 1, &why));
	char *log = fake_engine_log(&fe);
	cr_assert_str_eq(log, "stop|-t|1|mcpv-a|\n");
	free(log);

	/* A stop that failed otherwise: rm -f still runs; its "gone"
	 * counts. */
	fake_engine_put(&fe, "stop.err", "Error: something odd\n");
	fake_engine_put(&fe, "rm.err", "Error: No such container: mcpv-b\n");
	fake_engine_put(&fe, "rm.rc", "1");
	cr_assert(engine_remove_sync(fe.path, "mcpv-b", 1, NULL));
}

Test(engine, remove_says_why_it_failed)
{
	fake_engine_put(&fe, "all.err", FAKE_ENGINE_DOWN "\n");
	fake_engine_put(&fe, "all.rc", "125");
	char *why = NULL;
	cr_assert_not(engine_remove_sync(fe.path, "mcpv-a", 1, &why));
	cr_assert_str_eq(why, FAKE_ENGINE_DOWN);
	free(why);
	char *log = fake_engine_log(&fe);
	cr_assert_str_eq(log, "stop|-t|1|mcpv-a|\nrm|-f|mcpv-a|\n");
	free(log);

	/* rm failing silently: its status. */
	fake_engine_del(&fe, "all.rc");
	fake_engine_put(&fe, "rm.rc", "2");
	cr_assert_not(engine_remove_sync(fe.path, "mcpv-a", 1, &why));
	cr_assert_not_null(strstr(why, "exited with status 2"), "%s", why);
	free(why);

	char *abs = xasprintf("%s/docker", fe.dir);
	cr_assert_not(engine_remove_sync(abs, "mcpv-a", 1, &why));
	cr_assert_not_null(strstr(why, "not found"), "%s", why);
	free(why);
	free(abs);
}

struct eng_removed {
	int calls;
	bool returned;
	bool gone;
};

static void eng_removed_cb(void *ctx, bool gone, const char *why)
{
	struct eng_removed *x = ctx;
	cr_assert(x->returned, "callback from inside engine_remove");
	x->calls++;
	x->gone = gone;
}

Test(engine, remove_async_calls_back_once_after_returning)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct eng_removed x = {0};
	cr_assert_eq(engine_remove(&loop, "mcpv-no-such-engine", "c", 1,
				   eng_removed_cb, &x),
		     -ENOENT);
	cr_assert_eq(engine_remove(&loop, fe.path, "c", 1, eng_removed_cb, &x),
		     0);
	x.returned = true;
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(x.calls, 1);
	cr_assert(x.gone);
	cr_assert_eq(uv_loop_close(&loop), 0);
}

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

Test(engine, list_owned_reads_ps_then_one_inspect)
{
	fake_engine_put(&fe, "ps.out", ID_A "\n" ID_B "\n");
	fake_engine_put(&fe, "inspect.out",
			ID_A "\t/mcpv-a\ttrue\t{\"mcpvisor.owner\":\"t1\","
			     "\"mcpvisor.server\":\"gh\"}\n" ID_B
			     "\tmcpv-b\tfalse\t"
			     "{\"mcpvisor.owner\":\"t2\"}\n");
	struct engine_container *c = NULL;
	size_t n = 0;
	char *why = NULL;
	cr_assert_eq(engine_list_owned_sync(fe.path, 5000, &c, &n, &why), 0);
	cr_assert_null(why);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(c[0].id, ID_A);
	cr_assert_str_eq(c[0].name, "mcpv-a", "docker's leading / dropped");
	cr_assert_str_eq(c[0].owner, "t1");
	cr_assert_str_eq(c[0].server, "gh");
	cr_assert(c[0].running);
	cr_assert_str_eq(c[1].name, "mcpv-b");
	cr_assert_str_eq(c[1].server, "");
	cr_assert_not(c[1].running);
	engine_containers_free(c, n);
	char *log = fake_engine_log(&fe);
	char *want = xasprintf(
		"ps|-a|-q|--no-trunc|--filter|label=mcpvisor.owner|\n"
		"container|inspect|--format|{{.Id}}\t{{.Name}}\t"
		"{{.State.Running}}\t{{json .Config.Labels}}|%s|%s|\n",
		ID_A, ID_B);
	cr_assert_str_eq(log, want);
	free(want);
	free(log);
}

Test(engine, list_owned_of_none_runs_no_inspect)
{
	fake_engine_put(&fe, "ps.out", "");
	struct engine_container *c = (void *)1;
	size_t n = 9;
	cr_assert_eq(engine_list_owned_sync(fe.path, 5000, &c, &n, NULL), 0);
	cr_assert_null(c);
	cr_assert_eq(n, 0);
	char *log = fake_engine_log(&fe);
	cr_assert_null(strstr(log, "inspect"));
	free(log);
}

Test(engine, list_owned_tolerates_garbage_and_odd_labels)
{
	fake_engine_put(&fe, "ps.out",
			"WARNING: something\n" ID_A "\n\n" ID_A "\n" ID_B
			"\nnot-an-id\nabc123\n" ID_C "\n" ID_C "0\n");
	fake_engine_put(
		&fe, "inspect.out",
		"garbage line\n"
		"\t\t\t\n" ID_C "\tmcpv-c\ttrue\t{\"mcpvisor.owner\":\n"
		/* a server label with a tab, a newline and a fake line */
		ID_A "\tmcpv-a\ttrue\t{\"mcpvisor.owner\":\"t1\","
		"\"mcpvisor.server\":\"x\\ty\\n" ID_B
		"\\tfake\\ttrue\\t{}\"}\r\n"
		/* no owner label, or not a string */
		ID_B "\tmcpv-b\ttrue\t{\"other\":\"1\"}\n" ID_B
		"\tmcpv-b\ttrue\t{\"mcpvisor.owner\":7}\n" ID_B
		"\tmcpv-b\ttrue\tnull\n"
		"XYZ\tmcpv-x\ttrue\t{\"mcpvisor.owner\":\"t9\"}\n" ID_A
		"\tmcpv-a\ttrue\t{\"mcpvisor.owner\":\"dup\"}\n");
	struct engine_container *c = NULL;
	size_t n = 0;
	cr_assert_eq(engine_list_owned_sync(fe.path, 5000, &c, &n, NULL), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(c[0].id, ID_A);
	cr_assert_str_eq(c[0].owner, "t1");
	cr_assert_str_eq(c[0].server, "x\ty\n" ID_B "\tfake\ttrue\t{}");
	engine_containers_free(c, n);
	char *log = fake_engine_log(&fe);
	char *ids = xasprintf("|%s|%s|%s|\n", ID_A, ID_B, ID_C);
	cr_assert_not_null(strstr(log, ids),
			   "ids deduplicated, short or long ones skipped: %s",
			   log);
	free(ids);
	free(log);
}

Test(engine, list_owned_fails_with_the_engine_s_line)
{
	fake_engine_put(&fe, "all.err", FAKE_ENGINE_DOWN "\n");
	fake_engine_put(&fe, "all.rc", "125");
	struct engine_container *c = NULL;
	size_t n = 0;
	char *why = NULL;
	cr_assert_eq(engine_list_owned_sync(fe.path, 5000, &c, &n, &why), -EIO);
	cr_assert_str_eq(why, FAKE_ENGINE_DOWN);
	free(why);
	char *abs = xasprintf("%s/docker", fe.dir);
	cr_assert_eq(engine_list_owned_sync(abs, 5000, &c, &n, &why), -ENOENT);
	cr_assert_null(c);
	free(why);
	free(abs);

	/* ps hanging: bounded. */
	fake_engine_del(&fe, "all.rc");
	fake_engine_put(&fe, "ps.hang", "");
	cr_assert_eq(engine_list_owned_sync(fe.path, 1000, &c, &n, &why),
		     -ETIMEDOUT);
	cr_assert_not_null(strstr(why, "did not end in time"), "%s", why);
	free(why);
}

Test(engine, list_owned_keeps_the_others_when_one_vanished)
{
	fake_engine_put(&fe, "ps.out", ID_A "\n" ID_B "\n");
	fake_engine_put(&fe, "inspect.out",
			ID_A "\tmcpv-a\tfalse\t{\"mcpvisor.owner\":\"t1\"}\n");
	fake_engine_put(&fe, "inspect.err",
			"Error: inspecting object: no such object: \"" ID_B
			"\"\n");
	fake_engine_put(&fe, "inspect.rc", "125");
	struct engine_container *c = NULL;
	size_t n = 0;
	cr_assert_eq(engine_list_owned_sync(fe.path, 5000, &c, &n, NULL), 0);
	cr_assert_eq(n, 1);
	engine_containers_free(c, n);

	/* inspect failing for another reason, with nothing read: failed. */
	fake_engine_put(&fe, "inspect.out", "");
	fake_engine_put(&fe, "inspect.err", "Error: boom\n");
	char *why = NULL;
	cr_assert_eq(engine_list_owned_sync(fe.path, 5000, &c, &n, &why), -EIO);
	cr_assert_str_eq(why, "Error: boom");
	free(why);
}

/* ---- the real podman ---- */

/* A container created (not started: no runtime needed) from an image of
 * one empty file, with a label unique to this run; listed with its owner,
 * then removed by the ladder and no longer listed. */
Test(engine, real_podman_lists_and_removes_a_labelled_container, .timeout = 30)
{
	if (!real_engine_ready(&fe)) {
		cr_skip_test("podman is not installed: the real-engine test "
			     "is skipped (CI installs it)");
		return;
	}
	char token[33], name[64];
	random_hex(token, 16);
	snprintf(name, sizeof name, "mcpv-engine-unit-%.12s", token);
	char *labels = xasprintf("--label mcpvisor.owner=%s --label "
				 "'mcpvisor.server=odd name\twith tab'",
				 token);
	char *cmd = xasprintf("podman create -q --name %s %s %s /empty "
			      ">/dev/null",
			      name, labels, REAL_ENGINE_IMAGE);
	cr_assert_eq(system(cmd), 0, "podman create failed");
	free(cmd);
	free(labels);

	struct engine_container *c = NULL;
	size_t n = 0;
	char *why = NULL;
	int rc = engine_list_owned_sync("podman", 20000, &c, &n, &why);
	cr_assert_eq(rc, 0, "%s", why ? why : "");
	const struct engine_container *mine = NULL;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(c[i].owner, token) == 0)
			mine = &c[i];
	}
	cr_assert_not_null(mine, "our container is not listed");
	cr_assert_str_eq(mine->name, name);
	cr_assert_str_eq(mine->server, "odd name\twith tab");
	cr_assert_eq(strlen(mine->id), 64);
	cr_assert_not(mine->running);
	char *id = xstrdup(mine->id);
	engine_containers_free(c, n);

	cr_assert(engine_remove_sync("podman", id, 1, &why), "%s", why);
	/* Gone now: removing again says so. */
	cr_assert(engine_remove_sync("podman", name, 1, &why), "%s", why);
	cr_assert_eq(engine_list_owned_sync("podman", 20000, &c, &n, &why), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_neq(c[i].id, id, "still listed after removal");
	engine_containers_free(c, n);
	free(id);
}
