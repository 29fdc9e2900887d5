/*
 * The token store (private files written by atomic rename under a lock,
 * forget) and refresh against the fixture authorization server (real HTTP
 * on 127.0.0.1, rotating refresh tokens with reuse detection): one refresh
 * at a time in a process, and across two stores of the same folder and two
 * processes, where exactly one refresh request reaches the token endpoint
 * and no one loses the rotated token; a refresh that lost the race takes
 * the winner's tokens and deletes nothing; a refused refresh token is
 * forgotten; a server that does not rotate keeps the old one. Also what
 * auth_challenge and auth_bearer say, and the watch. Every wait runs the
 * loop (or polls a process) until its condition.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth/auth.h"
#include "auth/store.h"
#include "auth_fixture.h"
#include "util/clock.h"

static uv_loop_t loop;
static struct httpc *hc;
static struct fx fx;
static struct auth *au, *au2;
static char dir[64];
static char url[128];
/* Processes a test forked, killed by pid when it failed midway. */
static pid_t kid, kids_left[2];

static void kill_kids(void)
{
	pid_t all[3] = {kid, kids_left[0], kids_left[1]};
	for (int i = 0; i < 3; i++)
		if (all[i] > 0) {
			kill(all[i], SIGKILL);
			waitpid(all[i], NULL, 0);
		}
	kid = kids_left[0] = kids_left[1] = 0;
}

static struct httpc *get_http(void *arg)
{
	return hc;
}

