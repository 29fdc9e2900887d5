/*
 * The journal's typed owned resources: processes (with the loopback port
 * they serve on) and containers round-trip through the file; a file
 * written before "kind" still reads as processes; reconcile stops a
 * process entry and leaves a foreign pid alone; through a fake engine it
 * stops and removes exactly the containers whose owner token the journal
 * holds, and keeps the entries an engine cannot settle (down, missing,
 * hung, a removal refused); a container is found by its id or its name;
 * a full journal of containers at their bounds stays under the size limit.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "container/engine.h"
#include "engine_fixture.h"
#include "journal/journal.h"
#include "proc/procfs.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/xmalloc.h"

#define OWN_GRACE_MS 2000

static char own_dir[PATH_MAX];
static pid_t own_child;
static struct fake_engine own_fe;
/* Containers a real-podman test created: removed at the end, whatever
 * happened (names unique to the test run). */
static char own_real_names[3][64];

static void own_setup(void)
{
	snprintf(own_dir, sizeof own_dir, "/tmp/mcpv-jowned-XXXXXX");
	cr_assert_not_null(mkdtemp(own_dir));
	own_child = 0;
	memset(own_real_names, 0, sizeof own_real_names);
	fake_engine_init(&own_fe);
}

static void own_teardown(void)
{
	if (own_child > 0) {
		kill(own_child, SIGKILL);
		waitpid(own_child, NULL, 0);
	}
	char *p = xasprintf("%s/%s", own_dir, JOURNAL_FILE);
	unlink(p);
	free(p);
	p = xasprintf("%s/log", own_dir);
	unlink(p);
	free(p);
	rmdir(own_dir);
	/* One at a time: podman 4.3.1's `rm -f A B` removes neither when
	 * A does not exist, and says nothing. */
	for (int i = 0; i < 3 && own_real_names[i][0]; i++) {
		p = xasprintf("podman rm -f %s >/dev/null 2>&1",
			      own_real_names[i]);
		if (system(p) != 0)
			fprintf(stderr, "cannot remove %s\n",
				own_real_names[i]);
		free(p);
	}
	fake_engine_cleanup(&own_fe);
}

TestSuite(journal_owned, .init = own_setup, .fini = own_teardown,
	  .timeout = 30);

static struct journal *own_open(void)
{
	struct journal *j = NULL;
	cr_assert_eq(journal_open(own_dir, &j), 0);
	return j;
}

static json_t *own_file(void)
{
	char *p = xasprintf("%s/%s", own_dir, JOURNAL_FILE);
	json_error_t err;
	json_t *root = json_load_file(p, 0, &err);
	free(p);
	cr_assert_not_null(root, "journal unreadable: %s", err.text);
	return root;
}

static json_t *own_entries(json_t *root)
{
	return json_object_get(root, "entries");
}

static void own_write(const char *text)
{
	char *p = xasprintf("%s/%s", own_dir, JOURNAL_FILE);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static struct upstream_owned own_process(pid_t pid, uint64_t start, int port,
					 const char *tok)
{
	return (struct upstream_owned){.kind = UPSTREAM_OWNED_PROCESS,
				       .token = tok,
				       .pid = pid,
				       .pgid = pid,
				       .start_time = start,
				       .port = port};
}

static struct upstream_owned own_container(const char *id, const char *name,
					   const char *tok)
{
	return (struct upstream_owned){.kind = UPSTREAM_OWNED_CONTAINER,
				       .token = tok,
				       .engine = "/usr/bin/podman",
				       .container_id = id,
				       .container_name = name};
}

#define OWN_ID                                                                 \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A child that sleeps, in a group of its own, with its start time. */
static pid_t own_spawn(uint64_t *start)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setpgid(0, 0);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	struct procfs_stat st;
	/* /proc has it from fork on; the start time never changes. */
	cr_assert_eq(procfs_read_stat(pid, &st), 0);
	*start = st.start_time;
	own_child = pid;
	return pid;
}

