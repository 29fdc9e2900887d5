/*
 * Unit tests for the ownership journal: the file (round trip, atomic
 * replace, mode, corrupt input) and reconciliation against real processes
 * (leaders, group members and orphaned grandchildren, with and without the
 * owner token), each test in its own temp dir and as a child subreaper.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
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

#include <uv.h>

#include "journal/journal.h"
#include "proc/owner.h"
#include "util/xmalloc.h"

#define TST_MAX_PIDS 16
#define TST_LINE_MAX 64
#define TST_WAIT_MS 5000
#define TST_GRACE_MS 2000

static char tst_dir[PATH_MAX];
/* Everything a test started and has not reaped: the suite's fini kills
 * these by pid, so a test that fails half-way leaves nothing running. */
static pid_t tst_pids[TST_MAX_PIDS];
static int tst_npids;

static void tst_track(pid_t pid)
{
	cr_assert_lt(tst_npids, TST_MAX_PIDS);
	tst_pids[tst_npids++] = pid;
}

static void tst_untrack(pid_t pid)
{
	for (int i = 0; i < tst_npids; i++) {
		if (tst_pids[i] == pid) {
			tst_pids[i] = tst_pids[--tst_npids];
			return;
		}
	}
}

static void tst_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t tst_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Reaps pid (a child of ours, directly or as subreaper) within a bound;
 * returns its wait status, or -1 if it did not end. */
static int tst_reap(pid_t pid)
{
	for (int waited = 0; waited < TST_WAIT_MS; waited += 10) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			tst_untrack(pid);
			return st;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		tst_sleep_ms(10);
	}
	return -1;
}

static void tst_kill_leftovers(void)
{
	for (int i = 0; i < tst_npids; i++)
		kill(tst_pids[i], SIGKILL);
	for (int waited = 0; tst_npids > 0 && waited < TST_WAIT_MS;
	     waited += 10) {
		for (int i = tst_npids - 1; i >= 0; i--) {
			pid_t pid = tst_pids[i];
			if (waitpid(pid, NULL, WNOHANG) == pid)
				tst_untrack(pid);
		}
		if (tst_npids)
			tst_sleep_ms(10);
	}
}

static void tst_rm_dir(void)
{
	DIR *d = opendir(tst_dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		char *p = xasprintf("%s/%s", tst_dir, de->d_name);
		unlink(p);
		free(p);
	}
	closedir(d);
	rmdir(tst_dir);
}

static void tst_setup(void)
{
	snprintf(tst_dir, sizeof tst_dir, "/tmp/mcpv-journal-XXXXXX");
	cr_assert_not_null(mkdtemp(tst_dir));
	/* Orphaned grandchildren come back to us, so we can reap them. */
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	tst_npids = 0;
}

static void tst_teardown(void)
{
	tst_kill_leftovers();
	tst_rm_dir();
}

TestSuite(journal, .init = tst_setup, .fini = tst_teardown, .timeout = 30);

static char *tst_path(const char *name)
{
	return xasprintf("%s/%s", tst_dir, name);
}

static void tst_write_file(const char *name, const char *data, size_t len)
{
	char *p = tst_path(name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
	free(p);
}

static json_t *tst_load_journal(void)
{
	char *p = tst_path(JOURNAL_FILE);
	json_error_t err;
	json_t *root = json_load_file(p, 0, &err);
	free(p);
	cr_assert_not_null(root, "journal unreadable: %s", err.text);
	cr_assert_eq(json_integer_value(json_object_get(root, "format")), 1);
	cr_assert(json_is_array(json_object_get(root, "entries")));
	return root;
}

static size_t tst_file_entries(void)
{
	json_t *root = tst_load_journal();
	size_t n = json_array_size(json_object_get(root, "entries"));
	json_decref(root);
	return n;
}

/* Fields of /proc/PID/stat after the last ')', by number (3 = state). */
static bool tst_stat_field(pid_t pid, int want, char *out, size_t size)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *s = strrchr(buf, ')');
	if (!s)
		return false;
	char *save = NULL;
	int field = 2;
	for (char *t = strtok_r(s + 1, " \n", &save); t;
	     t = strtok_r(NULL, " \n", &save)) {
		if (++field == want) {
			snprintf(out, size, "%s", t);
			return true;
		}
	}
	return false;
}

