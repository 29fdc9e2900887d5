/*
 * Unit tests for the process supervisor's logs mode (the way a local HTTP
 * server or a container CLI runs): stdin is /dev/null, stdout and stderr
 * both arrive as log lines (on_log and the ring), stdout's end is not an
 * exit, the owner token is in the environment, and the stop ladder ends
 * the whole group. Also stdin in pipes mode: a loop turn's messages
 * written together before the loop waits, in order, within the limit
 * (on_drain after it), and not lost to a close right after; and
 * upstream_stdio (the supervisor with pipes as an upstream: its facts).
 * Real /bin/sh programs, one loop per test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "proc/supervisor.h"
#include "transport/upstream.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define TST_GUARD_MS 8000
#define TST_GRACE_MS 200
#define TST_TOKEN "00112233445566778899aabbccddeeff"
#define TST_MAX_LOGS 64
#define TST_MAX_MSGS 8

struct tst {
	uv_loop_t loop;
	uv_timer_t guard;
	struct supervisor *sup;
	pid_t pid;
	char *logs[TST_MAX_LOGS];
	int nlogs;
	char *msgs[TST_MAX_MSGS]; /* the first messages, copied */
	size_t msg_len[TST_MAX_MSGS];
	int nmsgs;
	int nexit;
	int nclosed;
	int ndrain;
	int64_t exit_status;
	int term_signal;
	char *tail;	   /* taken in on_exit */
	uint64_t grace_ms; /* for the next spawn; 0: TST_GRACE_MS */
};

static pid_t tst_live_group;

static void tst_kill_leftovers(void)
{
	if (tst_live_group > 0)
		kill(-tst_live_group, SIGKILL);
	tst_live_group = 0;
}

TestSuite(supervisor, .fini = tst_kill_leftovers, .timeout = 30);

static void tst_guard_cb(uv_timer_t *timer)
{
	tst_kill_leftovers();
	cr_assert_fail("timed out after %d ms", TST_GUARD_MS);
}

static void tst_init(struct tst *t)
{
	memset(t, 0, sizeof *t);
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("TST_DEBUG"))
		log_set_level(LOG_DEBUG);
	cr_assert_eq(uv_loop_init(&t->loop), 0);
	uv_timer_init(&t->loop, &t->guard);
	uv_timer_start(&t->guard, tst_guard_cb, TST_GUARD_MS, 0);
	uv_unref((uv_handle_t *)&t->guard);
}

static void tst_fini(struct tst *t)
{
	tst_live_group = 0;
	uv_close((uv_handle_t *)&t->guard, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t->loop), 0, "handles left open");
	for (int i = 0; i < t->nlogs; i++)
		free(t->logs[i]);
	for (int i = 0; i < t->nmsgs && i < TST_MAX_MSGS; i++)
		free(t->msgs[i]);
	free(t->tail);
}

static void tst_on_message(void *ctx, const char *line, size_t len)
{
	struct tst *t = ctx;
	if (t->nmsgs < TST_MAX_MSGS) {
		t->msgs[t->nmsgs] = xstrndup(line, len);
		t->msg_len[t->nmsgs] = len;
	}
	t->nmsgs++;
}

static void tst_on_log(void *ctx, const char *line, size_t len)
{
	struct tst *t = ctx;
	cr_assert_lt(t->nlogs, TST_MAX_LOGS);
	t->logs[t->nlogs++] = xstrndup(line, len);
}

static void tst_on_drain(void *ctx)
{
	((struct tst *)ctx)->ndrain++;
}

static void tst_on_exit(void *ctx, int64_t status, int sig)
{
	struct tst *t = ctx;
	t->nexit++;
	t->exit_status = status;
	t->term_signal = sig;
	t->tail = sup_log_tail(t->sup, 10);
}

static void tst_on_closed(void *ctx)
{
	((struct tst *)ctx)->nclosed++;
}