Test(journal_owned, both_kinds_round_trip_with_the_port)
{
	char tok[3][JOURNAL_TOKEN_LEN + 1];
	for (int i = 0; i < 3; i++)
		journal_new_token(tok[i]);
	struct journal *j = own_open();
	struct upstream_owned p = own_process(4000, 123456, 38111, tok[0]);
	struct upstream_owned c = own_container(OWN_ID, "mcpv-demo-1", tok[1]);
	struct upstream_owned byname = own_container(NULL, "mcpv-x", tok[2]);
	cr_assert_eq(journal_add_owned(j, &p, "local"), 0);
	cr_assert_eq(journal_add_owned(j, &c, "boxed"), 0);
	cr_assert_eq(journal_add_owned(j, &byname, "named"), 0);
	cr_assert_eq(journal_count(j), 3);
	journal_free(j);

	json_t *root = own_file();
	json_t *e = own_entries(root);
	cr_assert_eq(json_array_size(e), 3);
	json_t *e0 = json_array_get(e, 0), *e1 = json_array_get(e, 1);
	cr_assert_str_eq(json_string_value(json_object_get(e0, "kind")),
			 "process");
	cr_assert_eq(json_integer_value(json_object_get(e0, "port")), 38111,
		     "the port a local server serves on is recorded");
	cr_assert_eq(json_integer_value(json_object_get(e0, "pid")), 4000);
	cr_assert_str_eq(json_string_value(json_object_get(e1, "kind")),
			 "container");
	cr_assert_str_eq(json_string_value(json_object_get(e1, "engine")),
			 "/usr/bin/podman");
	cr_assert_str_eq(json_string_value(json_object_get(e1, "id")), OWN_ID);
	cr_assert_str_eq(json_string_value(json_object_get(e1, "name")),
			 "mcpv-demo-1");
	cr_assert_str_eq(json_string_value(json_object_get(e1, "token")),
			 tok[1]);
	cr_assert_null(json_object_get(e1, "pid"));
	cr_assert_null(json_object_get(json_array_get(e, 2), "id"));
	json_decref(root);

	/* Read back whole: removed by pid, by id and by name. */
	j = own_open();
	cr_assert_eq(journal_count(j), 3);
	struct upstream_owned rm = {.kind = UPSTREAM_OWNED_CONTAINER,
				    .container_id = OWN_ID};
	cr_assert_eq(journal_remove_owned(j, &rm), 0);
	cr_assert_eq(journal_remove_owned(j, &rm), -ENOENT);
	rm.container_id = NULL;
	rm.container_name = "mcpv-x";
	cr_assert_eq(journal_remove_owned(j, &rm), 0);
	cr_assert_eq(journal_count(j), 1);
	struct upstream_owned gone = own_process(4000, 0, 0, NULL);
	cr_assert_eq(journal_remove_owned(j, &gone), 0);
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);
}

Test(journal_owned, a_container_known_by_name_then_id_is_one_entry)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	struct journal *j = own_open();
	struct upstream_owned c = own_container(NULL, "mcpv-demo-1", tok);
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	c.container_id = OWN_ID;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	cr_assert_eq(journal_count(j), 1);
	journal_free(j);
}

Test(journal_owned, bad_owned_resources_are_refused)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	struct journal *j = own_open();
	struct upstream_owned p = own_process(10, 1, 70000, tok);
	cr_assert_eq(journal_add_owned(j, &p, "k"), -EINVAL, "port > 65535");
	p = own_process(10, 1, -1, tok);
	cr_assert_eq(journal_add_owned(j, &p, "k"), -EINVAL);
	static const char *const bad[][3] = {
		/* engine, id, name */
		{"podman run", OWN_ID, NULL}, {"", OWN_ID, NULL},
		{"podman", "XYZ", NULL},      {"podman", NULL, NULL},
		{"podman", NULL, "-rm"},      {"podman", NULL, "a b"},
		{"podman;rm", NULL, "ok"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct upstream_owned c =
			own_container(bad[i][1], bad[i][2], tok);
		c.engine = bad[i][0];
		cr_assert_eq(journal_add_owned(j, &c, "k"), -EINVAL, "case %zu",
			     i);
	}
	struct upstream_owned c = own_container(OWN_ID, NULL, "nothex");
	cr_assert_eq(journal_add_owned(j, &c, "k"), -EINVAL);
	c.kind = (enum upstream_owned_kind)7;
	c.token = tok;
	cr_assert_eq(journal_add_owned(j, &c, "k"), -EINVAL);
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);
}