static uint64_t tst_start_time(pid_t pid)
{
	char v[32];
	cr_assert(tst_stat_field(pid, 22, v, sizeof v), "no stat for %d", pid);
	return strtoull(v, NULL, 10);
}

static pid_t tst_pgrp(pid_t pid)
{
	char v[32];
	cr_assert(tst_stat_field(pid, 5, v, sizeof v), "no stat for %d", pid);
	return (pid_t)atol(v);
}

/* Running, not a zombie. */
static bool tst_alive(pid_t pid)
{
	char v[8];
	return tst_stat_field(pid, 3, v, sizeof v) && v[0] != 'Z';
}

/* Size of /proc/PID/environ, or -1. */
static long tst_environ_size(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	long total = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		total += n;
	close(fd);
	return total;
}

/* Starts `/bin/sh -c script` as a session and group leader, stdout on a
 * pipe, with MCPVISOR_OWNER=token in its environment when token is set. */
static pid_t tst_spawn(const char *script, const char *token, int *out_fd)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	char *owner = token ? xasprintf("%s=%s", PROC_OWNER_ENV, token) : NULL;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setsid();
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		char *argv[] = {"sh", "-c", (char *)script, NULL};
		char *envp[] = {"PATH=/usr/bin:/bin", owner, NULL};
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	free(owner);
	close(p[1]);
	tst_track(pid);
	*out_fd = p[0];
	return pid;
}

static void tst_read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;
	uint64_t deadline = tst_now_ms() + TST_WAIT_MS;
	while (n + 1 < size) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int left = (int)(deadline - tst_now_ms());
		cr_assert(left > 0 && poll(&pfd, 1, left) == 1,
			  "no line from child");
		char c;
		cr_assert_eq(read(fd, &c, 1), 1, "child closed its stdout");
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = '\0';
}

static pid_t tst_read_pid(int fd)
{
	char line[TST_LINE_MAX];
	tst_read_line(fd, line, sizeof line);
	long v = atol(line);
	cr_assert_gt(v, 0, "bad pid line '%s'", line);
	return (pid_t)v;
}

static struct journal *tst_open(void)
{
	struct journal *j = NULL;
	cr_assert_eq(journal_open(tst_dir, &j), 0);
	return j;
}

/* A process entry, through the typed API. */
static int tst_add(struct journal *j, pid_t pid, pid_t pgid, uint64_t start,
		   const char *tok, const char *key)
{
	struct upstream_owned o = {.kind = UPSTREAM_OWNED_PROCESS,
				   .token = tok,
				   .pid = pid,
				   .pgid = pgid,
				   .start_time = start};
	return journal_add_owned(j, &o, key);
}

static int tst_remove(struct journal *j, pid_t pid)
{
	struct upstream_owned o = {.kind = UPSTREAM_OWNED_PROCESS, .pid = pid};
	return journal_remove_owned(j, &o);
}

/* A journal with one entry for leader's group (token tok), reconciled
 * with grace_ms: its report. */
static struct journal_report tst_reconcile_one(pid_t leader, uint64_t start,
					       const char *tok,
					       const char *name,
					       unsigned grace_ms)
{
	struct journal *j = tst_open();
	cr_assert_eq(tst_add(j, leader, leader, start, tok, name), 0);
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, grace_ms, &r), 0);
	journal_free(j);
	return r;
}

static void tst_assert_signalled(pid_t pid, int sig)
{
	int st = tst_reap(pid);
	cr_assert_neq(st, -1, "pid %d did not end", pid);
	cr_assert(WIFSIGNALED(st), "pid %d exited with status %d", pid, st);
	cr_assert_eq(WTERMSIG(st), sig, "pid %d ended by signal %d", pid,
		     WTERMSIG(st));
}