static const struct sup_cbs tst_cbs = {
	.on_message = tst_on_message,
	.on_log = tst_on_log,
	.on_drain = tst_on_drain,
	.on_exit = tst_on_exit,
	.on_closed = tst_on_closed,
};

static void tst_spawn(struct tst *t, enum sup_mode mode, const char *script)
{
	char *args[] = {"-c", (char *)script, NULL};
	char *env[] = {"TST_FROM_CONFIG=yes", NULL};
	struct sup_spec spec = {
		.command = "sh",
		.args = args,
		.env = env,
		.token = TST_TOKEN,
		.mode = mode,
		.stop_grace_ms = t->grace_ms ? t->grace_ms : TST_GRACE_MS,
	};
	cr_assert_eq(sup_spawn(&t->loop, &spec, &tst_cbs, t, &t->sup), 0);
	t->pid = sup_pid(t->sup);
	tst_live_group = t->pid;
	cr_assert_str_eq(sup_token(t->sup), TST_TOKEN);
}

/* A loop with nothing left to wait for returns at once, and its guard
 * timer (unreferenced) never fires: that is a failure, not a spin until
 * the suite's timeout. */
static void tst_run_until(struct tst *t, const int *counter, int want)
{
	while (*counter < want)
		cr_assert(uv_run(&t->loop, UV_RUN_ONCE) != 0 ||
				  *counter >= want,
			  "nothing left to wait for: %d of %d callbacks",
			  *counter, want);
}

static void tst_noop_cb(uv_timer_t *timer)
{
}

static bool tst_gone(pid_t pid)
{
	return kill(pid, 0) == -1 && errno == ESRCH;
}

Test(supervisor, logs_mode_takes_stdout_and_stderr_as_log_lines)
{
	struct tst t;
	tst_init(&t);
	/* A JSON line on stdout is a log line here, not a message; stdin
	 * reads /dev/null (read returns at once); the env has the config's
	 * variable and the owner token. */
	tst_spawn(&t, SUP_LOGS,
		  "echo '{\"jsonrpc\":\"2.0\",\"method\":\"x\"}'; "
		  "echo oops >&2; "
		  "if read x; then echo got-input; else echo stdin-eof; fi; "
		  "echo \"$TST_FROM_CONFIG $MCPVISOR_OWNER\"; "
		  "printf partial; exit 4");
	cr_assert_eq(sup_send(t.sup, "{}", 2), -EPIPE);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.nmsgs, 0);
	cr_assert_eq(t.nexit, 1);
	cr_assert_eq(t.exit_status, 4);
	bool json = false, err = false, eof = false, envok = false;
	for (int i = 0; i < t.nlogs; i++) {
		json |= strcmp(t.logs[i],
			       "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}") == 0;
		err |= strcmp(t.logs[i], "oops") == 0;
		eof |= strcmp(t.logs[i], "stdin-eof") == 0;
		envok |= strcmp(t.logs[i], "yes " TST_TOKEN) == 0;
	}
	cr_assert(json && err && eof && envok, "logs: %d lines", t.nlogs);
	/* The ring has them too (the two streams in the order they were
	 * read), the unfinished last line of stdout included. */
	cr_assert_not_null(strstr(t.tail, "stdin-eof\n"), "%s", t.tail);
	cr_assert_not_null(strstr(t.tail, "oops"), "%s", t.tail);
	cr_assert_not_null(strstr(t.tail, "\npartial"), "%s", t.tail);
	tst_fini(&t);
}