/* A file of the release before containers: no "kind", no "port". */
Test(journal_owned, an_old_file_reads_as_processes_and_is_reconciled)
{
	uint64_t start;
	pid_t pid = own_spawn(&start);
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	char *text = xasprintf(
		"{\"format\":1,\"entries\":[{\"pid\":%d,\"pgid\":%d,"
		"\"startTime\":%llu,\"token\":\"%s\",\"key\":\"old\"}],"
		"\"reserved\":[]}",
		(int)pid, (int)pid, (unsigned long long)start, tok);
	own_write(text);
	free(text);
	struct journal *j = own_open();
	cr_assert_eq(journal_count(j), 1, "the old entry is read");
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, OWN_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries, 1);
	cr_assert_eq(r.stopped, 1);
	cr_assert_eq(r.kept, 0);
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	own_child = 0;
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	json_t *root = own_file();
	cr_assert_eq(json_array_size(own_entries(root)), 0);
	json_decref(root);
}

/* A process entry whose pid now runs something else is left alone; a
 * container entry whose engine's daemon is down is kept, untouched, for
 * the next start. */
Test(journal_owned, reconcile_keeps_containers_and_spares_a_foreign_pid)
{
	uint64_t start;
	pid_t other = own_spawn(&start);
	char tok[2][JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok[0]);
	journal_new_token(tok[1]);
	fake_engine_put(&own_fe, "all.err", FAKE_ENGINE_DOWN "\n");
	fake_engine_put(&own_fe, "all.rc", "125");
	struct journal *j = own_open();
	struct upstream_owned p = own_process(other, start + 1, 0, tok[0]);
	struct upstream_owned c = own_container(OWN_ID, "mcpv-demo-1", tok[1]);
	c.engine = own_fe.path;
	cr_assert_eq(journal_add_owned(j, &p, "stranger"), 0);
	cr_assert_eq(journal_add_owned(j, &c, "boxed"), 0);
	journal_free(j);

	j = own_open();
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, OWN_GRACE_MS, &r), 0);
	cr_assert_eq(r.entries, 2);
	cr_assert_eq(r.stopped, 0);
	cr_assert_eq(r.left_alone, 1);
	cr_assert_eq(r.kept, 1);
	cr_assert_eq(r.containers_stopped, 0);
	/* Kept, yet not this runtime's to see gone. */
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);
	cr_assert_eq(waitpid(other, NULL, WNOHANG), 0, "a stranger signalled");
	cr_assert_eq(kill(other, 0), 0);

	json_t *root = own_file();
	json_t *e = own_entries(root);
	cr_assert_eq(json_array_size(e), 1);
	json_t *e0 = json_array_get(e, 0);
	cr_assert_str_eq(json_string_value(json_object_get(e0, "kind")),
			 "container");
	cr_assert_str_eq(json_string_value(json_object_get(e0, "id")), OWN_ID);
	cr_assert_str_eq(json_string_value(json_object_get(e0, "token")),
			 tok[1]);
	json_decref(root);

	/* And again at the next start: still there. */
	j = own_open();
	cr_assert_eq(journal_reconcile(j, OWN_GRACE_MS, &r), 0);
	cr_assert_eq(r.kept, 1);
	journal_free(j);
	root = own_file();
	cr_assert_eq(json_array_size(own_entries(root)), 1);
	json_decref(root);
}

/* Entries of an unknown kind or with wrong fields are skipped; their
 * valid neighbours stay. */
Test(journal_owned, unknown_kinds_and_bad_containers_are_skipped)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	char *text = xasprintf(
		"{\"format\":1,\"entries\":["
		"{\"kind\":\"vm\",\"token\":\"%s\",\"key\":\"a\"},"
		"{\"kind\":7,\"pid\":5,\"pgid\":5,\"startTime\":1,"
		"\"token\":\"%s\",\"key\":\"b\"},"
		"{\"kind\":\"container\",\"engine\":\"podman\",\"id\":\"ZZ\","
		"\"token\":\"%s\",\"key\":\"c\"},"
		"{\"kind\":\"process\",\"pid\":6,\"pgid\":6,\"startTime\":1,"
		"\"port\":0,\"token\":\"%s\",\"key\":\"d\"},"
		"{\"kind\":\"container\",\"engine\":\"docker\",\"name\":\"ok\","
		"\"token\":\"%s\",\"key\":\"e\"},"
		"{\"kind\":\"process\",\"pid\":8,\"pgid\":8,\"startTime\":1,"
		"\"port\":8080,\"token\":\"%s\",\"key\":\"f\"}]}",
		tok, tok, tok, tok, tok, tok);
	own_write(text);
	free(text);
	struct journal *j = own_open();
	cr_assert_eq(journal_count(j), 2, "the container named ok and pid 8");
	journal_free(j);
}

