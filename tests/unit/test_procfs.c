/*
 * Unit tests for the /proc reader: stat lines with crafted comm names
 * (spaces, parentheses, a ')' last), this process's own fields, the owner,
 * bounded NUL-separated environment lookups, the pid list, the search by
 * environment, and a signal that refuses a pid whose start time changed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/procfs.h"
#include "proc/snap.h"
#include "util/xmalloc.h"

#define TST_TAIL                                                               \
	" S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 "   \
	"18446744073709551615\n"

struct tst_stat_case {
	const char *text;
	int rc;
	pid_t pid;
	pid_t pgrp;
	uint64_t start;
};

/* Comm names as a process can set them (up to 15 bytes, anything but
 * NUL), and lines that must not parse. */
static const struct tst_stat_case tst_stat_cases[] = {
	{"123 (sleep)" TST_TAIL, 0, 123, 42, 987654},
	{"123 (a b c)" TST_TAIL, 0, 123, 42, 987654},
	{"123 (a) 1 2 (3 4) 5)" TST_TAIL, 0, 123, 42, 987654},
	{"123 ())))" TST_TAIL, 0, 123, 42, 987654},
	{"123 ( S 1 42 42 )" TST_TAIL, 0, 123, 42, 987654},
	{"123 ()" TST_TAIL, 0, 123, 42, 987654},
	{"123 (x) S 1 42", -EINVAL, 0, 0, 0},
	{"123 sleep" TST_TAIL, -EINVAL, 0, 0, 0},
	{"abc (x)" TST_TAIL, -EINVAL, 0, 0, 0},
	{"123 (x) S 1 4x2 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 9 1",
	 -EINVAL, 0, 0, 0},
	{"123 (x) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
	 "99999999999999999999999 1",
	 -EINVAL, 0, 0, 0},
	{"", -EINVAL, 0, 0, 0},
};

Test(procfs, parse_stat_counts_fields_after_the_last_paren)
{
	size_t n = sizeof tst_stat_cases / sizeof *tst_stat_cases;
	for (size_t i = 0; i < n; i++) {
		const struct tst_stat_case *c = &tst_stat_cases[i];
		struct procfs_stat st;
		int rc = procfs_parse_stat(c->text, strlen(c->text), &st);
		cr_assert_eq(rc, c->rc, "case %zu (%s): rc %d", i, c->text, rc);
		if (rc < 0)
			continue;
		cr_assert_eq(st.pid, c->pid, "case %zu pid", i);
		cr_assert_eq(st.state, 'S', "case %zu state", i);
		cr_assert_eq(st.ppid, 1, "case %zu ppid", i);
		cr_assert_eq(st.pgrp, c->pgrp, "case %zu pgrp", i);
		cr_assert_eq(st.start_time, c->start, "case %zu start", i);
	}
}

Test(procfs, parse_stat_needs_no_terminator)
{
	/* A buffer cut right after field 22, not NUL-terminated. */
	const char *text = "7 (x) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55";
	char *copy = xmalloc(strlen(text));
	memcpy(copy, text, strlen(text));
	struct procfs_stat st;
	cr_assert_eq(procfs_parse_stat(copy, strlen(text), &st), 0);
	cr_assert_eq(st.start_time, 55);
	free(copy);
}

Test(procfs, reads_this_process)
{
	struct procfs_stat st;
	cr_assert_eq(procfs_read_stat(getpid(), &st), 0);
	cr_assert_eq(st.pid, getpid());
	cr_assert_eq(st.ppid, getppid());
	cr_assert_eq(st.pgrp, getpgrp());
	cr_assert_eq(st.state, 'R');
	cr_assert_gt(st.start_time, 0);
	cr_assert_eq(procfs_start_time(getpid()), st.start_time);
	cr_assert(procfs_alive(getpid(), st.start_time));
	cr_assert(!procfs_alive(getpid(), st.start_time + 1));
	uid_t uid;
	cr_assert_eq(procfs_uid(getpid(), &uid), 0);
	cr_assert_eq(uid, geteuid());
	cr_assert_eq(procfs_read_stat(0, &st), -EINVAL);
	cr_assert_eq(procfs_start_time(-1), 0);
	cr_assert_eq(procfs_start_time(0x3fffffff), 0);
}

Test(procfs, odd_comm_of_this_process)
{
	struct procfs_stat before, after;
	cr_assert_eq(procfs_read_stat(getpid(), &before), 0);
	prctl(PR_SET_NAME, "a) 1 2 (3 4) 5");
	cr_assert_eq(procfs_read_stat(getpid(), &after), 0);
	cr_assert_eq(after.pgrp, before.pgrp);
	cr_assert_eq(after.ppid, before.ppid);
	cr_assert_eq(after.start_time, before.start_time);
}

Test(procfs, environ_find_matches_whole_entries)
{
	/* "A=1", "AB=2", "B=", "C=x=y", and a last entry cut off. */
	static const char env[] = "A=1\0AB=2\0B=\0C=x=y\0D=cut";
	size_t len = sizeof env - 1; /* without the array's own NUL */
	size_t vlen = 99;
	const char *v = procfs_environ_find(env, len, "A", &vlen);
	cr_assert(v && vlen == 1 && memcmp(v, "1", 1) == 0);
	v = procfs_environ_find(env, len, "AB", &vlen);
	cr_assert(v && vlen == 1 && memcmp(v, "2", 1) == 0);
	v = procfs_environ_find(env, len, "B", &vlen);
	cr_assert(v && vlen == 0, "an empty value is still an entry");
	v = procfs_environ_find(env, len, "C", &vlen);
	cr_assert(v && vlen == 3 && memcmp(v, "x=y", 3) == 0);
	cr_assert_null(procfs_environ_find(env, len, "D", &vlen),
		       "an entry cut by the bound counted");
	cr_assert_null(procfs_environ_find(env, len, "X", &vlen));
	cr_assert_null(procfs_environ_find(env, 0, "A", &vlen));
}