static void walk_close(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void rm_dir(void)
{
	kill_kids();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static void t_setup(void)
{
	cr_assert_eq(uv_loop_init(&loop), 0);
	memset(&fx, 0, sizeof fx);
	fx_start(&fx, &loop);
	const char *why = NULL;
	hc = httpc_new(&loop, &why);
	cr_assert_not_null(hc, "%s", why);
	snprintf(dir, sizeof dir, "/tmp/mcpv-auth-refresh-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	au = auth_new(&loop, get_http, NULL, dir);
	au2 = auth_new(&loop, get_http, NULL, dir);
	snprintf(url, sizeof url, "%s/mcp", fx.base);
	fx.rotate = true;
}

static void t_teardown(void)
{
	kill_kids();
	auth_free(au);
	auth_free(au2);
	httpc_free(hc);
	fx_stop(&fx);
	uv_walk(&loop, walk_close, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "a handle was left open");
	store_set_now(NULL);
	rm_dir();
}

TestSuite(refresh, .init = t_setup, .fini = t_teardown, .timeout = 60);

static void s_setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/mcpv-auth-store-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(url, sizeof url, "https://mcp.example.com/mcp");
}

TestSuite(store, .init = s_setup, .fini = rm_dir, .timeout = 60);

#define RUN_UNTIL(cond)                                                        \
	do {                                                                   \
		while (!(cond))                                                \
			uv_run(&loop, UV_RUN_ONCE);                            \
	} while (0)

/* Tokens as a login would have stored them: at-0 with rt-0, which the
 * fixture takes. */
static void seed(const char *name, int64_t expires_in)
{
	char tokep[128];
	snprintf(tokep, sizeof tokep, "%s/token", fx.base);
	struct auth_tokens t = {.access_token = "at-0",
				.refresh_token = "rt-0",
				.token_type = "Bearer",
				.scope = "read",
				.expires_at = time(NULL) + expires_in,
				.issuer = fx.base,
				.resource = url,
				.token_endpoint = tokep,
				.client_id = "c0"};
	cr_assert_eq(auth_store_save(dir, name, url, &t), 0);
	snprintf(fx.refresh_token, sizeof fx.refresh_token, "rt-0");
}

static struct auth_tokens stored(void)
{
	struct auth_tokens t;
	cr_assert_eq(auth_store_load(dir, "srv", url, &t), 0);
	return t;
}

/* ---- the store ---- */

static mode_t mode_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	return st.st_mode & 07777;
}

Test(store, round_trip_in_private_files)
{
	struct auth_tokens t = {.access_token = "A",
				.refresh_token = "R",
				.token_type = "Bearer",
				.scope = "s t",
				.expires_at = 1900000000,
				.issuer = "https://as",
				.resource = url,
				.token_endpoint = "https://as/token",
				.client_id = "cid"};
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	cr_assert_eq(t.generation, 1);
	char *p = auth_store_path(dir, "srv", url);
	char want[256];
	snprintf(want, sizeof want, "%s/auth/tokens/", dir);
	cr_assert(strncmp(p, want, strlen(want)) == 0, "%s", p);
	cr_assert_eq(mode_of(p), 0600);
	snprintf(want, sizeof want, "%s/auth", dir);
	cr_assert_eq(mode_of(want), 0700);
	snprintf(want, sizeof want, "%s/auth/tokens", dir);
	cr_assert_eq(mode_of(want), 0700);
	struct auth_tokens l;
	cr_assert_eq(auth_store_load(dir, "srv", url, &l), 0);
	cr_assert_str_eq(l.access_token, "A");
	cr_assert_str_eq(l.refresh_token, "R");
	cr_assert_str_eq(l.token_type, "Bearer");
	cr_assert_str_eq(l.scope, "s t");
	cr_assert_eq(l.expires_at, 1900000000);
	cr_assert_str_eq(l.issuer, "https://as");
	cr_assert_str_eq(l.resource, url);
	cr_assert_str_eq(l.token_endpoint, "https://as/token");
	cr_assert_str_eq(l.client_id, "cid");
	cr_assert_eq(l.generation, 1);
	auth_tokens_clear(&l);
	cr_assert_null(l.access_token);
	/* each write one generation on */
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	cr_assert_eq(t.generation, 2);
	/* the key is the name and the url */
	cr_assert_eq(auth_store_load(dir, "other", url, &l), -ENOENT);
	cr_assert_eq(
		auth_store_load(dir, "srv", "https://mcp.example.com/x", &l),
		-ENOENT);
	free(p);
}

Test(store, written_by_atomic_rename)
{
	struct auth_tokens t = {.access_token = "old", .token_type = "Bearer"};
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	char *p = auth_store_path(dir, "srv", url);
	char keep[256];
	snprintf(keep, sizeof keep, "%s/kept", dir);
	cr_assert_eq(link(p, keep), 0);
	t.access_token = "new";
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	/* the old inode was never written into: a reader mid-write sees
	 * the whole old file or the whole new one */
	FILE *f = fopen(keep, "r");
	char text[4096] = "";
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	cr_assert(strstr(text, "\"old\""), "%s", text);
	struct auth_tokens l;
	cr_assert_eq(auth_store_load(dir, "srv", url, &l), 0);
	cr_assert_str_eq(l.access_token, "new");
	auth_tokens_clear(&l);
	/* nothing half-written left beside it */
	char tdir[256];
	snprintf(tdir, sizeof tdir, "%s/auth/tokens", dir);
	DIR *d = opendir(tdir);
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		cr_assert_null(strstr(e->d_name, ".tmp"), "%s", e->d_name);
	closedir(d);
	free(p);
}

Test(store, damaged_file_is_as_good_as_none)
{
	struct auth_tokens t = {.access_token = "A", .token_type = "Bearer"};
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	char *p = auth_store_path(dir, "srv", url);
	FILE *f = fopen(p, "w");
	fputs("{\"access_token\": ", f);
	fclose(f);
	struct auth_tokens l;
	cr_assert_eq(auth_store_load(dir, "srv", url, &l), -EINVAL);
	free(p);
}

Test(store, forget)
{
	cr_assert_eq(auth_store_forget(dir, "srv", url), -ENOENT);
	struct auth_tokens t = {.access_token = "A", .token_type = "Bearer"};
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	struct store_client c = {.issuer = "https://as",
				 .source = "dcr",
				 .client_id = "c1",
				 .auth_method = "none"};
	cr_assert_eq(store_client_write(dir, &c), 0);
	cr_assert_eq(auth_store_forget(dir, "srv", url), 0);
	struct auth_tokens l;
	cr_assert_eq(auth_store_load(dir, "srv", url, &l), -ENOENT);
	cr_assert_eq(auth_store_forget(dir, "srv", url), -ENOENT);
	/* the registration at the authorization server stays */
	struct store_client k;
	cr_assert_eq(store_client_read(dir, "https://as", &k), 0);
	cr_assert_str_eq(k.client_id, "c1");
	store_client_clear(&k);
}

/* Whether a process waits for a flock (a "->" line of /proc/locks). */
static bool flock_waiter(pid_t pid)
{
	FILE *f = fopen("/proc/locks", "r");
	if (f == NULL)
		return false;
	char line[256], want[32];
	snprintf(want, sizeof want, " %d ", (int)pid);
	bool found = false;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "-> FLOCK") && strstr(line, want))
			found = true;
	fclose(f);
	return found;
}