/* JOURNAL_MAX_ENTRIES containers with every field at its bound, and keys
 * that escape to twice their length: still a file the journal reads. */
Test(journal_owned, a_full_journal_of_containers_fits_the_size_limit)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct journal *j = own_open();
	journal_attach(j, &loop);
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	char engine[JOURNAL_ENGINE_MAX + 1],
		name[JOURNAL_CONTAINER_NAME_MAX + 1];
	char id[JOURNAL_CONTAINER_ID_MAX + 1], key[400];
	memset(engine, '/', sizeof engine - 1);
	engine[sizeof engine - 1] = '\0';
	memset(key, '"', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	for (int i = 0; i < JOURNAL_MAX_ENTRIES; i++) {
		snprintf(id, sizeof id, "%064x", i);
		snprintf(name, sizeof name, "n%0127d", i);
		struct upstream_owned c = own_container(id, name, tok);
		c.engine = engine;
		cr_assert_eq(journal_add_owned(j, &c, key), 0, "entry %d", i);
	}
	struct upstream_owned one_more = own_container(NULL, "extra", tok);
	cr_assert_eq(journal_add_owned(j, &one_more, "k"), -ENOSPC);
	uv_run(&loop, UV_RUN_DEFAULT);
	journal_detach(j);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	journal_free(j);

	char *p = xasprintf("%s/%s", own_dir, JOURNAL_FILE);
	struct stat sb;
	cr_assert_eq(stat(p, &sb), 0);
	free(p);
	cr_assert_lt(sb.st_size, JOURNAL_MAX_BYTES, "%lld bytes",
		     (long long)sb.st_size);
	j = own_open();
	cr_assert_eq(journal_count(j), JOURNAL_MAX_ENTRIES);
	journal_free(j);
}

/* ---- containers through their engine (a fake one, engine_fixture.h) ---- */

#define CID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define CID_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define CID_D "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define CID_E "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
#define CID_F "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

/* The log lines written from now on go to a file (own_log reads it). */
static void own_log_capture(void)
{
	char *p = xasprintf("%s/log", own_dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	free(p);
	cr_assert_geq(fd, 0);
	cr_assert_eq(dup2(fd, 2), 2);
	close(fd);
}

static char *own_log(void)
{
	char *p = xasprintf("%s/log", own_dir);
	char *data = NULL;
	size_t len = 0;
	cr_assert_eq(fsutil_read_file(p, 1 << 20, &data, &len), 0);
	free(p);
	return data;
}

/* The stop and rm commands the engine got, one a line. */
static char *own_removals(void)
{
	char *log = fake_engine_log(&own_fe);
	struct buf b;
	buf_init(&b);
	char *save = NULL;
	for (char *l = strtok_r(log, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "stop|", 5) == 0 || strncmp(l, "rm|", 3) == 0) {
			buf_puts(&b, l);
			buf_puts(&b, "\n");
		}
	}
	free(log);
	return b.data ? buf_steal(&b) : xstrdup("");
}

/* Ours: A (an entry known by name only), B (a token reserved before the
 * crash, its entry never written). Not ours: C (another runtime's token,
 * same name prefix), D (a token one character off ours), E (no owner
 * label at all: inspect shows none), F (an entry's token... of a process
 * entry: still ours, any entry's token is). */