Test(journal, new_token_is_random_hex)
{
	char a[JOURNAL_TOKEN_LEN + 1], b[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(a);
	journal_new_token(b);
	cr_assert_eq(strlen(a), JOURNAL_TOKEN_LEN);
	cr_assert_eq(strspn(a, "0123456789abcdef"), JOURNAL_TOKEN_LEN);
	cr_assert_str_neq(a, b);
}

Test(journal, round_trip_survives_reopen)
{
	char *path = tst_path(JOURNAL_FILE);
	struct journal *j = tst_open();
	cr_assert_eq(journal_count(j), 0);
	cr_assert_eq(access(path, F_OK), -1, "open alone wrote a file");

	char tok[3][JOURNAL_TOKEN_LEN + 1];
	for (int i = 0; i < 3; i++) {
		journal_new_token(tok[i]);
		char *key = xasprintf("server-%d", i);
		cr_assert_eq(tst_add(j, 1000 + i, 1000 + i,
				     5000000000ULL + (uint64_t)i, tok[i], key),
			     0);
		free(key);
	}
	cr_assert_eq(journal_count(j), 3);
	cr_assert_eq(tst_remove(j, 1001), 0);
	cr_assert_eq(tst_remove(j, 4242), -ENOENT);
	cr_assert_eq(journal_count(j), 2);

	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0600);
	/* The atomic replace leaves only the journal behind. */
	DIR *d = opendir(tst_dir);
	cr_assert_not_null(d);
	int files = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		cr_assert_str_eq(de->d_name, JOURNAL_FILE);
		files++;
	}
	closedir(d);
	cr_assert_eq(files, 1);

	json_t *root = tst_load_journal();
	json_t *entries = json_object_get(root, "entries");
	cr_assert_eq(json_array_size(entries), 2);
	int idx[2] = {0, 2};
	for (size_t i = 0; i < 2; i++) {
		json_t *e = json_array_get(entries, i);
		int k = idx[i];
		cr_assert_eq(json_integer_value(json_object_get(e, "pid")),
			     1000 + k);
		cr_assert_eq(json_integer_value(json_object_get(e, "pgid")),
			     1000 + k);
		cr_assert_eq(
			json_integer_value(json_object_get(e, "startTime")),
			5000000000LL + k);
		cr_assert_str_eq(json_string_value(json_object_get(e, "token")),
				 tok[k]);
		char key[32];
		snprintf(key, sizeof key, "server-%d", k);
		cr_assert_str_eq(json_string_value(json_object_get(e, "key")),
				 key);
	}
	json_decref(root);
	journal_free(j);

	j = tst_open();
	cr_assert_eq(journal_count(j), 2);
	/* A reused pid replaces its entry rather than adding one. */
	cr_assert_eq(tst_add(j, 1000, 1000, 7, tok[1], "again"), 0);
	cr_assert_eq(journal_count(j), 2);
	cr_assert_eq(tst_remove(j, 1002), 0);
	journal_free(j);

	j = tst_open();
	cr_assert_eq(journal_count(j), 1);
	journal_free(j);
	root = tst_load_journal();
	json_t *e = json_array_get(json_object_get(root, "entries"), 0);
	cr_assert_eq(json_integer_value(json_object_get(e, "startTime")), 7);
	cr_assert_str_eq(json_string_value(json_object_get(e, "key")), "again");
	json_decref(root);
	journal_free(NULL);
	free(path);
}

