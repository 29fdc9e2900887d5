/*
 * `mcpvisor check --start` (check_start.h): a private runtime of the
 * config, our own child on a fresh home, is asked for the tool list as a
 * host asks when it connects, which starts every server; its status then
 * says, per server, whether it started and how many tools it lists, or
 * why not. The runtime is stopped and its home removed; nothing of the
 * user's home (runtime, journal, tool cache) is touched.
 */
#include "cli/check_start.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "home/info.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/xmalloc.h"

#define CHECK_START_POLL_NS (20 * 1000 * 1000)
/* Status is asked this often while servers are still starting. */
#define CHECK_START_STATUS_NS (100 * 1000 * 1000)
/* Past the slowest server's startup timeout, the runtime's own timer has
 * failed it: this much more is only for the answer to arrive. */
#define CHECK_START_SLACK_MS 2000
/* What is shown of the runtime's own output when it does not come up. */
#define CHECK_START_LOG_TAIL 2000
/* Lines of a failed server's stderr shown under it. */
#define CHECK_START_STDERR_LINES 3

struct check_rt {
	char *home;
	char *log;
	pid_t pid; /* 0 once reaped */
};

static volatile sig_atomic_t check_interrupted;

static void check_signal_cb(int sig)
{
	(void)sig;
	check_interrupted = 1;
}