Test(journal_owned, reconcile_stops_exactly_the_containers_of_our_tokens)
{
	char ta[JOURNAL_TOKEN_LEN + 1], tr[JOURNAL_TOKEN_LEN + 1],
		tc[JOURNAL_TOKEN_LEN + 1], tg[JOURNAL_TOKEN_LEN + 1],
		tp[JOURNAL_TOKEN_LEN + 1], td[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(ta);
	journal_new_token(tr);
	journal_new_token(tc);
	journal_new_token(tg);
	journal_new_token(tp);
	memcpy(td, ta, sizeof td);
	td[0] = td[0] == 'a' ? 'b' : 'a';
	char *file = xasprintf(
		"{\"format\":1,\"entries\":["
		"{\"kind\":\"container\",\"engine\":\"%s\",\"name\":\"mcpv-a\","
		"\"token\":\"%s\",\"key\":\"a\"},"
		"{\"kind\":\"container\",\"engine\":\"%s\",\"id\":\"%s\","
		"\"token\":\"%s\",\"key\":\"gone\"},"
		"{\"kind\":\"process\",\"pid\":2147483000,\"pgid\":2147483000,"
		"\"startTime\":1,\"token\":\"%s\",\"key\":\"p\"}],"
		"\"reserved\":[\"%s\"]}",
		own_fe.path, ta, own_fe.path, OWN_ID, tg, tp, tr);
	own_write(file);
	free(file);
	fake_engine_put(&own_fe, "ps.out",
			CID_A "\n" CID_B "\n" CID_C "\n" CID_D "\n" CID_E
			      "\n" CID_F "\n");
	char *inspect = xasprintf(
		CID_A "\tmcpv-a\ttrue\t{\"mcpvisor.owner\":\"%s\","
		      "\"mcpvisor.server\":\"alpha\"}\n" CID_B
		      "\t/mcpv-b\tfalse\t{\"mcpvisor.owner\":\"%s\"}\n" CID_C
		      "\tmcpv-a-2\ttrue\t{\"mcpvisor.owner\":\"%s\"}\n" CID_D
		      "\tmcpv-d\ttrue\t{\"mcpvisor.owner\":\"%s\"}\n" CID_E
		      "\tmcpv-e\ttrue\t{\"other\":\"%s\"}\n" CID_F
		      "\tmcpv-f\ttrue\t{\"mcpvisor.owner\":\"%s\"}\n",
		ta, tr, tc, td, ta, tp);
	fake_engine_put(&own_fe, "inspect.out", inspect);
	free(inspect);

	own_log_capture();
	struct journal *j = own_open();
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, 1500, &r), 0);
	cr_assert_eq(r.containers_stopped, 3, "A, B and F");
	cr_assert_eq(r.containers_left_alone, 2, "C and D");
	cr_assert_eq(r.kept, 0);
	cr_assert_eq(r.gone, 2,
		     "the entry whose container is gone, and "
		     "the process");
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);

	char *rm = own_removals();
	static const char *const ours[] = {CID_A, CID_B, CID_F};
	size_t lines = 0;
	for (const char *p = rm; *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, 6, "%s", rm);
	for (size_t i = 0; i < 3; i++) {
		char *stop = xasprintf("stop|-t|2|%s|\n", ours[i]);
		char *del = xasprintf("rm|-f|%s|\n", ours[i]);
		cr_assert_not_null(strstr(rm, stop), "%s", rm);
		cr_assert_not_null(strstr(rm, del), "%s", rm);
		free(stop);
		free(del);
	}
	static const char *const never[] = {CID_C,	CID_D,	  CID_E,
					    "mcpv-a-2", "mcpv-d", "mcpv-e"};
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		cr_assert_null(strstr(rm, never[i]), "%s named: %s", never[i],
			       rm);
	free(rm);

	char *log = own_log();
	cr_assert_not_null(strstr(log, "stopped container mcpv-a (" CID_A
				       ") of server alpha"),
			   "%s", log);
	cr_assert_not_null(strstr(log, "stopped container mcpv-b (" CID_B ")"),
			   "%s", log);
	cr_assert_not_null(strstr(log, "containers: 3 stopped, 2 left alone"),
			   "%s", log);
	free(log);
	json_t *root = own_file();
	cr_assert_eq(json_array_size(own_entries(root)), 0);
	json_decref(root);
}

/* Engine down, engine missing, engine hung: the entries stay for the next
 * start, the engine's own line is in the log, and nothing blocks. */
