/*
 * The journal's typed owned resources: processes (with the loopback port
 * they serve on) and containers round-trip through the file; a file
 * written before "kind" still reads as processes; reconcile stops a
 * process entry, leaves a foreign pid alone and keeps a container entry
 * (logged, not stopped: containers are reconciled from the next release);
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
#include <unistd.h>
#include <uv.h>

#include "journal/journal.h"
#include "util/procfs.h"
#include "util/xmalloc.h"

#define OWN_GRACE_MS 2000

static char own_dir[PATH_MAX];
static pid_t own_child;

static void own_setup(void)
{
	snprintf(own_dir, sizeof own_dir, "/tmp/mcpv-jowned-XXXXXX");
	cr_assert_not_null(mkdtemp(own_dir));
	own_child = 0;
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
	rmdir(own_dir);
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
 * container entry is kept, untouched, for the release that can stop it. */
Test(journal_owned, reconcile_keeps_containers_and_spares_a_foreign_pid)
{
	uint64_t start;
	pid_t other = own_spawn(&start);
	char tok[2][JOURNAL_TOKEN_LEN + 1];
	journal_new_token(tok[0]);
	journal_new_token(tok[1]);
	struct journal *j = own_open();
	struct upstream_owned p = own_process(other, start + 1, 0, tok[0]);
	struct upstream_owned c = own_container(OWN_ID, "mcpv-demo-1", tok[1]);
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
