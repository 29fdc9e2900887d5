/*
 * Client-to-server backpressure counters (see flow.h).
 */
#include "util/flow.h"

#include <stdlib.h>

#include "util/xmalloc.h"

struct flow *flow_current;

struct flow *flow_new(void (*pause)(void *arg, bool on), void *arg)
{
	struct flow *f = xcalloc(1, sizeof *f);
	f->high = FLOW_HIGH;
	f->low = FLOW_LOW;
	f->refs = 1;
	f->pause = pause;
	f->arg = arg;
	return f;
}

void flow_ref(struct flow *f)
{
	f->refs++;
}

void flow_unref(struct flow *f)
{
	if (f && --f->refs == 0)
		free(f);
}

void flow_detach(struct flow *f)
{
	if (f == NULL)
		return;
	f->pause = NULL;
	f->arg = NULL;
	if (flow_current == f)
		flow_current = NULL;
	flow_unref(f);
}

void flow_add(struct flow *f, size_t n)
{
	f->queued += n;
	if (!f->paused && f->queued > f->high) {
		f->paused = true;
		if (f->pause)
			f->pause(f->arg, true);
	}
}

void flow_sub(struct flow *f, size_t n)
{
	f->queued = n < f->queued ? f->queued - n : 0;
	if (f->paused && f->queued <= f->low) {
		f->paused = false;
		if (f->pause)
			f->pause(f->arg, false);
	}
}