Test(journal_owned, reconcile_keeps_entries_an_engine_cannot_settle)
{
	char t1[JOURNAL_TOKEN_LEN + 1], t2[JOURNAL_TOKEN_LEN + 1],
		t3[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(t1);
	journal_new_token(t2);
	journal_new_token(t3);
	struct fake_engine hung;
	fake_engine_init(&hung);
	fake_engine_put(&hung, "ps.hang", "");
	char *missing = xasprintf("%s/docker", own_fe.dir);
	fake_engine_put(&own_fe, "all.err", FAKE_ENGINE_DOWN "\n");
	fake_engine_put(&own_fe, "all.rc", "125");
	struct journal *j = own_open();
	struct upstream_owned c = own_container(NULL, "mcpv-down", t1);
	c.engine = own_fe.path;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	c = own_container(CID_A, "mcpv-missing", t2);
	c.engine = missing;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	c = own_container(CID_B, NULL, t3);
	c.engine = hung.path;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	journal_free(j);

	own_log_capture();
	j = own_open();
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, 1000, &r), 0);
	cr_assert_eq(r.kept, 3);
	cr_assert_eq(r.containers_stopped, 0);
	cr_assert_eq(journal_count(j), 0,
		     "kept, not this runtime's to see "
		     "gone");
	journal_free(j);
	char *log = own_log();
	cr_assert_not_null(strstr(log, FAKE_ENGINE_DOWN), "%s", log);
	cr_assert_not_null(strstr(log, "docker not found"), "%s", log);
	cr_assert_not_null(strstr(log, "did not end in time"), "%s", log);
	free(log);
	char *rm = own_removals();
	cr_assert_str_eq(rm, "");
	free(rm);
	json_t *root = own_file();
	cr_assert_eq(json_array_size(own_entries(root)), 3);
	json_decref(root);
	pid_t leader = fake_engine_pid(&hung, "leader.pid");
	pid_t grandchild = fake_engine_pid(&hung, "grandchild.pid");
	cr_assert_gt(grandchild, 0);
	for (int i = 0; i < 200 && kill(grandchild, 0) == 0; i++) {
		struct procfs_stat st;
		if (procfs_read_stat(grandchild, &st) == 0 &&
		    procfs_state_dead(st.state))
			break;
		usleep(10000);
	}
	struct procfs_stat st;
	cr_assert(procfs_read_stat(grandchild, &st) < 0 ||
			  procfs_state_dead(st.state),
		  "the hung engine's group outlived its deadline");
	(void)leader;

	/* The engine back: the next start stops it. */
	fake_engine_del(&own_fe, "all.rc");
	fake_engine_del(&own_fe, "all.err");
	fake_engine_put(&own_fe, "ps.out", CID_C "\n");
	char *inspect = xasprintf(CID_C "\tmcpv-down\ttrue\t"
					"{\"mcpvisor.owner\":\"%s\"}\n",
				  t1);
	fake_engine_put(&own_fe, "inspect.out", inspect);
	free(inspect);
	fake_engine_put(&hung, "ps.out", "");
	fake_engine_del(&hung, "ps.hang");
	j = own_open();
	cr_assert_eq(journal_reconcile(j, 1000, &r), 0);
	cr_assert_eq(r.containers_stopped, 1);
	cr_assert_eq(r.kept, 1, "docker is still missing");
	cr_assert_eq(r.gone, 1, "the hung engine's container is not listed");
	journal_free(j);
	root = own_file();
	cr_assert_eq(json_array_size(own_entries(root)), 1);
	json_decref(root);
	free(missing);
	fake_engine_cleanup(&hung);
}

/* A container of ours the engine cannot remove keeps its entry; the
 * other one is stopped. */
Test(journal_owned, reconcile_keeps_the_entry_of_a_container_not_removed)
{
	char t1[JOURNAL_TOKEN_LEN + 1], t2[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(t1);
	journal_new_token(t2);
	struct journal *j = own_open();
	struct upstream_owned c = own_container(CID_A, "mcpv-a", t1);
	c.engine = own_fe.path;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	c = own_container(CID_B, "mcpv-b", t2);
	c.engine = own_fe.path;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	journal_free(j);
	fake_engine_put(&own_fe, "ps.out", CID_A "\n" CID_B "\n");
	char *inspect = xasprintf(
		CID_A "\tmcpv-a\ttrue\t{\"mcpvisor.owner\":\"%s\"}\n" CID_B
		      "\tmcpv-b\ttrue\t{\"mcpvisor.owner\":\"%s\"}\n",
		t1, t2);
	fake_engine_put(&own_fe, "inspect.out", inspect);
	free(inspect);
	fake_engine_put(&own_fe, "rm." CID_B ".err",
			"Error: container state improper\n");
	fake_engine_put(&own_fe, "rm." CID_B ".rc", "125");

	own_log_capture();
	j = own_open();
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, 1000, &r), 0);
	cr_assert_eq(r.containers_stopped, 1);
	cr_assert_eq(r.kept, 1);
	journal_free(j);
	char *log = own_log();
	cr_assert_not_null(strstr(log, "container state improper"), "%s", log);
	free(log);
	json_t *root = own_file();
	json_t *e = own_entries(root);
	cr_assert_eq(json_array_size(e), 1);
	cr_assert_str_eq(
		json_string_value(json_object_get(json_array_get(e, 0), "id")),
		CID_B);
	json_decref(root);
}