Test(journal, add_rejects_bad_input_and_bounds_the_key)
{
	struct journal *j = tst_open();
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	cr_assert_eq(tst_add(j, 0, 1, 1, tok, "k"), -EINVAL);
	cr_assert_eq(tst_add(j, 1, -1, 1, tok, "k"), -EINVAL);
	cr_assert_eq(tst_add(j, 1, 1, UINT64_MAX, tok, "k"), -EINVAL);
	cr_assert_eq(tst_add(j, 1, 1, 1, "abc", "k"), -EINVAL);
	cr_assert_eq(tst_add(j, 1, 1, 1, NULL, "k"), -EINVAL);
	char upper[JOURNAL_TOKEN_LEN + 1];
	memset(upper, 'A', JOURNAL_TOKEN_LEN);
	upper[JOURNAL_TOKEN_LEN] = '\0';
	cr_assert_eq(tst_add(j, 1, 1, 1, upper, "k"), -EINVAL);
	cr_assert_eq(journal_count(j), 0);

	char long_key[1000];
	memset(long_key, 'x', sizeof long_key - 1);
	long_key[sizeof long_key - 1] = '\0';
	long_key[3] = '\n';
	cr_assert_eq(tst_add(j, 9, 9, 1, tok, long_key), 0);
	cr_assert_eq(tst_add(j, 10, 10, 1, tok, "\xff\xfe bad utf8"), 0);
	journal_free(j);

	json_t *root = tst_load_journal();
	json_t *entries = json_object_get(root, "entries");
	const char *k = json_string_value(
		json_object_get(json_array_get(entries, 0), "key"));
	cr_assert_not_null(k);
	cr_assert_lt(strlen(k), 200);
	cr_assert_eq(k[3], '?');
	cr_assert_not_null(json_string_value(
		json_object_get(json_array_get(entries, 1), "key")));
	json_decref(root);
	j = tst_open();
	cr_assert_eq(journal_count(j), 2);
	journal_free(j);
}

#define TST_TOK "0123456789abcdef0123456789abcdef"
#define TST_GOOD                                                               \
	"{\"pid\":77,\"pgid\":77,\"startTime\":12,\"key\":\"k\","              \
	"\"token\":\"" TST_TOK "\"}"

/* A file text {"format":1,"entries":[...]} from entry texts. */
static char *tst_journal_text(const char **entries, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		json_error_t err;
		json_t *e = json_loads(entries[i], JSON_DECODE_ANY, &err);
		cr_assert_not_null(e, "bad fixture %zu: %s", i, err.text);
		json_array_append_new(arr, e);
	}
	json_t *root = json_pack("{s:i, s:o}", "format", 1, "entries", arr);
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return text;
}

/* The good entry with one field replaced (json NULL: removed). */
static char *tst_entry_with(const char *field, const char *json)
{
	json_t *e = json_loads(TST_GOOD, 0, NULL);
	if (json) {
		json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
		cr_assert_not_null(v, "bad fixture %s", json);
		json_object_set_new(e, field, v);
	} else
		json_object_del(e, field);
	char *text = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	return text;
}

static void tst_assert_reads_empty(const char *text, size_t len,
				   const char *what)
{
	tst_write_file(JOURNAL_FILE, text, len);
	struct journal *j = NULL;
	cr_assert_eq(journal_open(tst_dir, &j), 0, "%s", what);
	cr_assert_eq(journal_count(j), 0, "%s", what);
	/* Reconciling a journal with nothing valid in it signals nothing
	 * and leaves a clean file. */
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, 0, &r), 0);
	cr_assert_eq(r.entries + r.stopped + r.left_alone + r.gone, 0);
	cr_assert_eq(tst_file_entries(), 0, "%s", what);
	journal_free(j);
}

