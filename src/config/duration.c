/*
 * Durations in config files: milliseconds as a number or a string with a
 * unit, bounded so that deadlines computed from them cannot overflow.
 */
#include <errno.h>
#include <string.h>

#include "config/config.h"

/* Deadlines are computed as now + duration; 2^53 ms (285,000 years) keeps
 * that sum far from int64 overflow and exact in any JSON reader. */
#define CFG_MAX_DURATION_MS ((int64_t)1 << 53)

int config_parse_duration(const json_t *v, int64_t *ms)
{
	if (v == NULL)
		return -EINVAL;
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		if (n < 0 || n > CFG_MAX_DURATION_MS)
			return -EINVAL;
		*ms = n;
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	size_t i = 0;
	int64_t n = 0;
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		n = n * 10 + (s[i] - '0');
		if (n > CFG_MAX_DURATION_MS)
			return -EINVAL;
		i++;
	}
	if (i == 0)
		return -EINVAL;
	const char *unit = s + i;
	size_t ulen = len - i;
	int64_t mult;
	if (ulen == 0 || (ulen == 2 && memcmp(unit, "ms", 2) == 0))
		mult = 1;
	else if (ulen == 1 && unit[0] == 's')
		mult = 1000;
	else if (ulen == 1 && unit[0] == 'm')
		mult = 60 * 1000;
	else if (ulen == 1 && unit[0] == 'h')
		mult = 60 * 60 * 1000;
	else
		return -EINVAL;
	if (n > CFG_MAX_DURATION_MS / mult)
		return -EINVAL;
	*ms = n * mult;
	return 0;
}