/* Known by name, then by id and name: one entry, removable by either;
 * the same name on another engine, or under another id, is another
 * container. */
Test(journal_owned, a_container_is_found_by_its_id_or_its_name)
{
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	struct journal *j = own_open();
	struct upstream_owned c = own_container(NULL, "mcpv-a", tok);
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	c.container_id = CID_A;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	cr_assert_eq(journal_count(j), 1, "replaced, not duplicated");
	/* Named again without its id: the id stays known. */
	c.container_id = NULL;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	cr_assert_eq(journal_count(j), 1);
	struct upstream_owned by_id = {.kind = UPSTREAM_OWNED_CONTAINER,
				       .engine = "/usr/bin/podman",
				       .container_id = CID_A};
	cr_assert_eq(journal_remove_owned(j, &by_id), 0, "the id was kept");

	c = own_container(CID_A, "mcpv-a", tok);
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	struct upstream_owned other = c;
	other.engine = "docker";
	cr_assert_eq(journal_add_owned(j, &other, "k"), 0);
	cr_assert_eq(journal_count(j), 2, "another engine, another container");
	struct upstream_owned reused = own_container(CID_B, "mcpv-a", tok);
	cr_assert_eq(journal_add_owned(j, &reused, "k"), 0);
	cr_assert_eq(journal_count(j), 3, "a name reused under another id");

	struct upstream_owned by_name = {.kind = UPSTREAM_OWNED_CONTAINER,
					 .engine = "docker",
					 .container_name = "mcpv-a"};
	cr_assert_eq(journal_remove_owned(j, &by_name), 0);
	cr_assert_eq(journal_remove_owned(j, &by_name), -ENOENT);
	by_id.container_id = CID_B;
	cr_assert_eq(journal_remove_owned(j, &by_id), 0);
	by_id.container_id = CID_A;
	by_id.container_name = "mcpv-a";
	cr_assert_eq(journal_remove_owned(j, &by_id), 0);
	cr_assert_eq(journal_count(j), 0);

	/* A name-only entry removed by id and name. */
	c = own_container(NULL, "mcpv-n", tok);
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	by_id.container_id = CID_C;
	by_id.container_name = "mcpv-n";
	cr_assert_eq(journal_remove_owned(j, &by_id), 0);
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);
}

static bool own_podman_exists(const char *name)
{
	char *cmd = xasprintf("podman container exists %s", name);
	int rc = system(cmd);
	free(cmd);
	return rc == 0;
}

/* On the real podman: ours (journal by name only) is removed; one with a
 * foreign token and one without the owner label, both with the same name
 * prefix and image, stay. */