/* A sleep with exactly the given environment, once it has exec'd. */
static pid_t tst_sleep_with(char *const *envp)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *argv[] = {"sleep", "30", NULL};
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	char v[64];
	for (int i = 0; i < 500; i++) {
		if (procfs_environ_get(pid, geteuid(), "PATH", v, sizeof v) ==
			    0 &&
		    strcmp(v, "/bin") == 0)
			return pid;
		usleep(10 * 1000);
	}
	cr_assert_fail("the child never ran");
	return -1;
}

static void tst_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(procfs, environ_get_and_find_by_env)
{
	char *env1[] = {"PATH=/bin", "TST_OWNER=aaaa", NULL};
	char *env2[] = {"PATH=/bin", "TST_OWNER=bbbb", NULL};
	char *env3[] = {"PATH=/bin", "TST_OWNERX=aaaa", NULL};
	pid_t a = tst_sleep_with(env1);
	pid_t b = tst_sleep_with(env2);
	pid_t c = tst_sleep_with(env3);

	char v[16];
	cr_assert_eq(procfs_environ_get(a, geteuid(), "TST_OWNER", v, sizeof v),
		     0);
	cr_assert_str_eq(v, "aaaa");
	cr_assert_eq(procfs_environ_get(a, geteuid(), "TST_OWNER", v, 4),
		     -ENOENT, "a value that does not fit was cut");
	cr_assert_eq(procfs_environ_get(c, geteuid(), "TST_OWNER", v, sizeof v),
		     -ENOENT);
	cr_assert_eq(
		procfs_environ_get(a, geteuid() + 1, "TST_OWNER", v, sizeof v),
		-EPERM, "another uid's process was read");

	const char *values[] = {"zzzz", "aaaa"};
	struct proc_owned *found = NULL;
	size_t n = 0;
	struct proc_snap *snap = NULL;
	cr_assert_eq(proc_snap_take(&snap), 0);
	proc_snap_owned(snap, geteuid(), 0, "TST_OWNER", values, 2, &found, &n);
	cr_assert_eq(n, 1, "found %zu", n);
	cr_assert_eq(found[0].pid, a);
	cr_assert_eq(found[0].which, 1);
	cr_assert_eq(found[0].start_time, procfs_start_time(a));
	free(found);
	proc_snap_owned(snap, geteuid() + 1, 0, "TST_OWNER", values, 2, &found,
			&n);
	cr_assert_eq(n, 0, "another uid's processes matched");
	free(found);
	/* Below us (they are our children), and below no one else. */
	proc_snap_owned(snap, geteuid(), getpid(), "TST_OWNER", values, 2,
			&found, &n);
	cr_assert_eq(n, 1);
	free(found);
	proc_snap_owned(snap, geteuid(), getppid(), "TST_OWNER", values, 2,
			&found, &n);
	cr_assert_eq(n, 1, "a grandchild of our parent");
	free(found);
	proc_snap_owned(snap, geteuid(), a, "TST_OWNER", values, 2, &found, &n);
	cr_assert_eq(n, 0, "found below a process with no children");
	free(found);
	/* A value read from a pid that changed hands is not its own. */
	struct procfs_stat moved = *proc_snap_find(snap, a);
	moved.start_time++;
	cr_assert_eq(
		proc_snap_environ(&moved, geteuid(), "TST_OWNER", v, sizeof v),
		-ESRCH);
	proc_snap_free(snap);
	tst_end(a);
	tst_end(b);
	tst_end(c);
}

Test(procfs, snapshot_holds_this_process_and_its_parent)
{
	struct proc_snap *snap = NULL;
	cr_assert_eq(proc_snap_take(&snap), 0);
	const struct procfs_stat *self = proc_snap_find(snap, getpid());
	cr_assert_not_null(self);
	cr_assert_eq(self->ppid, getppid());
	cr_assert_eq(self->pgrp, getpgrp());
	cr_assert_eq(self->sid, getsid(0));
	cr_assert_gt(self->rss_pages, 0);
	cr_assert_eq(self->start_time, procfs_start_time(getpid()));
	cr_assert(proc_snap_descends(snap, self, getppid()));
	cr_assert_not(proc_snap_descends(snap, self, getpid()));
	for (size_t i = 1; i < proc_snap_count(snap); i++)
		cr_assert_lt(proc_snap_at(snap, i - 1)->pid,
			     proc_snap_at(snap, i)->pid, "in pid order");
	cr_assert_null(proc_snap_at(snap, proc_snap_count(snap)));
	cr_assert_null(proc_snap_find(snap, 0x3fffffff));
	proc_snap_free(snap);
	proc_snap_free(NULL);
}

Test(procfs, signal_refuses_another_start_time)
{
	char *env[] = {"PATH=/bin", NULL};
	pid_t pid = tst_sleep_with(env);
	uint64_t st = procfs_start_time(pid);
	cr_assert_neq(st, 0);
	cr_assert(!procfs_signal(pid, st + 1, SIGKILL));
	cr_assert(procfs_alive(pid, st), "signalled despite the start time");
	cr_assert(procfs_signal(pid, st, SIGKILL));
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	cr_assert(!procfs_signal(pid, st, SIGKILL), "a reaped pid signalled");
	cr_assert(!procfs_signal(0, 0, SIGKILL));
}