Test(journal, corrupt_files_read_as_empty)
{
	static const char *bad[] = {
		"",
		"garbage{{{",
		"\x01\x02\x03",
		"[]",
		"null",
		"{\"format\":2,\"entries\":[" TST_GOOD "]}",
		"{\"format\":\"1\",\"entries\":[" TST_GOOD "]}",
		"{\"entries\":[" TST_GOOD "]}",
		"{\"format\":1,\"entries\":{}}",
		"{\"format\":1,\"entries\":[" TST_GOOD "],\"format\":1}",
		"{\"format\":1,\"entries\":[" TST_GOOD "]",
		"{\"format\":1,\"entries\":[" TST_GOOD "]}\xff",
		"{\"format\":1,\"entries\":[{\"pid\":77,\"pgid\":77,"
		"\"startTime\":12,\"token\":\"" TST_TOK "\","
		"\"key\":\"a\\u0000b\"}]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		tst_assert_reads_empty(bad[i], strlen(bad[i]), bad[i]);

	/* Every entry wrong in one field. */
	static const struct {
		const char *field;
		const char *json;
	} muts[] = {
		{"pid", "\"77\""},
		{"pid", "0"},
		{"pid", "-5"},
		{"pid", "2147483648"},
		{"pid", "7.5"},
		{"pid", NULL},
		{"pgid", "0"},
		{"pgid", "null"},
		{"startTime", "-1"},
		{"startTime", "1.5"},
		{"startTime", "\"12\""},
		{"token", "\"0123\""},
		{"token", "\"" TST_TOK "0\""},
		{"token", "\"g123456789abcdef0123456789abcdef\""},
		{"token", "\"0123456789ABCDEF0123456789abcdef\""},
		{"token", "\"0123456789abcdef 123456789abcdef\""},
		{"token", "12"},
		{"token", NULL},
		{"key", "5"},
		{"key", NULL},
	};
	size_t n = sizeof muts / sizeof muts[0];
	const char *entries[sizeof muts / sizeof muts[0] + 4];
	char *owned[sizeof muts / sizeof muts[0]];
	for (size_t i = 0; i < n; i++) {
		owned[i] = tst_entry_with(muts[i].field, muts[i].json);
		entries[i] = owned[i];
	}
	entries[n] = "1";
	entries[n + 1] = "\"x\"";
	entries[n + 2] = "null";
	entries[n + 3] = "[]";
	char *text = tst_journal_text(entries, n + 4);
	tst_assert_reads_empty(text, strlen(text), "invalid entries");
	free(text);
	for (size_t i = 0; i < n; i++)
		free(owned[i]);

	/* Over the size bound: never read whole, overwritten on write. */
	size_t big = JOURNAL_MAX_BYTES + 1;
	char *data = xmalloc(big);
	memset(data, ' ', big);
	static const char head[] = "{\"format\":1,\"entries\":[" TST_GOOD "]}";
	memcpy(data, head, strlen(head));
	tst_write_file(JOURNAL_FILE, data, big);
	free(data);
	struct journal *j = tst_open();
	cr_assert_eq(journal_count(j), 0);
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	cr_assert_eq(tst_add(j, 5, 5, 1, tok, "k"), 0);
	journal_free(j);
	cr_assert_eq(tst_file_entries(), 1);
}

Test(journal, valid_entries_survive_invalid_neighbours)
{
	const char *entries[] = {
		TST_GOOD, "{\"pid\":\"x\"}",
		"{\"pid\":78,\"pgid\":78,\"startTime\":0,\"key\":\"\","
		"\"token\":\"" TST_TOK "\"}",
		TST_GOOD, /* the same pid twice */
	};
	char *text = tst_journal_text(entries, 4);
	tst_write_file(JOURNAL_FILE, text, strlen(text));
	free(text);
	struct journal *j = tst_open();
	cr_assert_eq(journal_count(j), 2);
	journal_free(j);
}

Test(journal, reconcile_of_absent_or_empty_journal_does_nothing)
{
	char *path = tst_path(JOURNAL_FILE);
	struct journal *j = tst_open();
	struct journal_report r;
	memset(&r, 0xff, sizeof r);
	cr_assert_eq(journal_reconcile(j, TST_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries, 0);
	cr_assert_eq(r.stopped, 0);
	cr_assert_eq(r.left_alone, 0);
	cr_assert_eq(r.gone, 0);
	cr_assert_eq(access(path, F_OK), -1);
	journal_free(j);

	const char *empty = "{\"format\":1,\"entries\":[]}";
	tst_write_file(JOURNAL_FILE, empty, strlen(empty));
	struct stat before, after;
	cr_assert_eq(stat(path, &before), 0);
	j = tst_open();
	cr_assert_eq(journal_reconcile(j, TST_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries + r.stopped + r.left_alone + r.gone, 0);
	journal_free(j);
	cr_assert_eq(stat(path, &after), 0);
	cr_assert_eq(before.st_ino, after.st_ino, "file was rewritten");
	free(path);
}

Test(journal, reconcile_stops_leader_and_group_member_with_token)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	int fd;
	pid_t leader = tst_spawn("sleep 30 & echo $!; exec sleep 30", tok, &fd);
	pid_t member = tst_read_pid(fd);
	tst_track(member);
	close(fd);
	cr_assert_eq(tst_pgrp(member), leader);

	struct journal *j = tst_open();
	cr_assert_eq(tst_add(j, leader, leader, tst_start_time(leader), tok,
			     "demo/leader"),
		     0);
	journal_free(j);

	/* As the next serve after a crash would. */
	j = tst_open();
	cr_assert_eq(journal_count(j), 1);
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, TST_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries, 1);
	cr_assert_eq(r.stopped, 2);
	cr_assert_eq(r.left_alone, 0);
	cr_assert_eq(r.gone, 0);
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);
	cr_assert_eq(tst_file_entries(), 0);

	tst_assert_signalled(leader, SIGTERM);
	tst_assert_signalled(member, SIGTERM);
}