Test(journal_owned, reconcile_on_the_real_podman_removes_only_ours)
{
	if (!real_engine_ready(&own_fe)) {
		cr_skip_test("podman is not installed: the real-engine test "
			     "is skipped (CI installs it)");
		return;
	}
	char tok[JOURNAL_TOKEN_LEN + 1], foreign[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	journal_new_token(foreign);
	char *ours = own_real_names[0], *theirs = own_real_names[1],
	     *plain = own_real_names[2];
	snprintf(ours, 64, "mcpv-jown-%.12s-a", tok);
	snprintf(theirs, 64, "mcpv-jown-%.12s-b", tok);
	snprintf(plain, 64, "mcpv-jown-%.12s-c", tok);
	const char *names[] = {ours, theirs, plain};
	const char *labels[] = {tok, foreign, NULL};
	for (int i = 0; i < 3; i++) {
		char *cmd = xasprintf(
			"podman create -q --name %s --label %s%s "
			"--label mcpvisor.server=s " REAL_ENGINE_IMAGE
			" /empty >/dev/null",
			names[i], labels[i] ? "mcpvisor.owner=" : "x=",
			labels[i] ? labels[i] : "y");
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		free(cmd);
	}
	struct journal *j = own_open();
	struct upstream_owned c = own_container(NULL, ours, tok);
	c.engine = "podman";
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	journal_free(j);

	j = own_open();
	struct journal_report r;
	cr_assert_eq(journal_reconcile(j, 1000, &r), 0);
	cr_assert_eq(r.containers_stopped, 1);
	cr_assert_geq(r.containers_left_alone, 1, "the foreign token");
	cr_assert_eq(r.kept, 0);
	cr_assert_eq(journal_count(j), 0);
	journal_free(j);
	cr_assert_not(own_podman_exists(ours), "ours was not removed");
	cr_assert(own_podman_exists(theirs), "a foreign container removed");
	cr_assert(own_podman_exists(plain), "an unlabelled one removed");
}

static bool own_file_names(const char *name)
{
	json_t *root = own_file();
	json_t *e = own_entries(root);
	bool found = false;
	for (size_t i = 0; i < json_array_size(e); i++) {
		const char *n = json_string_value(
			json_object_get(json_array_get(e, i), "name"));
		found = found || (n && strcmp(n, name) == 0);
	}
	json_decref(root);
	return found;
}

/* Attached to a loop, changes wait for the end of the turn; but the first
 * container of an engine is on disk before the call returns, since its
 * engine may create it at once and the next start must know whom to ask.
 * Another container of an engine already on disk waits like the rest (its
 * reserved token is on disk). */
Test(journal_owned, a_container_of_a_new_engine_is_on_disk_at_once)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct journal *j = own_open();
	journal_attach(j, &loop);
	char tok[4][JOURNAL_TOKEN_LEN + 1];
	for (int i = 0; i < 4; i++)
		journal_take_token(j, tok[i]);
	unsigned sync0 = journal_stats(j).sync_writes;

	struct upstream_owned c = own_container(NULL, "mcpv-first", tok[0]);
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	cr_assert(own_file_names("mcpv-first"), "not on disk at once");
	cr_assert_eq(journal_stats(j).sync_writes, sync0 + 1);

	c = own_container(NULL, "mcpv-second", tok[1]);
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	cr_assert_not(own_file_names("mcpv-second"), "written off the loop");
	cr_assert_eq(journal_stats(j).sync_writes, sync0 + 1);

	c = own_container(NULL, "mcpv-docker", tok[2]);
	c.engine = "docker";
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	cr_assert(own_file_names("mcpv-docker"), "another engine: at once");

	/* Its id later: a replacement, off the loop. */
	c = own_container(CID_A, "mcpv-first", tok[0]);
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	cr_assert_eq(journal_stats(j).sync_writes, sync0 + 2);

	uv_run(&loop, UV_RUN_NOWAIT);
	for (int i = 0; i < 200 && !own_file_names("mcpv-second"); i++)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert(own_file_names("mcpv-second"));
	journal_detach(j);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	journal_free(j);
}

static uint64_t own_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Many containers of ours: removed several at a time (not one engine
 * process per container at once, nor one stop grace per container). */
Test(journal_owned, reconcile_removes_many_containers_a_few_at_a_time)
{
	enum { N = 24 };
	char tok[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok);
	struct journal *j = own_open();
	struct upstream_owned c = own_container(NULL, "mcpv-many", tok);
	c.engine = own_fe.path;
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	journal_free(j);
	struct buf ps, in;
	buf_init(&ps);
	buf_init(&in);
	for (int i = 0; i < N; i++) {
		buf_printf(&ps, "%064x\n", i);
		buf_printf(&in,
			   "%064x\tmcpv-many-%d\ttrue\t"
			   "{\"mcpvisor.owner\":\"%s\"}\n",
			   i, i, tok);
	}
	fake_engine_put(&own_fe, "ps.out", ps.data);
	fake_engine_put(&own_fe, "inspect.out", in.data);
	buf_free(&ps);
	buf_free(&in);
	fake_engine_put(&own_fe, "stop.sleep", "0.4");

	j = own_open();
	struct journal_report r;
	uint64_t t0 = own_now_ms();
	cr_assert_eq(journal_reconcile(j, 1000, &r), 0);
	uint64_t took = own_now_ms() - t0;
	journal_free(j);
	cr_assert_eq(r.containers_stopped, N);
	/* 24 stops of 0.4 s, 8 at a time: 3 rounds. */
	cr_assert_geq(took, 1100, "more than 8 at once: %llu ms",
		      (unsigned long long)took);
	cr_assert_lt(took, 8000, "one at a time: %llu ms",
		     (unsigned long long)took);
}