Test(store, saves_wait_for_the_lock)
{
	char key[STORE_KEY_HEX + 1];
	store_key("srv", url, key);
	/* The child is forked before the lock is taken: a copy of the
	 * locked descriptor would hold the lock for it. */
	int go[2];
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		struct auth_tokens t = {.access_token = "late",
					.token_type = "Bearer"};
		_exit(auth_store_save(dir, "srv", url, &t) == 0 ? 0 : 1);
	}
	kid = pid;
	close(go[0]);
	int fd, fd2;
	cr_assert_eq(store_lock(dir, key, false, &fd), 0);
	cr_assert_eq(store_lock(dir, key, false, &fd2), -EWOULDBLOCK);
	cr_assert_eq(write(go[1], "x", 1), 1);
	close(go[1]);
	while (!flock_waiter(pid))
		usleep(1000);
	struct auth_tokens l;
	cr_assert_eq(auth_store_load(dir, "srv", url, &l), -ENOENT);
	store_unlock(fd);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	kid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(auth_store_load(dir, "srv", url, &l), 0);
	cr_assert_str_eq(l.access_token, "late");
	auth_tokens_clear(&l);
	cr_assert_eq(store_lock(dir, key, false, &fd2), 0);
	store_unlock(fd2);
}

/* ---- refresh ---- */

struct res {
	bool done;
	int err;
	char why[320];
};

static void res_cb(void *arg, int err, const char *why)
{
	struct res *r = arg;
	r->done = true;
	r->err = err;
	snprintf(r->why, sizeof r->why, "%s", why ? why : "");
}

static void bearer_is(struct auth *a, const char *want)
{
	char *v = NULL;
	cr_assert_eq(auth_bearer(a, "srv", url, &v, NULL), 0);
	cr_assert_str_eq(v, want);
	free(v);
}

Test(refresh, one_request_for_many_callers_in_a_process)
{
	seed("srv", 3600);
	struct res r[3] = {0};
	for (int i = 0; i < 3; i++)
		cr_assert_eq(auth_refresh(au, "srv", url, "Bearer at-0", res_cb,
					  &r[i], NULL),
			     0);
	cr_assert_not(r[0].done); /* never from inside the call */
	RUN_UNTIL(r[0].done && r[1].done && r[2].done);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(r[i].err, 0, "%s", r[i].why);
	cr_assert_eq(fx.token_refreshes, 1);
	bearer_is(au, "Bearer at-1");
	/* the refresh request as RFC 6749 6 and RFC 8707 want it */
	char *v = fx_param(fx.last_token.data, "grant_type");
	cr_assert_str_eq(v, "refresh_token");
	free(v);
	v = fx_param(fx.last_token.data, "resource");
	cr_assert_str_eq(v, url);
	free(v);
	v = fx_param(fx.last_token.data, "client_id");
	cr_assert_str_eq(v, "c0");
	free(v);
	v = fx_param(fx.last_token.data, "scope");
	cr_assert_null(v);
	/* Ahead of expiry, with a server whose tokens live less than
	 * AUTH_REFRESH_EARLY_MS: the file alone would not tell a later
	 * caller that a refresh was just done; sharing the one under way
	 * does. */
	fx.expires_in = 30;
	fx.token_delay_ms = 100;
	struct res e[3] = {0};
	for (int i = 0; i < 3; i++)
		cr_assert_eq(
			auth_refresh(au, "srv", url, NULL, res_cb, &e[i], NULL),
			0);
	RUN_UNTIL(e[0].done && e[1].done && e[2].done);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(e[i].err, 0, "%s", e[i].why);
	cr_assert_eq(fx.token_refreshes, 2);
	bearer_is(au, "Bearer at-2");
}