Test(journal, reconcile_stops_orphaned_grandchild_by_token)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	int fd;
	pid_t leader = tst_spawn("sleep 30 & echo $!; exec sleep 30", tok, &fd);
	pid_t grandchild = tst_read_pid(fd);
	tst_track(grandchild);
	close(fd);
	uint64_t st = tst_start_time(leader);

	struct journal *j = tst_open();
	cr_assert_eq(tst_add(j, leader, leader, st, tok, "demo"), 0);
	/* The leader dies; its child stays, in its group, with the token. */
	kill(leader, SIGKILL);
	tst_assert_signalled(leader, SIGKILL);
	cr_assert(tst_alive(grandchild));
	cr_assert_eq(tst_pgrp(grandchild), leader);

	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, TST_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries, 1);
	cr_assert_eq(r.stopped, 1);
	cr_assert_eq(r.left_alone, 0);
	cr_assert_eq(r.gone, 0);
	journal_free(j);
	tst_assert_signalled(grandchild, SIGTERM);
}

Test(journal, reused_pid_with_other_start_time_is_left_alone)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	int fd;
	pid_t other = tst_spawn("echo ready; exec sleep 30", NULL, &fd);
	char line[TST_LINE_MAX];
	tst_read_line(fd, line, sizeof line);
	close(fd);

	struct journal *j = tst_open();
	cr_assert_eq(tst_add(j, other, other, tst_start_time(other) + 1, tok,
			     "demo"),
		     0);
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, TST_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries, 1);
	cr_assert_eq(r.stopped, 0);
	cr_assert_eq(r.left_alone, 1);
	cr_assert_eq(r.gone, 1);
	journal_free(j);
	cr_assert(tst_alive(other), "a stranger was signalled");
	cr_assert_eq(waitpid(other, NULL, WNOHANG), 0);
}

/* Waits until env(1) has exec'd sleep with its new environment. */
static void tst_await_environ_size(pid_t pid, long size)
{
	uint64_t deadline = tst_now_ms() + TST_WAIT_MS;
	while (tst_environ_size(pid) != size) {
		cr_assert_lt(tst_now_ms(), deadline, "env never ran");
		tst_sleep_ms(10);
	}
}