Test(supervisor, logs_mode_stdout_closing_is_not_an_exit)
{
	struct tst t;
	tst_init(&t);
	/* A server that closes its stdout and goes on serving (a daemon
	 * logging elsewhere) is still running. Its stderr line comes after
	 * stdout's end, which the loop then reads no later than the line. */
	tst_spawn(&t, SUP_LOGS,
		  "echo bye; exec >&-; echo closed >&2; exec sleep 30");
	tst_run_until(&t, &t.nlogs, 2);
	/* The two streams are read in either order. */
	cr_assert(strcmp(t.logs[0], "closed") == 0 ||
			  strcmp(t.logs[1], "closed") == 0,
		  "%s, %s", t.logs[0], t.logs[1]);
	/* Longer than the 100 ms the pipes mode waits after stdout's end: a
	 * timer started then would fire before this one. */
	uv_timer_t wait;
	uv_timer_init(&t.loop, &wait);
	uv_timer_start(&wait, tst_noop_cb, 300, 0);
	while (uv_is_active((uv_handle_t *)&wait))
		uv_run(&t.loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&wait, NULL);
	cr_assert_eq(t.nexit, 0);
	cr_assert_not(tst_gone(t.pid));
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.term_signal, SIGTERM);
	tst_fini(&t);
}

Test(supervisor, stop_ladder_kills_the_whole_group)
{
	struct tst t;
	tst_init(&t);
	/* The leader and a child in its group ignore SIGTERM: only SIGKILL
	 * of the group ends them. */
	tst_spawn(&t, SUP_LOGS,
		  "trap '' TERM; (trap '' TERM; echo child $(sh -c "
		  "'echo $PPID'); exec sleep 30) & "
		  "while :; do sleep 1; done");
	tst_run_until(&t, &t.nlogs, 1);
	pid_t child = (pid_t)atoi(t.logs[0] + strlen("child "));
	cr_assert_gt(child, 0, "%s", t.logs[0]);
	cr_assert_eq(getpgid(child), t.pid);
	uint64_t t0 = uv_now(&t.loop);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	uint64_t took = uv_now(&t.loop) - t0;
	cr_assert_eq(t.term_signal, SIGKILL);
	/* SIGTERM (ignored), a grace period, then SIGKILL. */
	cr_assert_geq(took, TST_GRACE_MS - 20, "%llu ms",
		      (unsigned long long)took);
	cr_assert(tst_gone(t.pid));
	cr_assert(tst_gone(child), "group member %d outlived the stop",
		  (int)child);
	tst_fini(&t);
}

Test(supervisor, logs_mode_stop_sends_sigterm_at_once)
{
	struct tst t;
	tst_init(&t);
	/* Its stdin is /dev/null, so there is no EOF to wait for: the stop
	 * starts with SIGTERM. A grace period longer than the guard makes a
	 * wait for stdin a failure, with no bound on how fast a loaded
	 * machine must be. */
	t.grace_ms = 60 * 1000;
	tst_spawn(&t, SUP_LOGS, "echo ready; exec sleep 30");
	tst_run_until(&t, &t.nlogs, 1);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.term_signal, SIGTERM);
	cr_assert(tst_gone(t.pid));
	tst_fini(&t);
}

Test(supervisor, a_full_stdin_queue_tells_when_it_drains)
{
	struct tst t;
	tst_init(&t);
	/* The queue fills whatever the reader does: the loop writes it, and
	 * the loop does not run during the sends. The shell stays as cat's
	 * parent (cat is not its last command, so it is not exec'd) and
	 * keeps stdout open: a program that closes its stdout has ended its
	 * connection (on_exit, and no drain after), which is what `exec cat
	 * >/dev/null` did, 100 ms before the exit it was taken for; on a
	 * loaded machine cat had not read 32 MB by then. */
	tst_spawn(&t, SUP_PIPES, "cat >/dev/null; exit 0");
	size_t big = 8 * 1024 * 1024;
	char *m = xmalloc(big);
	memset(m, ' ', big);
	m[0] = '1';
	int rc = 0, sent = 0;
	while ((rc = sup_send(t.sup, m, big)) == 0)
		sent++;
	free(m);
	cr_assert_eq(rc, -ENOBUFS);
	cr_assert_geq(sent, 7);
	cr_assert_eq(t.ndrain, 0, "never from inside send");
	tst_run_until(&t, &t.ndrain, 1);
	cr_assert_eq(t.nexit, 0, "taken for gone before it drained");
	cr_assert_eq(sup_send(t.sup, "{}", 2), 0);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.ndrain, 1);
	tst_fini(&t);
}

