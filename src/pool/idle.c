/*
 * The pool's idle timer, one per entry: an instance that no request holds
 * closes after its idle time, unless sessions follow resources of its
 * server (their updates are a standing request); and a followed instance
 * that failed starts again once its backoff is over.
 */
#include "pool/lease.h"
#include "pool/pool_int.h"
#include "util/clock.h"
#include "util/log.h"

/* The least wait before a followed instance that failed starts again. */
#define POOL_REVIVE_MIN_MS 1000

static void pool_idle_cb(uv_timer_t *t);

/* A start for the resources its sessions follow: nobody waits for it. */
static void pool_revive_cb(void *arg, struct instance *inst, int err)
{
	(void)arg;
	(void)inst;
	(void)err;
}

bool pool_entry_followed(const struct pool_entry *e)
{
	return lease_members(e->leases) > 0 &&
	       instance_subs_followed(e->inst) > 0;
}

/* The idle timer also brings back a followed instance that failed, once
 * its backoff is over (and never sooner than POOL_REVIVE_MIN_MS: a
 * failure that set none must not make a loop): nothing else would ask
 * for it. */
static void pool_revive_arm(struct pool_entry *e)
{
	uint64_t wait = instance_backoff_remaining_ms(e->inst);
	uv_timer_start(&e->idle_timer, pool_idle_cb,
		       wait > POOL_REVIVE_MIN_MS ? wait : POOL_REVIVE_MIN_MS,
		       0);
}

static void pool_idle_cb(uv_timer_t *t)
{
	struct pool_entry *e = t->data;
	uint64_t now = clock_now_ms();
	if (lease_holders(e->leases) > 0)
		return;
	if (instance_state(e->inst) == INSTANCE_FAILED &&
	    pool_entry_followed(e)) {
		if (instance_backoff_remaining_ms(e->inst) > 0) {
			pool_revive_arm(e);
			return;
		}
		log_info("instance %s: starting again for the resources its "
			 "sessions follow",
			 e->name);
		instance_ensure(e->inst, pool_revive_cb, NULL);
		return;
	}
	if (!lease_idle_due(e->leases, now, e->idle_ms)) {
		pool_idle_arm(e);
		return;
	}
	/* Kept warm after its last session, and now idle: nothing is left
	 * to keep (its lists are in the tool cache). */
	enum instance_state st = instance_state(e->inst);
	if (lease_members(e->leases) == 0 && st != INSTANCE_NEEDS_AUTH) {
		pool_entry_close(e, "idle, and no session uses it");
		return;
	}
	if (st == INSTANCE_STOPPED || st == INSTANCE_STOPPING ||
	    st == INSTANCE_NEEDS_AUTH)
		return;
	/* Resources its sessions follow are a standing request of theirs
	 * (updates come when they change, not when asked): it is in use,
	 * and is looked at again an idle time later. A session that ends
	 * gives its own back (session/subs.c). */
	if (st == INSTANCE_READY && pool_entry_followed(e)) {
		lease_touch(e->leases, now);
		pool_idle_arm(e);
		return;
	}
	log_info("instance %s: idle for %llu ms, closing", e->name,
		 (unsigned long long)(now - lease_idle_since(e->leases)));
	/* Its lists stay offered; the next use starts it again. */
	instance_stop(e->inst, "idle", true);
}

void pool_idle_arm(struct pool_entry *e)
{
	if (lease_holders(e->leases) > 0)
		return;
	if (instance_state(e->inst) == INSTANCE_FAILED &&
	    pool_entry_followed(e)) {
		pool_revive_arm(e);
		return;
	}
	if (e->idle_ms == 0)
		return;
	uint64_t now = clock_now_ms();
	uint64_t due = lease_idle_since(e->leases) + e->idle_ms;
	uv_timer_start(&e->idle_timer, pool_idle_cb, due > now ? due - now : 0,
		       0);
}
