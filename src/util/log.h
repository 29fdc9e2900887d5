/*
 * Logging to stderr with a level and the calling function's name. Never pass
 * a secret: config values from env and headers go through config's masking.
 */
#ifndef MCPV_LOG_H
#define MCPV_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level level);
/* "debug", "info", "warn", "error"; returns -EINVAL on anything else. */
int log_parse_level(const char *s, enum log_level *out);
void log_msg(enum log_level level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(...) log_msg(LOG_DEBUG, __func__, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __func__, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __func__, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __func__, __VA_ARGS__)

#endif
