/* Bursts of events folded into one (see debounce.h). */
#include "util/debounce.h"

void debounce_init(struct debounce *d, uint64_t quiet_ms, uint64_t max_ms)
{
	*d = (struct debounce){.quiet_ms = quiet_ms,
			       .max_ms = max_ms < quiet_ms ? quiet_ms : max_ms};
}

void debounce_event(struct debounce *d, uint64_t now_ms)
{
	if (d->events == 0)
		d->first_ms = now_ms;
	d->last_ms = now_ms;
	if (d->events < UINT32_MAX)
		d->events++;
}

bool debounce_pending(const struct debounce *d)
{
	return d->events > 0;
}

uint64_t debounce_wait_ms(const struct debounce *d, uint64_t now_ms)
{
	if (d->events == 0)
		return UINT64_MAX;
	uint64_t quiet_at = d->last_ms + d->quiet_ms;
	uint64_t max_at = d->first_ms + d->max_ms;
	uint64_t due = quiet_at < max_at ? quiet_at : max_at;
	return now_ms >= due ? 0 : due - now_ms;
}

bool debounce_take(struct debounce *d, uint64_t now_ms, unsigned *events,
		   uint64_t *span_ms)
{
	if (d->events == 0 || debounce_wait_ms(d, now_ms) > 0)
		return false;
	*events = d->events;
	*span_ms = d->last_ms - d->first_ms;
	d->events = 0;
	return true;
}
