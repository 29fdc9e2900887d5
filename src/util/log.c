/* Leveled log lines on stderr: time, level, function, message. */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level log_threshold = LOG_INFO;

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
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (level == LOG_DEBUG)
		fprintf(stderr, "%s.%03ld mcpvisor debug %s: %s\n", stamp,
			ts.tv_nsec / 1000000, func, line);
	else
		fprintf(stderr, "%s.%03ld mcpvisor %s: %s\n", stamp,
			ts.tv_nsec / 1000000, tags[level], line);
}
