/*
 * Logging to stderr with a level and the calling function's name. Never pass
 * a secret: config values from env and headers go through config's masking.
 * Every message is escaped as it is written (util/escape.h), so a server's
 * text in it never drives a terminal or forges a line. A background
 * runtime's stderr is its log file, which the log rotates.
 */
#ifndef MCPV_LOG_H
#define MCPV_LOG_H

#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level level);
/* "debug", "info", "warn", "error"; returns -EINVAL on anything else. */
int log_parse_level(const char *s, enum log_level *out);

/* The runtime's log file rotates past this size (the default). */
#define LOG_FILE_MAX (1024 * 1024)
/* When stderr is the file at path (a runtime in the background writes
 * there), the log owns it from now: before a line would be written to a
 * file of max_bytes or more, it is renamed to path.1 (the one before is
 * dropped) and a new file at path takes stdout and stderr. 1 when adopted,
 * 0 when stderr is something else, or -errno. */
int log_adopt_file(const char *path, size_t max_bytes);
void log_release_file(void);
/* The adopted file, or NULL. */
const char *log_file(void);
void log_msg(enum log_level level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(...) log_msg(LOG_DEBUG, __func__, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __func__, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __func__, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __func__, __VA_ARGS__)

#endif