static bool tst_has_log(const struct tst *t, const char *line)
{
	for (int i = 0; i < t->nlogs; i++)
		if (strcmp(t->logs[i], line) == 0)
			return true;
	return false;
}

Test(supervisor, one_turns_sends_are_written_together_before_the_loop_waits)
{
	struct tst t;
	tst_init(&t);
	/* The server does not read: the test reads its stdin pipe through
	 * /proc, and asks it how much is waiting. */
	tst_spawn(&t, SUP_PIPES, "exec sleep 30");
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd/0", (int)t.pid);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(sup_send(t.sup, "{\"a\":1}", 7), 0);
	cr_assert_eq(sup_send(t.sup, "{\"b\":\r\n2}", 9), 0);
	cr_assert_eq(sup_send(t.sup, "{\"c\":3}", 7), 0);
	int waiting = -1;
	cr_assert_eq(ioctl(fd, FIONREAD, &waiting), 0);
	cr_assert_eq(waiting, 0, "%d bytes written during the sends", waiting);
	/* One turn that does not wait: the flush comes before its poll. */
	uv_run(&t.loop, UV_RUN_NOWAIT);
	char got[128];
	ssize_t n = read(fd, got, sizeof got - 1);
	cr_assert_gt(n, 0, "nothing written: %s", strerror(errno));
	got[n] = '\0';
	/* In order, one line each, the raw CR/LF as spaces. */
	cr_assert_str_eq(got, "{\"a\":1}\n{\"b\":  2}\n{\"c\":3}\n");
	close(fd);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	tst_fini(&t);
}

static void tst_send_cb(uv_timer_t *timer)
{
	struct tst *t = timer->data;
	cr_assert_eq(sup_send(t->sup, "{\"t\":1}", 7), 0);
}

Test(supervisor, a_send_from_a_timer_goes_before_the_loop_waits)
{
	struct tst t;
	tst_init(&t);
	/* Timers run before the loop polls: a flush that came only after
	 * the poll would leave this message unwritten while the loop waits
	 * for its answer, until the guard fires. */
	tst_spawn(&t, SUP_PIPES, "exec cat");
	uv_timer_t send;
	uv_timer_init(&t.loop, &send);
	send.data = &t;
	uv_timer_start(&send, tst_send_cb, 1, 0);
	tst_run_until(&t, &t.nmsgs, 1);
	cr_assert_str_eq(t.msgs[0], "{\"t\":1}");
	uv_close((uv_handle_t *)&send, NULL);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	tst_fini(&t);
}

Test(supervisor, order_holds_across_a_partial_write)
{
	struct tst t;
	tst_init(&t);
	tst_spawn(&t, SUP_PIPES, "exec cat");
	/* Far more than a pipe holds: the end of its turn writes part of
	 * it and queues the rest, still queued when the next turn's small
	 * messages are flushed; written first, they would land inside it. */
	size_t big = 4 * 1024 * 1024;
	char *m = xmalloc(big);
	memset(m, 'x', big);
	memcpy(m, "{\"big\":\"", 8);
	memcpy(m + big - 2, "\"}", 2);
	cr_assert_eq(sup_send(t.sup, m, big), 0);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	cr_assert_eq(sup_send(t.sup, "{\"n\":1}", 7), 0);
	cr_assert_eq(sup_send(t.sup, "{\"n\":2}", 7), 0);
	tst_run_until(&t, &t.nmsgs, 3);
	cr_assert_eq(t.nmsgs, 3);
	cr_assert_eq(t.msg_len[0], big);
	cr_assert(memcmp(t.msgs[0], m, big) == 0, "the large message changed");
	cr_assert_str_eq(t.msgs[1], "{\"n\":1}");
	cr_assert_str_eq(t.msgs[2], "{\"n\":2}");
	free(m);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	tst_fini(&t);
}