/* Two refreshers of one folder with a rotating refresh token, rounds
 * times over. */
static void race_two_stores(const char *sent_fmt, int rounds)
{
	fx.token_delay_ms = 200; /* both are under way at once */
	for (int round = 0; round < rounds; round++) {
		char sent[32];
		snprintf(sent, sizeof sent, sent_fmt, round);
		struct res r1 = {0}, r2 = {0};
		uint64_t t0 = clock_now_ms();
		cr_assert_eq(auth_refresh(au, "srv", url, sent[0] ? sent : NULL,
					  res_cb, &r1, NULL),
			     0);
		cr_assert_eq(auth_refresh(au2, "srv", url,
					  sent[0] ? sent : NULL, res_cb, &r2,
					  NULL),
			     0);
		RUN_UNTIL(r1.done && r2.done);
		cr_log_info("round %d: both done in %llu ms, %d refresh "
			    "requests so far, %d refused",
			    round, (unsigned long long)(clock_now_ms() - t0),
			    fx.token_refreshes, fx.refresh_refused);
		cr_assert_eq(r1.err, 0, "%s", r1.why);
		cr_assert_eq(r2.err, 0, "%s", r2.why);
		cr_assert_eq(fx.token_refreshes, round + 1);
		cr_assert_eq(fx.refresh_refused, 0);
		/* the rotated token is the one stored, and both use the
		 * new access token */
		struct auth_tokens t = stored();
		cr_assert_str_eq(t.refresh_token, fx.refresh_token);
		char want[80];
		snprintf(want, sizeof want, "Bearer %s", fx.access_token);
		bearer_is(au, want);
		bearer_is(au2, want);
		auth_tokens_clear(&t);
	}
}

Test(refresh, two_stores_of_one_folder_refresh_once_on_a_401)
{
	seed("srv", 3600);
	race_two_stores("Bearer at-%d", 3);
}

Test(refresh, two_stores_refresh_once_ahead_of_expiry)
{
	/* within AUTH_REFRESH_EARLY_MS of expiry: both want to refresh */
	seed("srv", 10);
	char *v = NULL;
	int64_t in_ms = -2;
	cr_assert_eq(auth_bearer(au, "srv", url, &v, &in_ms), 0);
	cr_assert_eq(in_ms, 0);
	free(v);
	cr_assert_eq(auth_bearer(au2, "srv", url, &v, &in_ms), 0);
	free(v);
	race_two_stores("", 1);
}

static struct httpc *http_of(void *arg)
{
	return arg;
}

/* A child process: its own loop, client and store of dir, one refresh
 * of the token that was refused; then its bearer must be the file's. */