Test(journal, group_members_without_the_token_are_left_alone)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	int fd;
	/* One member with a clean environment, one with a near miss. */
	pid_t leader = tst_spawn("/usr/bin/env -i /bin/sleep 30 & echo $!; "
				 "/usr/bin/env -i "
				 "MCPVISOR_OWNER=${MCPVISOR_OWNER}0 "
				 "/bin/sleep 30 & echo $!; exec sleep 30",
				 tok, &fd);
	pid_t clean = tst_read_pid(fd);
	tst_track(clean);
	pid_t near = tst_read_pid(fd);
	tst_track(near);
	close(fd);
	tst_await_environ_size(clean, 0);
	tst_await_environ_size(
		near, (long)(sizeof PROC_OWNER_ENV + JOURNAL_TOKEN_LEN + 2));
	cr_assert_eq(tst_pgrp(clean), leader);
	cr_assert_eq(tst_pgrp(near), leader);

	struct journal_report r = tst_reconcile_one(
		leader, tst_start_time(leader), tok, "demo", TST_GRACE_MS);
	cr_assert_eq(r.stopped, 1);
	cr_assert_eq(r.left_alone, 2);

	tst_assert_signalled(leader, SIGTERM);
	cr_assert(tst_alive(clean), "a member without the token was hit");
	cr_assert(tst_alive(near), "a member with another token was hit");
	kill(clean, SIGKILL);
	kill(near, SIGKILL);
	tst_assert_signalled(clean, SIGKILL);
	tst_assert_signalled(near, SIGKILL);
}

Test(journal, term_ignoring_process_is_killed_after_grace)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	int fd;
	pid_t leader =
		tst_spawn("trap '' TERM; echo ready; exec sleep 30", tok, &fd);
	char line[TST_LINE_MAX];
	tst_read_line(fd, line, sizeof line);
	cr_assert_str_eq(line, "ready");
	close(fd);

	uint64_t t0 = tst_now_ms();
	struct journal_report r = tst_reconcile_one(
		leader, tst_start_time(leader), tok, "stubborn", 200);
	uint64_t took = tst_now_ms() - t0;
	cr_assert_eq(r.stopped, 1);
	cr_assert_geq(took, 200, "SIGKILL came before the grace: %lu ms",
		      (unsigned long)took);
	cr_assert_lt(took, 2000);
	tst_assert_signalled(leader, SIGKILL);
}

Test(journal, entry_whose_processes_are_gone_counts_as_gone)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	int fd;
	pid_t leader = tst_spawn("echo ready; exec sleep 30", tok, &fd);
	char line[TST_LINE_MAX];
	tst_read_line(fd, line, sizeof line);
	close(fd);
	uint64_t st = tst_start_time(leader);
	kill(leader, SIGKILL);
	tst_assert_signalled(leader, SIGKILL);

	struct journal_report r =
		tst_reconcile_one(leader, st, tok, "gone", TST_GRACE_MS);
	cr_assert_eq(r.entries, 1);
	cr_assert_eq(r.stopped, 0);
	cr_assert_eq(r.gone, 1);
	cr_assert_eq(tst_file_entries(), 0);
}

Test(journal, reconcile_stops_setsid_child_outside_the_group)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	int fd;
	/* A daemon-style child: its own session, so not in the group. */
	pid_t leader = tst_spawn("setsid sleep 30 </dev/null >/dev/null 2>&1 & "
				 "echo $!; exec sleep 30",
				 tok, &fd);
	pid_t daemon = tst_read_pid(fd);
	tst_track(daemon);
	close(fd);
	uint64_t deadline = tst_now_ms() + TST_WAIT_MS;
	while (tst_pgrp(daemon) != daemon) {
		cr_assert_lt(tst_now_ms(), deadline, "setsid never ran");
		tst_sleep_ms(10);
	}

	struct journal_report r =
		tst_reconcile_one(leader, tst_start_time(leader), tok,
				  "daemonizer", TST_GRACE_MS);
	cr_assert_eq(r.entries, 1);
	cr_assert_eq(r.stopped, 2);
	cr_assert_eq(r.left_alone, 0);
	tst_assert_signalled(leader, SIGTERM);
	tst_assert_signalled(daemon, SIGTERM);
}