Test(supervisor, the_limit_counts_gathered_and_queued_bytes)
{
	struct tst t;
	tst_init(&t);
	/* The server reads nothing until the test writes "go" to a pipe of
	 * the test's, opened through /proc: until then what its stdin pipe
	 * did not take stays queued. */
	int go[2];
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	char script[96];
	snprintf(script, sizeof script,
		 "read x </proc/%d/fd/%d; cat >/dev/null; exit 0",
		 (int)getpid(), go[0]);
	tst_spawn(&t, SUP_PIPES, script);
	size_t mb = 1024 * 1024;
	char *m = xmalloc(40 * mb);
	memset(m, ' ', 40 * mb);
	m[0] = '1';
	cr_assert_eq(sup_send(t.sup, m, 40 * mb), 0);
	/* Its turn ends: at most a pipe's worth is written, the rest is
	 * queued. Then 8 MB messages, gathered: with the queued 40 MB, no
	 * more than three fit under 64 MB; without it, seven would. */
	uv_run(&t.loop, UV_RUN_NOWAIT);
	int rc = 0, sent = 0;
	while (sent < 10 && (rc = sup_send(t.sup, m, 8 * mb)) == 0)
		sent++;
	free(m);
	cr_assert_eq(rc, -ENOBUFS, "%d sent", sent);
	cr_assert(sent >= 2 && sent <= 3, "%d sent", sent);
	cr_assert_eq(t.ndrain, 0);
	cr_assert_eq(write(go[1], "go\n", 3), 3);
	tst_run_until(&t, &t.ndrain, 1);
	cr_assert_eq(t.nexit, 0, "taken for gone before it drained");
	cr_assert_eq(sup_send(t.sup, "{}", 2), 0);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.ndrain, 1);
	close(go[0]);
	close(go[1]);
	tst_fini(&t);
}

Test(supervisor, close_stdin_right_after_a_send_delivers_it)
{
	struct tst t;
	tst_init(&t);
	/* cat answers the message, then ends at stdin's EOF; the ladder
	 * then runs on its own. */
	tst_spawn(&t, SUP_PIPES, "exec cat");
	cr_assert_eq(sup_send(t.sup, "{\"x\":1}", 7), 0);
	sup_close_stdin(t.sup);
	cr_assert_eq(sup_send(t.sup, "{}", 2), -EPIPE);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.nmsgs, 1, "the message was lost to the close");
	cr_assert_str_eq(t.msgs[0], "{\"x\":1}");
	cr_assert_eq(t.exit_status, 0);
	tst_fini(&t);
}

Test(supervisor, stop_right_after_a_send_delivers_it)
{
	struct tst t;
	tst_init(&t);
	/* No messages are taken once stopping: the server says what it
	 * read on stderr, which is read to the end. */
	tst_spawn(&t, SUP_PIPES, "read -r l; echo \"got $l\" >&2");
	cr_assert_eq(sup_send(t.sup, "{\"y\":2}", 7), 0);
	sup_stop(t.sup);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert(tst_has_log(&t, "got {\"y\":2}"), "%d log lines", t.nlogs);
	cr_assert_eq(t.exit_status, 0);
	tst_fini(&t);
}

/* ---- upstream_stdio: the supervisor with pipes as an upstream ---- */

struct up_tst {
	uv_loop_t loop;
	char msg[256];
	int64_t related;
	int nmsgs, nlogs, nfaults, nlive, ngone, nclosed;
	struct upstream_fault fault;
	char fault_text[128];
	pid_t pid, owned_pid;
	char token[SUP_TOKEN_MAX + 1];
	bool gone_at_gone; /* the process was gone when !live came */
};