static int child_refresh(const char *sent)
{
	uv_loop_t l;
	if (uv_loop_init(&l) < 0)
		return 10;
	const char *why;
	struct httpc *h = httpc_new(&l, &why);
	if (h == NULL)
		return 11;
	struct auth *a = auth_new(&l, http_of, h, dir);
	char *v = NULL;
	auth_bearer(a, "srv", url, &v, NULL);
	free(v);
	v = NULL;
	struct res r = {0};
	int rc = auth_refresh(a, "srv", url, sent, res_cb, &r, NULL);
	while (rc == 0 && !r.done)
		uv_run(&l, UV_RUN_ONCE);
	rc = rc == 0 && r.err == 0 ? 0 : 12;
	struct auth_tokens t = {0};
	if (rc == 0 && (auth_bearer(a, "srv", url, &v, NULL) != 0 ||
			auth_store_load(dir, "srv", url, &t) != 0 ||
			strcmp(v + 7, t.access_token) != 0))
		rc = 13;
	free(v);
	auth_tokens_clear(&t);
	auth_free(a);
	httpc_free(h);
	uv_walk(&l, walk_close, NULL);
	uv_run(&l, UV_RUN_DEFAULT);
	uv_loop_close(&l);
	return rc;
}

struct kids {
	pid_t pid[2];
	int status[2];
	int left;
};

static void reap_cb(uv_timer_t *t)
{
	struct kids *k = t->data;
	for (int i = 0; i < 2; i++)
		if (k->pid[i] > 0 &&
		    waitpid(k->pid[i], &k->status[i], WNOHANG) == k->pid[i]) {
			k->pid[i] = kids_left[i] = 0;
			k->left--;
		}
}

Test(refresh, two_processes_refresh_once)
{
	seed("srv", 3600);
	fx.token_delay_ms = 300; /* the second asks while the first waits */
	uv_timer_t poll;
	uv_timer_init(&loop, &poll);
	for (int round = 0; round < 2; round++) {
		char sent[32];
		snprintf(sent, sizeof sent, "Bearer at-%d", round);
		struct kids k = {.left = 2};
		uint64_t t0 = clock_now_ms();
		for (int i = 0; i < 2; i++) {
			k.pid[i] = fork();
			cr_assert_geq(k.pid[i], 0);
			if (k.pid[i] == 0)
				_exit(child_refresh(sent));
			kids_left[i] = k.pid[i];
		}
		poll.data = &k;
		uv_timer_start(&poll, reap_cb, 5, 5);
		RUN_UNTIL(k.left == 0);
		uv_timer_stop(&poll);
		cr_log_info("two processes, round %d: %llu ms, %d refresh "
			    "requests so far, %d refused",
			    round, (unsigned long long)(clock_now_ms() - t0),
			    fx.token_refreshes, fx.refresh_refused);
		for (int i = 0; i < 2; i++)
			cr_assert(WIFEXITED(k.status[i]) &&
					  WEXITSTATUS(k.status[i]) == 0,
				  "child %d: status %#x", i, k.status[i]);
		cr_assert_eq(fx.token_refreshes, round + 1);
		cr_assert_eq(fx.refresh_refused, 0);
		struct auth_tokens t = stored();
		cr_assert_str_eq(t.refresh_token, fx.refresh_token);
		cr_assert_str_eq(t.access_token, fx.access_token);
		auth_tokens_clear(&t);
	}
}

Test(refresh, the_loser_takes_the_winners_tokens_and_deletes_nothing)
{
	seed("srv", 3600);
	bearer_is(au, "Bearer at-0");
	/* another process refreshed (or a login): rotated, stored */
	struct auth_tokens t = stored();
	free(t.access_token);
	free(t.refresh_token);
	t.access_token = xstrdup("at-7");
	t.refresh_token = xstrdup("rt-7");
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	auth_tokens_clear(&t);
	snprintf(fx.refresh_token, sizeof fx.refresh_token, "rt-7");
	/* this one was refused with the old token */
	struct res r = {0};
	cr_assert_eq(
		auth_refresh(au, "srv", url, "Bearer at-0", res_cb, &r, NULL),
		0);
	RUN_UNTIL(r.done);
	cr_assert_eq(r.err, 0, "%s", r.why);
	cr_assert_eq(fx.token_refreshes, 0);
	bearer_is(au, "Bearer at-7");
	t = stored();
	cr_assert_str_eq(t.refresh_token, "rt-7");
	auth_tokens_clear(&t);
}