static void check_sleep(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

static int check_rm_cb(const char *path, const struct stat *sb, int flag,
		       struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* `mcpvisor serve` of file on a fresh home, with its output in a file
 * there: our child, stopped by the kernel (SIGTERM) if we die first, so
 * no runtime outlives the check. */
static int check_rt_spawn(struct check_rt *rt, const char *file)
{
	const char *tmp = getenv("TMPDIR");
	rt->home = xasprintf("%s/mcpvisor-check-XXXXXX",
			     tmp && tmp[0] ? tmp : "/tmp");
	if (mkdtemp(rt->home) == NULL) {
		int rc = -errno;
		free(rt->home);
		rt->home = NULL;
		return rc;
	}
	rt->log = xasprintf("%s/serve.log", rt->home);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	int out = open(rt->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (out < 0 || in < 0) {
		int rc = -errno;
		if (out >= 0)
			close(out);
		if (in >= 0)
			close(in);
		return rc;
	}
	char *argv[] = {exe,	      "serve",	    (char *)"--home", rt->home,
			"--config",   (char *)file, "--port",	      "0",
			"--no-watch", NULL};
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		dup2(in, STDIN_FILENO);
		dup2(out, STDOUT_FILENO);
		dup2(out, STDERR_FILENO);
		execv(exe, argv);
		_exit(127);
	}
	int rc = pid < 0 ? -errno : 0;
	close(out);
	close(in);
	rt->pid = pid > 0 ? pid : 0;
	return rc;
}

/* Waits for the runtime's socket to answer. -ECHILD: it exited; -EINTR:
 * the user interrupted; -ETIMEDOUT. */
static int check_rt_wait_up(struct check_rt *rt)
{
	uint64_t deadline = clock_now_ms() + CHECK_START_RUNTIME_MS;
	while (clock_now_ms() < deadline) {
		if (check_interrupted)
			return -EINTR;
		if (waitpid(rt->pid, NULL, WNOHANG) == rt->pid) {
			rt->pid = 0;
			return -ECHILD;
		}
		struct runtime_info info;
		int rc = runtime_info_read(rt->home, &info);
		bool up = rc == 0 && runtime_socket_answers(info.socket);
		runtime_info_free(&info);
		if (up)
			return 0;
		check_sleep(CHECK_START_POLL_NS);
	}
	return -ETIMEDOUT;
}

/* The runtime drains and stops (its servers with it); then its home
 * goes. */
static void check_rt_stop(struct check_rt *rt)
{
	if (rt->pid > 0) {
		kill(rt->pid, SIGTERM);
		uint64_t deadline = clock_now_ms() + CHECK_START_STOP_MS;
		for (;;) {
			pid_t r = waitpid(rt->pid, NULL, WNOHANG);
			if (r == rt->pid || (r < 0 && errno != EINTR))
				break;
			if (clock_now_ms() >= deadline) {
				kill(rt->pid, SIGKILL);
				waitpid(rt->pid, NULL, 0);
				break;
			}
			check_sleep(CHECK_START_POLL_NS);
		}
		rt->pid = 0;
	}
	if (rt->home)
		nftw(rt->home, check_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(rt->home);
	free(rt->log);
}

/* The end of the runtime's output, escaped: why it did not come up. */
static void check_rt_print_log(const struct check_rt *rt)
{
	char text[CHECK_START_LOG_TAIL + 1];
	int fd = open(rt->log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from =
		size > CHECK_START_LOG_TAIL ? size - CHECK_START_LOG_TAIL : 0;
	ssize_t n = pread(fd, text, CHECK_START_LOG_TAIL, from);
	close(fd);
	if (n <= 0)
		return;
	text[n] = '\0';
	char *shown = escape_str(text, ESCAPE_LINES);
	fprintf(stderr, "%s%s", shown,
		shown[0] && shown[strlen(shown) - 1] != '\n' ? "\n" : "");
	free(shown);
}

static bool check_is(json_t *o, const char *key, const char *value)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v && strcmp(v, value) == 0;
}

/* Whether an instance of some server is still starting. */
static bool check_any_starting(json_t *st)
{
	size_t i, j;
	json_t *sv, *in;
	json_array_foreach(json_object_get(st, "servers"), i, sv)
		json_array_foreach(
			json_object_get(sv, "instances"), j,
			in) if (check_is(in, "state", "starting")) return true;
	return false;
}

static json_t *check_result(const char *name, const char *result)
{
	return json_pack("{s:s,s:s}", "name", name, "result", result);
}

/* What a server's status object says of its start. */
static json_t *check_result_of(json_t *sv)
{
	const char *name = json_string_value(json_object_get(sv, "name"));
	if (name == NULL)
		name = "?";
	json_t *r;
	if (json_object_get(sv, "configError")) {
		r = check_result(name, "not started");
		json_object_set_new(r, "error",
				    json_string("its config has an error"));
		return r;
	}
	if (json_is_true(json_object_get(sv, "disabled"))) {
		r = check_result(name, "not started");
		json_object_set_new(r, "error", json_string("disabled"));
		return r;
	}
	json_t *insts = json_object_get(sv, "instances");
	json_t *in = json_array_get(insts, 0);
	/* A failed instance says more than a good one of another scope. */
	size_t i;
	json_t *x;
	json_array_foreach(insts, i, x) if (!check_is(x, "state", "running"))
		in = x;
	if (in == NULL) {
		json_t *lf = json_object_get(sv, "lastFailure");
		if (lf == NULL) {
			r = check_result(name, "not started");
			json_object_set_new(
				r, "error",
				json_string("nothing asked for it (a hidden "
					    "server starts when a client "
					    "reads its resources)"));
			return r;
		}
		r = check_result(name, "failed");
		json_object_set(r, "error", json_object_get(lf, "reason"));
		if (json_object_get(lf, "stderr"))
			json_object_set(r, "stderr",
					json_object_get(lf, "stderr"));
		return r;
	}
	const char *state = json_string_value(json_object_get(in, "state"));
	json_t *errs = json_object_get(in, "listErrors");
	if (state && strcmp(state, "running") == 0 &&
	    json_object_size(errs) == 0) {
		r = check_result(name, "ok");
		json_object_set(
			r, "tools",
			json_object_get(json_object_get(in, "lists"), "tools"));
		return r;
	}
	if (state && strcmp(state, "needs_auth") == 0) {
		r = check_result(name, "needs_auth");
		json_t *hint =
			json_object_get(json_object_get(in, "auth"), "hint");
		json_object_set(r, "error",
				hint ? hint : json_object_get(in, "error"));
		return r;
	}
	r = check_result(name, "failed");
	if (state && strcmp(state, "running") == 0) {
		const char *k;
		json_t *v;
		json_object_foreach(errs, k, v)
		{
			json_object_set(r, "error", v);
			break;
		}
	} else if (state && strcmp(state, "starting") == 0) {
		json_object_set_new(r, "error",
				    json_string("still starting when its "
						"startup timeout passed"));
	} else {
		json_object_set(r, "error", json_object_get(in, "error"));
	}
	if (json_object_get(in, "stderr"))
		json_object_set(r, "stderr", json_object_get(in, "stderr"));
	return r;
}

/* With the runtime up: a tool list as a host asks for one, which starts
 * every server; then status until none is starting. */
static json_t *check_rt_results(struct check_rt *rt, long long wait_ms)
{
	struct client *c;
	if (client_open(rt->home, &c) != CLI_OK)
		return NULL;
	json_t *resp = NULL;
	if (client_request(c, "tools/list", NULL, &resp) != CLI_OK) {
		client_close(c);
		return NULL;
	}
	json_decref(resp);
	uint64_t deadline =
		clock_now_ms() + (uint64_t)wait_ms + CHECK_START_SLACK_MS;
	json_t *st = NULL;
	for (;;) {
		json_decref(st);
		st = NULL;
		if (client_get_json(c, "/status?verbose=1", &st) != CLI_OK)
			break;
		if (!check_any_starting(st) || clock_now_ms() >= deadline ||
		    check_interrupted)
			break;
		check_sleep(CHECK_START_STATUS_NS);
	}
	client_close(c);
	if (st == NULL)
		return NULL;
	/* What servers wrote is shown, not sent to the terminal. */
	cli_escape_json(st);
	json_t *out = json_array();
	size_t i;
	json_t *sv;
	json_array_foreach(json_object_get(st, "servers"), i, sv)
		json_array_append_new(out, check_result_of(sv));
	json_decref(st);
	return out;
}

json_t *check_start_run(const char *file, long long wait_ms)
{
	struct check_rt rt = {0};
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = check_signal_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	check_interrupted = 0;
	json_t *out = NULL;
	int rc = check_rt_spawn(&rt, file);
	if (rc < 0) {
		fprintf(stderr,
			"mcpvisor check: cannot start a runtime to start the "
			"servers in: %s\n",
			strerror(-rc));
		goto done;
	}
	rc = check_rt_wait_up(&rt);
	if (rc == -EINTR)
		goto done;
	if (rc < 0) {
		fprintf(stderr,
			"mcpvisor check: the runtime that starts the servers "
			"%s; its output:\n",
			rc == -ECHILD ? "exited" : "did not come up");
		check_rt_print_log(&rt);
		goto done;
	}
	out = check_rt_results(&rt, wait_ms);
	if (out == NULL && !check_interrupted)
		fprintf(stderr, "mcpvisor check: the runtime that starts the "
				"servers did not answer\n");
done:
	check_rt_stop(&rt);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (check_interrupted) {
		fprintf(stderr, "mcpvisor check: interrupted\n");
		json_decref(out);
		out = NULL;
	}
	return out;
}

int check_start_print(const char *file, json_t *results, int w)
{
	size_t i, ok = 0, bad = 0, skipped = 0;
	json_t *r;
	printf("\nstarting each server (a private runtime of this config, "
	       "stopped after):\n");
	json_array_foreach(results, i, r)
	{
		const char *name =
			json_string_value(json_object_get(r, "name"));
		const char *result =
			json_string_value(json_object_get(r, "result"));
		const char *err =
			json_string_value(json_object_get(r, "error"));
		if (strcmp(result, "ok") == 0) {
			ok++;
			printf("%-*s ok, %lld tool(s)\n", w, name,
			       json_integer_value(json_object_get(r, "tools")));
			continue;
		}
		if (strcmp(result, "not started") == 0)
			skipped++;
		else
			bad++;
		printf("%-*s %s: %s\n", w, name,
		       strcmp(result, "needs_auth") == 0 ? "needs authorization"
							 : result,
		       err ? err : "(no reason given)");
		const char *tail =
			json_string_value(json_object_get(r, "stderr"));
		for (int n = 0; tail && *tail && n < CHECK_START_STDERR_LINES;
		     n++) {
			size_t len = strcspn(tail, "\n");
			printf("%-*s   %.*s\n", w, "", (int)len, tail);
			tail += len + (tail[len] == '\n');
		}
	}
	printf("%s: %zu started and listed their tools, %zu failed", file, ok,
	       bad);
	if (skipped)
		printf(", %zu not started", skipped);
	printf("\n");
	return bad ? 1 : 0;
}