Test(journal, reconcile_stops_a_process_with_a_reserved_token)
{
	/* The runtime died after handing out the token and before the
	 * entry reached the file: the token alone proves the process ours. */
	char tok[JOURNAL_TOKEN_LEN + 1], other[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	journal_new_token(other);
	int fd, fd2;
	pid_t ours = tst_spawn("echo ready; exec sleep 30", tok, &fd);
	pid_t theirs = tst_spawn("echo ready; exec sleep 30", other, &fd2);
	char line[TST_LINE_MAX];
	tst_read_line(fd, line, sizeof line);
	tst_read_line(fd2, line, sizeof line);
	close(fd);
	close(fd2);
	char *text = xasprintf("{\"format\":1,\"entries\":[],"
			       "\"reserved\":[\"%s\",\"%s\"]}",
			       "0123456789abcdef0123456789abcdef", tok);
	tst_write_file(JOURNAL_FILE, text, strlen(text));
	free(text);

	struct journal *j = tst_open();
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, TST_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries, 0);
	cr_assert_eq(r.stopped, 1);
	journal_free(j);
	tst_assert_signalled(ours, SIGTERM);
	cr_assert(tst_alive(theirs), "a process with another token was hit");
	json_t *root = tst_load_journal();
	cr_assert_eq(json_array_size(json_object_get(root, "reserved")), 0);
	json_decref(root);
}

/* Whether the file's reserved list holds token. */
static bool tst_file_reserves(const char *token)
{
	json_t *root = tst_load_journal();
	json_t *res = json_object_get(root, "reserved");
	bool found = false;
	for (size_t i = 0; i < json_array_size(res); i++)
		found |= strcmp(json_string_value(json_array_get(res, i)),
				token) == 0;
	json_decref(root);
	return found;
}

Test(journal, a_token_is_on_disk_before_it_is_handed_out)
{
	/* Without a loop: written at once. */
	struct journal *j = tst_open();
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_take_token(j, tok);
	cr_assert_eq(strspn(tok, "0123456789abcdef"), JOURNAL_TOKEN_LEN);
	cr_assert(tst_file_reserves(tok));
	cr_assert_eq(journal_stats(j).sync_writes, 1);
	journal_free(j);

	/* With a loop: the reserve is written off the loop first, and
	 * tokens come from it without another write. */
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	j = tst_open();
	journal_attach(j, &loop);
	uv_run(&loop, UV_RUN_DEFAULT);
	struct journal_stats s = journal_stats(j);
	cr_assert_eq(s.writes, 1);
	cr_assert_eq(s.sync_writes, 0);
	for (int i = 0; i < 10; i++) {
		journal_take_token(j, tok);
		cr_assert(tst_file_reserves(tok), "token %d not on disk", i);
	}
	cr_assert_eq(journal_stats(j).writes, 1);
	journal_detach(j);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	journal_free(j);
	char a[JOURNAL_TOKEN_LEN + 1], b[JOURNAL_TOKEN_LEN + 1];
	journal_take_token(NULL, a);
	journal_take_token(NULL, b);
	cr_assert_str_neq(a, b);
}

#define TST_BURST 50

Test(journal, changes_in_one_loop_turn_make_one_write)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct journal *j = tst_open();
	journal_attach(j, &loop);
	uv_run(&loop, UV_RUN_DEFAULT);
	unsigned base = journal_stats(j).writes;

	/* One turn: 50 starts, as a burst of new sessions would make. */
	for (int i = 0; i < TST_BURST; i++) {
		char tok[JOURNAL_TOKEN_LEN + 1];
		journal_take_token(j, tok);
		cr_assert_eq(tst_add(j, 2000 + i, 2000 + i, 1 + (uint64_t)i,
				     tok, "burst"),
			     0);
	}
	cr_assert_eq(journal_stats(j).writes, base, "written on the loop");
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(journal_stats(j).writes, base + 1);
	cr_assert_eq(journal_stats(j).sync_writes, 0);
	cr_assert_eq(tst_file_entries(), TST_BURST);

	/* And 50 exits in one turn. */
	for (int i = 0; i < TST_BURST; i++)
		cr_assert_eq(tst_remove(j, 2000 + i), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(journal_stats(j).writes, base + 2);
	cr_assert_eq(tst_file_entries(), 0);
	cr_assert_geq(journal_stats(j).changes, 2 * TST_BURST);

	journal_detach(j);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	journal_free(j);
}