Test(refresh, a_refused_refresh_token_is_forgotten)
{
	seed("srv", 3600);
	/* the server no longer knows rt-0 */
	snprintf(fx.refresh_token, sizeof fx.refresh_token, "rt-elsewhere");
	struct res r = {0};
	cr_assert_eq(
		auth_refresh(au, "srv", url, "Bearer at-0", res_cb, &r, NULL),
		0);
	RUN_UNTIL(r.done);
	cr_assert_eq(r.err, -EACCES);
	cr_assert(strstr(r.why, "mcpvisor login srv"), "%s", r.why);
	cr_assert_null(strstr(r.why, "rt-0"));
	cr_assert_null(strstr(r.why, "at-0"));
	cr_assert_eq(fx.token_refreshes, 1);
	struct auth_tokens t;
	cr_assert_eq(auth_store_load(dir, "srv", url, &t), -ENOENT);
	char *v = NULL;
	cr_assert_eq(auth_bearer(au, "srv", url, &v, NULL), -ENOENT);
}

Test(refresh, a_server_that_does_not_rotate_keeps_the_old_one)
{
	seed("srv", 3600);
	fx.rotate = false;
	fx.no_refresh = true; /* answers without a refresh_token */
	struct res r = {0};
	cr_assert_eq(
		auth_refresh(au, "srv", url, "Bearer at-0", res_cb, &r, NULL),
		0);
	RUN_UNTIL(r.done);
	cr_assert_eq(r.err, 0, "%s", r.why);
	struct auth_tokens t = stored();
	cr_assert_str_eq(t.access_token, "at-1");
	cr_assert_str_eq(t.refresh_token, "rt-0");
	cr_assert_str_eq(t.scope, "read");
	auth_tokens_clear(&t);
}

Test(refresh, no_refresh_token_means_sign_in)
{
	char tokep[128];
	snprintf(tokep, sizeof tokep, "%s/token", fx.base);
	struct auth_tokens t = {.access_token = "at-0",
				.token_type = "Bearer",
				.expires_at = time(NULL) - 1,
				.issuer = fx.base,
				.token_endpoint = tokep};
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	char *v = NULL;
	cr_assert_eq(auth_bearer(au, "srv", url, &v, NULL), -EKEYEXPIRED);
	free(v);
	cr_assert_eq(
		auth_challenge(au, "srv", url, 401, "Bearer", "Bearer at-0"),
		AUTH_LOGIN);
	struct res r = {0};
	cr_assert_eq(auth_refresh(au, "srv", url, NULL, res_cb, &r, NULL), 0);
	RUN_UNTIL(r.done);
	cr_assert_eq(r.err, -EACCES);
	cr_assert_eq(fx.token_refreshes, 0);
}

/* ---- what a 401 means, and when to refresh ---- */

static int64_t fixed_now(void)
{
	return 1800000000;
}

Test(refresh, challenge_verdicts)
{
	cr_assert_eq(auth_challenge(au, "srv", url, 401, "Bearer", NULL),
		     AUTH_LOGIN);
	seed("srv", 3600);
	/* refused with the stored token: refresh */
	cr_assert_eq(auth_challenge(au, "srv", url, 401,
				    "Bearer error=\"invalid_token\"",
				    "Bearer at-0"),
		     AUTH_REFRESH);
	/* refused with an older one: send again with the stored */
	cr_assert_eq(auth_challenge(au, "srv", url, 401, NULL, "Bearer at-x"),
		     AUTH_RETRY);
	/* refused right after our refresh: refreshing does not help */
	struct res r = {0};
	cr_assert_eq(
		auth_refresh(au, "srv", url, "Bearer at-0", res_cb, &r, NULL),
		0);
	RUN_UNTIL(r.done);
	cr_assert_eq(r.err, 0, "%s", r.why);
	cr_assert_eq(
		auth_challenge(au, "srv", url, 401, "Bearer", "Bearer at-1"),
		AUTH_LOGIN);
}