static void up_on_message(void *ctx, const char *m, size_t len, int64_t related)
{
	struct up_tst *t = ctx;
	snprintf(t->msg, sizeof t->msg, "%.*s", (int)len, m);
	t->related = related;
	t->nmsgs++;
}

static void up_on_log(void *ctx, const char *line, size_t len)
{
	((struct up_tst *)ctx)->nlogs++;
}

static void up_on_fault(void *ctx, const struct upstream_fault *f)
{
	struct up_tst *t = ctx;
	t->nfaults++;
	t->fault = *f;
	snprintf(t->fault_text, sizeof t->fault_text, "%s", f->text);
	t->fault.text = t->fault_text;
}

static void up_on_owned(void *ctx, const struct upstream_owned *o, bool live)
{
	struct up_tst *t = ctx;
	cr_assert_eq(o->kind, UPSTREAM_OWNED_PROCESS);
	cr_assert_eq(o->pgid, o->pid);
	if (live) {
		t->nlive++;
		t->owned_pid = o->pid;
		snprintf(t->token, sizeof t->token, "%s", o->token);
		cr_assert_gt(o->start_time, 0);
	} else {
		t->ngone++;
		t->gone_at_gone = tst_gone(o->pid);
	}
}

static void up_on_closed(void *ctx)
{
	((struct up_tst *)ctx)->nclosed++;
}

static const struct upstream_cbs up_cbs = {
	.on_message = up_on_message,
	.on_log = up_on_log,
	.on_fault = up_on_fault,
	.on_owned = up_on_owned,
	.on_closed = up_on_closed,
};

Test(supervisor, upstream_stdio_reports_its_facts)
{
	struct up_tst t = {0};
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	cr_assert_eq(uv_loop_init(&t.loop), 0);
	char *args[] = {"-c",
			"echo oops >&2; read line; echo \"$line\"; "
			"echo \"{\\\"owner\\\":\\\"$MCPVISOR_OWNER\\\"}\"; "
			"exit 9",
			NULL};
	struct server_config s = {.name = "u",
				  .kind = SERVER_STDIO,
				  .command = "sh",
				  .args = args,
				  .nargs = 2};
	struct upstream_spec spec = {.server = &s, .token = TST_TOKEN};
	cr_assert_eq(upstream_ops_for(&s), &upstream_stdio);
	struct upstream *u = NULL;
	cr_assert_eq(upstream_stdio.open(&t.loop, &spec, &up_cbs, &t, &u), 0);
	/* The process appeared, from inside open. */
	cr_assert_eq(t.nlive, 1);
	cr_assert_str_eq(t.token, TST_TOKEN);
	tst_live_group = t.owned_pid;
	json_t *d = upstream_stdio.describe(u, false);
	cr_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "stdio");
	cr_assert_null(json_object_get(d, "pid"));
	json_decref(d);
	d = upstream_stdio.describe(u, true);
	cr_assert_eq(json_integer_value(json_object_get(d, "pid")),
		     t.owned_pid);
	json_decref(d);
	cr_assert_eq(upstream_stdio.send(u, "{\"a\":1}", 7, 5), 0);
	while (t.nfaults == 0)
		uv_run(&t.loop, UV_RUN_ONCE);
	/* A pipe cannot tell which request a message belongs to. */
	cr_assert_eq(t.related, 0);
	cr_assert_eq(t.nmsgs, 2);
	cr_assert_str_eq(t.msg, "{\"owner\":\"" TST_TOKEN "\"}");
	cr_assert_eq(t.nlogs, 1);
	char *tail = upstream_stdio.log_tail(u, 5);
	cr_assert_str_eq(tail, "oops");
	free(tail);
	cr_assert_eq(t.fault.kind, UPSTREAM_EXITED);
	cr_assert_eq(t.fault.exit_status, 9);
	cr_assert_str_eq(t.fault.text, "exited with code 9");
	/* Stop after the fault is allowed; the close follows once. */
	upstream_stdio.stop(u);
	while (t.nclosed == 0)
		uv_run(&t.loop, UV_RUN_ONCE);
	cr_assert_eq(t.ngone, 1);
	cr_assert(t.gone_at_gone);
	cr_assert_eq(t.nfaults, 1);
	tst_live_group = 0;
	uv_run(&t.loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t.loop), 0);
}

