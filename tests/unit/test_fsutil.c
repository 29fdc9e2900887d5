/*
 * Unit tests for the file helpers mcpvisor's private files go through:
 * atomic writes never write through a planted symlink (at the temporary
 * name or at the target), reads of our own files refuse symlinks and FIFOs,
 * and a directory is used only when it is ours (a mode open to others is
 * narrowed; another user's folder is refused, naming owner and mode).
 * Each test owns a mkdtemp folder that its fini removes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

#define FST_VICTIM_TEXT "victim secret data\n"
/* The uid of `nobody` on Debian: another user, for tests run as root. */
#define FST_OTHER_UID 65534

static char fst_root[PATH_MAX];

static char *fst_path(const char *name)
{
	return xasprintf("%s/%s", fst_root, name);
}

static void fst_init(void)
{
	strcpy(fst_root, "/tmp/mcpv-fsutil-XXXXXX");
	cr_assert_not_null(mkdtemp(fst_root), "mkdtemp: %s", strerror(errno));
}

static int fst_rm(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void fst_fini(void)
{
	nftw(fst_root, fst_rm, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(fsutil, .init = fst_init, .fini = fst_fini);

/* A 0600 file of "the victim" whose content must survive. */
static char *fst_victim(void)
{
	char *v = fst_path("victim");
	int fd = open(v, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, FST_VICTIM_TEXT, strlen(FST_VICTIM_TEXT)),
		     (ssize_t)strlen(FST_VICTIM_TEXT));
	close(fd);
	return v;
}

static void fst_assert_victim_intact(const char *v)
{
	char *text = NULL;
	cr_assert_eq(fsutil_read_file(v, 4096, &text, NULL), 0);
	cr_assert_str_eq(text, FST_VICTIM_TEXT);
	free(text);
}

Test(fsutil, atomic_write_replaces_a_symlink_at_the_target)
{
	char *v = fst_victim();
	char *target = fst_path("runtime.json");
	cr_assert_eq(symlink(v, target), 0);
	cr_assert_eq(fsutil_write_atomic(target, "{}\n", 3, 0600), 0);
	fst_assert_victim_intact(v);
	struct stat st;
	cr_assert_eq(lstat(target, &st), 0);
	cr_assert(S_ISREG(st.st_mode), "the link itself was replaced");
	cr_assert_eq(st.st_mode & 07777, 0600);
	free(v);
	free(target);
}

Test(fsutil, atomic_write_never_uses_a_planted_temporary_name)
{
	char *v = fst_victim();
	char *target = fst_path("runtime.json");
	/* The names the old code used (path.tmp.PID), for this pid and the
	 * next few, all links to the victim (what repro/squat plants). */
	for (int i = 0; i < 64; i++) {
		char *tmp = xasprintf("%s.tmp.%ld", target, (long)getpid() + i);
		cr_assert_eq(symlink(v, tmp), 0);
		free(tmp);
	}
	char *tmp = xasprintf("%s.tmp", target);
	cr_assert_eq(symlink(v, tmp), 0);
	free(tmp);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(
			fsutil_write_atomic(target, "{\"a\":1}\n", 8, 0600), 0);
	fst_assert_victim_intact(v);
	char *text = NULL;
	cr_assert_eq(fsutil_read_file(target, 4096, &text, NULL), 0);
	cr_assert_str_eq(text, "{\"a\":1}\n");
	free(text);
	free(v);
	free(target);
}

Test(fsutil, reads_of_own_files_refuse_symlinks_and_fifos)
{
	char *v = fst_victim();
	char *link = fst_path("link");
	cr_assert_eq(symlink(v, link), 0);
	char *text = NULL;
	cr_assert_eq(fsutil_read_file(link, 4096, &text, NULL), -ELOOP);
	/* A config the user names may be a link (dotfiles). */
	cr_assert_eq(fsutil_read_user_file(link, 4096, &text, NULL), 0);
	cr_assert_str_eq(text, FST_VICTIM_TEXT);
	free(text);
	/* A FIFO in place of a file must not hang the reader. */
	char *fifo = fst_path("fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(fsutil_read_file(fifo, 4096, &text, NULL), -EINVAL);
	free(v);
	free(link);
	free(fifo);
}

Test(fsutil, private_dir_is_created_0700)
{
	char *d = fst_path("a/b/run");
	char *err = NULL;
	cr_assert_eq(fsutil_private_dir(d, false, &err), -ENOENT);
	cr_assert_null(err);
	cr_assert_eq(fsutil_private_dir(d, true, &err), 0, "%s", err);
	struct stat st;
	cr_assert_eq(stat(d, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0700);
	free(d);
}

Test(fsutil, private_dir_narrows_an_open_mode_of_ours)
{
	char *d = fst_path("run");
	cr_assert_eq(mkdir(d, 0700), 0);
	cr_assert_eq(chmod(d, 0777), 0);
	char *err = NULL;
	cr_assert_eq(fsutil_private_dir(d, true, &err), 0, "%s", err);
	struct stat st;
	cr_assert_eq(stat(d, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700);
	free(d);
}

Test(fsutil, private_dir_refuses_what_is_not_a_directory)
{
	char *f = fst_path("file");
	cr_assert_eq(fsutil_write_atomic(f, "x", 1, 0600), 0);
	char *err = NULL;
	cr_assert_eq(fsutil_private_dir(f, true, &err), -ENOTDIR);
	cr_assert_not_null(err);
	cr_assert_not_null(strstr(err, f), "%s", err);
	free(err);
	free(f);
}

/* The squat of finding 3: another user's 0777 folder where our runtime
 * folder should be. Needs root to make a folder of another user. */
Test(fsutil, private_dir_refuses_a_folder_of_another_user)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to chown a folder to nobody");
	char *d = fst_path("mcpvisor-squat");
	cr_assert_eq(mkdir(d, 0777), 0);
	cr_assert_eq(chmod(d, 0777), 0);
	cr_assert_eq(chown(d, FST_OTHER_UID, FST_OTHER_UID), 0);
	char *err = NULL;
	cr_assert_eq(fsutil_private_dir(d, true, &err), -EPERM);
	cr_assert_not_null(err);
	cr_assert_not_null(strstr(err, d), "names the folder: %s", err);
	cr_assert_not_null(strstr(err, "uid 65534"), "names the owner: %s",
			   err);
	cr_assert_not_null(strstr(err, "0777"), "names the mode: %s", err);
	free(err);
	struct stat st;
	cr_assert_eq(stat(d, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0777, "another's folder untouched");
	/* A link to our own folder planted by another user is refused too:
	 * it could be pointed elsewhere after the check. */
	char *mine = fst_path("mine");
	cr_assert_eq(mkdir(mine, 0700), 0);
	char *link = fst_path("link");
	cr_assert_eq(symlink(mine, link), 0);
	cr_assert_eq(lchown(link, FST_OTHER_UID, FST_OTHER_UID), 0);
	cr_assert_eq(fsutil_private_dir(link, false, &err), -EPERM);
	free(err);
	free(mine);
	free(link);
	free(d);
}

Test(fsutil, paths_create_refuses_a_squatted_runtime_folder)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to chown a folder to nobody");
	struct paths p;
	paths_resolve(&p, fst_root);
	cr_assert_eq(mkdir(p.runtime_dir, 0777), 0);
	cr_assert_eq(chmod(p.runtime_dir, 0777), 0);
	cr_assert_eq(chown(p.runtime_dir, FST_OTHER_UID, FST_OTHER_UID), 0);
	char *err = NULL;
	cr_assert_eq(paths_create(&p, &err), -EPERM);
	cr_assert_not_null(strstr(err, p.runtime_dir), "%s", err);
	free(err);
	cr_assert_eq(paths_check(&p, &err), -EPERM, "clients refuse it too");
	free(err);
	paths_free(&p);
}