Test(refresh, bearer_says_when_to_refresh)
{
	store_set_now(fixed_now);
	char tokep[128];
	snprintf(tokep, sizeof tokep, "%s/token", fx.base);
	struct auth_tokens t = {.access_token = "at-0",
				.refresh_token = "rt-0",
				.token_type = "Bearer",
				.expires_at = fixed_now() + 600,
				.token_endpoint = tokep};
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	char *v = NULL;
	int64_t in_ms = -2;
	cr_assert_eq(auth_bearer(au, "srv", url, &v, &in_ms), 0);
	cr_assert_str_eq(v, "Bearer at-0");
	cr_assert_eq(in_ms, 600 * 1000 - AUTH_REFRESH_EARLY_MS);
	free(v);
	/* no lifetime: never ahead of time */
	t.expires_at = 0;
	cr_assert_eq(auth_store_save(dir, "srv", url, &t), 0);
	cr_assert_eq(auth_reload(au, "srv", url), 1);
	cr_assert_eq(auth_reload(au, "srv", url), 0);
	cr_assert_eq(auth_bearer(au, "srv", url, NULL, &in_ms), 0);
	cr_assert_eq(in_ms, -1);
	cr_assert_eq(auth_bearer(au, "other", url, &v, &in_ms), -ENOENT);
	cr_assert_null(v);
}

struct seen {
	int calls;
	char name[32];
};

static void watch_cb(void *arg, const char *name, const char *u)
{
	struct seen *s = arg;
	s->calls++;
	snprintf(s->name, sizeof s->name, "%s", name);
}

Test(refresh, a_login_elsewhere_is_heard)
{
	struct seen s = {0};
	auth_watch(au, watch_cb, &s);
	char *v = NULL;
	cr_assert_eq(auth_bearer(au, "srv", url, &v, NULL), -ENOENT);
	/* another process signs in */
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct auth_tokens t = {.access_token = "fresh",
					.token_type = "Bearer"};
		_exit(auth_store_save(dir, "srv", url, &t) == 0 ? 0 : 1);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	RUN_UNTIL(s.calls > 0);
	cr_assert_str_eq(s.name, "srv");
	bearer_is(au, "Bearer fresh");
	/* and a logout */
	cr_assert_eq(auth_store_forget(dir, "srv", url), 0);
	RUN_UNTIL(s.calls > 1);
	cr_assert_eq(auth_bearer(au, "srv", url, &v, NULL), -ENOENT);
	auth_watch(au, NULL, NULL);
}

Test(refresh, a_cancelled_wait_hears_nothing_the_others_do)
{
	seed("srv", 3600);
	fx.token_delay_ms = 50;
	struct res r1 = {0}, r2 = {0};
	struct auth_req *q1 = NULL;
	cr_assert_eq(
		auth_refresh(au, "srv", url, "Bearer at-0", res_cb, &r1, &q1),
		0);
	cr_assert_eq(
		auth_refresh(au, "srv", url, "Bearer at-0", res_cb, &r2, NULL),
		0);
	auth_req_cancel(q1);
	RUN_UNTIL(r2.done);
	cr_assert_eq(r2.err, 0, "%s", r2.why);
	cr_assert_not(r1.done);
	cr_assert_eq(fx.token_refreshes, 1);
}

Test(refresh, freed_mid_refresh_says_nothing_and_lets_the_lock_go)
{
	seed("srv", 3600);
	fx.token_delay_ms = 100;
	struct res r = {0};
	cr_assert_eq(
		auth_refresh(au, "srv", url, "Bearer at-0", res_cb, &r, NULL),
		0);
	/* until the request is at the server */
	RUN_UNTIL(fx.token_refreshes == 1);
	auth_free(au);
	au = NULL;
	/* the other store can take the lock at once */
	char key[STORE_KEY_HEX + 1];
	store_key("srv", url, key);
	int fd;
	cr_assert_eq(store_lock(dir, key, false, &fd), 0);
	store_unlock(fd);
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_not(r.done);
}
