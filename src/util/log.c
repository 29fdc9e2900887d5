/*
 * Leveled log lines on stderr: time, level, function, message. A message
 * is escaped as it is written (util/escape.h): a server's text in it (a
 * stderr line, an error) can neither drive the reader's terminal nor start
 * a line of its own. When stderr is the runtime's log file (a runtime in
 * the background), the log owns the file and rotates it at a bounded size.
 */
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/escape.h"
#include "util/xmalloc.h"

/* A message longer than this is cut (before it is escaped). */
#define LOG_LINE_MAX 2048

static enum log_level log_threshold = LOG_INFO;

/* The adopted file (log_adopt_file), or NULL. */
static char *log_path;
static char *log_prev_path;
static size_t log_max;

void log_set_level(enum log_level level)
{
	log_threshold = level;
}

int log_parse_level(const char *s, enum log_level *out)
{
	static const char *names[] = {"debug", "info", "warn", "error"};
	for (int i = 0; i < 4; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

int log_adopt_file(const char *path, size_t max_bytes)
{
	struct stat fst, pst;
	if (fstat(STDERR_FILENO, &fst) < 0)
		return -errno;
	if (stat(path, &pst) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(fst.st_mode) || fst.st_dev != pst.st_dev ||
	    fst.st_ino != pst.st_ino)
		return 0;
	log_release_file();
	log_path = xstrdup(path);
	log_prev_path = xasprintf("%s.1", path);
	log_max = max_bytes;
	return 1;
}

void log_release_file(void)
{
	free(log_path);
	free(log_prev_path);
	log_path = log_prev_path = NULL;
}

const char *log_file(void)
{
	return log_path;
}

/* Before a line goes out: a file past the limit becomes path.1 (the one
 * before is dropped) and a new one takes stdout and stderr, so whatever
 * else writes there (the startup lines, a sanitizer) follows. A file that
 * someone moved or removed is replaced the same way, without the rename. */
static void log_rotate_check(void)
{
	struct stat fst, pst;
	if (log_path == NULL || fstat(STDERR_FILENO, &fst) < 0)
		return;
	bool ours = stat(log_path, &pst) == 0 && pst.st_dev == fst.st_dev &&
		    pst.st_ino == fst.st_ino;
	if (ours && (size_t)fst.st_size < log_max)
		return;
	if (ours && rename(log_path, log_prev_path) < 0)
		return; /* it grows on rather than lose lines */
	int fd = open(log_path,
		      O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	if (fd < 0)
		return;
	fflush(stdout);
	fflush(stderr);
	/* dup2 gives 1 and 2 without close-on-exec, as they were. */
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		/* Still writing to the old file: nothing is lost. */
	}
	close(fd);
}

void log_msg(enum log_level level, const char *func, const char *fmt, ...)
{
	static const char *tags[] = {"debug", "info", "warn", "error"};
	if (level < log_threshold)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
	char line[LOG_LINE_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* Each byte escaped takes at most four ("\x1b"). */
	char shown[LOG_LINE_MAX * 4];
	escape_into(shown, sizeof shown, line,
		    (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, 0);
	log_rotate_check();
	if (level == LOG_DEBUG)
		fprintf(stderr, "%s.%03ld mcpvisor debug %s: %s\n", stamp,
			ts.tv_nsec / 1000000, func, shown);
	else
		fprintf(stderr, "%s.%03ld mcpvisor %s: %s\n", stamp,
			ts.tv_nsec / 1000000, tags[level], shown);
}
