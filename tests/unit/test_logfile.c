/* The runtime's log file: adopted only when stderr is that file, rotated
 * at its size limit to one previous file, and replaced when removed. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

static char dir[] = "/tmp/mcpv-logfile-XXXXXX";
static char path[256], prev[256];
static int saved_out = -1, saved_err = -1;

/* stderr (and stdout) become the file at path, as a launcher makes them. */
static void lf_setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/runtime.log", dir);
	snprintf(prev, sizeof prev, "%s/runtime.log.1", dir);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(1);
	saved_err = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
}

static void lf_teardown(void)
{
	log_release_file();
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	unlink(path);
	unlink(prev);
	char p2[300];
	snprintf(p2, sizeof p2, "%s.2", path);
	unlink(p2);
	rmdir(dir);
}

static long lf_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* The numbers of the "line N" lines of file p, in order. */
static int lf_numbers(const char *p, int *out, int max)
{
	FILE *f = fopen(p, "r");
	if (f == NULL)
		return 0;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, f) && n < max) {
		char *m = strstr(line, "line ");
		if (m)
			out[n++] = atoi(m + 5);
	}
	fclose(f);
	return n;
}

TestSuite(logfile, .init = lf_setup, .fini = lf_teardown);

Test(logfile, rotated_at_the_limit_to_one_previous_file)
{
	cr_assert_eq(log_adopt_file(path, 2048), 1);
	cr_assert_str_eq(log_file(), path);
	for (int i = 0; i < 200; i++)
		log_info("line %d of the test, with some padding to fill", i);
	/* Each file stays within the limit and one line. */
	cr_assert_leq(lf_size(path), 2048 + 200);
	cr_assert_geq(lf_size(prev), 2048);
	cr_assert_leq(lf_size(prev), 2048 + 200);
	char p2[300];
	snprintf(p2, sizeof p2, "%s.2", path);
	cr_assert_eq(lf_size(p2), -1, "only one previous file is kept");
	/* The two files together end with the last lines, none lost
	 * between them. */
	int a[400], b[400];
	int na = lf_numbers(prev, a, 400), nb = lf_numbers(path, b, 400);
	cr_assert_gt(na, 0);
	cr_assert_gt(nb, 0);
	cr_assert_eq(b[nb - 1], 199);
	cr_assert_eq(a[na - 1] + 1, b[0]);
	for (int i = 1; i < nb; i++)
		cr_assert_eq(b[i], b[i - 1] + 1);
	/* What else writes to stdout follows the new file. */
	printf("from stdout\n");
	fflush(stdout);
	FILE *f = fopen(path, "r");
	char buf[8192];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	cr_assert_not_null(strstr(buf, "from stdout"));
}

Test(logfile, not_adopted_when_stderr_is_another_file)
{
	char other[300];
	snprintf(other, sizeof other, "%s/other.log", dir);
	int fd = open(other, O_WRONLY | O_CREAT, 0600);
	close(fd);
	cr_assert_eq(log_adopt_file(other, 2048), 0);
	cr_assert_null(log_file());
	for (int i = 0; i < 100; i++)
		log_info("line %d of the test, with some padding to fill", i);
	cr_assert_eq(lf_size(prev), -1);
	unlink(other);
}

Test(logfile, a_removed_file_is_made_again)
{
	cr_assert_eq(log_adopt_file(path, 1 << 20), 1);
	log_info("line 1");
	cr_assert_eq(unlink(path), 0);
	log_info("line 2");
	int b[8];
	cr_assert_eq(lf_numbers(path, b, 8), 1);
	cr_assert_eq(b[0], 2);
	cr_assert_eq(lf_size(prev), -1, "nothing to keep: it was removed");
}