Test(supervisor, upstream_stdio_stopped_is_no_fault_and_url_servers_wait)
{
	struct up_tst t = {0};
	cr_assert_eq(uv_loop_init(&t.loop), 0);
	char *args[] = {"-c", "exec cat", NULL};
	struct server_config s = {.name = "u",
				  .kind = SERVER_STDIO,
				  .command = "sh",
				  .args = args,
				  .nargs = 2};
	struct upstream_spec spec = {.server = &s};
	struct upstream *u = NULL;
	cr_assert_eq(upstream_stdio.open(&t.loop, &spec, &up_cbs, &t, &u), 0);
	tst_live_group = t.owned_pid;
	upstream_stdio.stop(u);
	while (t.nclosed == 0)
		uv_run(&t.loop, UV_RUN_ONCE);
	cr_assert_eq(t.nfaults, 0);
	cr_assert_eq(t.ngone, 1);
	tst_live_group = 0;
	uv_run(&t.loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t.loop), 0);
	/* A missing command: an error, nothing owned, no callback. */
	struct up_tst t2 = {0};
	cr_assert_eq(uv_loop_init(&t2.loop), 0);
	s.command = "/nonexistent/mcpv-cmd";
	cr_assert_eq(upstream_stdio.open(&t2.loop, &spec, &up_cbs, &t2, &u),
		     -ENOENT);
	cr_assert_eq(t2.nlive, 0);
	uv_run(&t2.loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t2.loop), 0);
	/* Url servers: the HTTP transports. */
	s.kind = SERVER_HTTP_REMOTE;
	cr_assert_eq(upstream_ops_for(&s), &upstream_http);
	s.kind = SERVER_HTTP_LOCAL;
	cr_assert_eq(upstream_ops_for(&s), &upstream_http_local);
}

/* A process whose era is not known carries the 2026-07-28 side, whose
 * close takes one more loop turn: between the supervisor's end and the
 * owner's on_closed, what the owner asks (stop again, send, pause, the
 * log) must find no process instead of the freed supervisor. */
Test(supervisor, upstream_stdio_after_its_process_is_gone)
{
	struct up_tst t = {0};
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	cr_assert_eq(uv_loop_init(&t.loop), 0);
	char *args[] = {"-c", "exit 3", NULL};
	struct server_config s = {.name = "u",
				  .kind = SERVER_STDIO,
				  .command = "sh",
				  .args = args,
				  .nargs = 2};
	struct upstream_spec spec = {
		.server = &s, .token = TST_TOKEN, .probe_era = true};
	struct upstream *u = NULL;
	cr_assert_eq(upstream_stdio.open(&t.loop, &spec, &up_cbs, &t, &u), 0);
	tst_live_group = t.owned_pid;
	while (t.nfaults == 0)
		uv_run(&t.loop, UV_RUN_ONCE);
	upstream_stdio.stop(u);
	while (t.ngone == 0)
		uv_run(&t.loop, UV_RUN_ONCE);
	int asked = 0;
	while (t.nclosed == 0) {
		upstream_stdio.stop(u);
		upstream_stdio.pause(u, true);
		cr_assert_lt(upstream_stdio.send(u, "{\"a\":1}", 7, 5), 0);
		char *tail = upstream_stdio.log_tail(u, 5);
		cr_assert_not_null(tail);
		free(tail);
		asked++;
		uv_run(&t.loop, UV_RUN_ONCE);
	}
	cr_assert_gt(asked, 0, "no turn between the process's end and close");
	cr_assert_eq(t.nclosed, 1);
	tst_live_group = 0;
	uv_run(&t.loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t.loop), 0);
}
