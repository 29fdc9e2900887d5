/*
 * The containers' part of the reconciliation after a crash: for each
 * engine the journal's container entries name, list the containers that
 * carry our owner label and stop and remove exactly those whose owner
 * token the journal holds (an entry's or a reserved one); a container with
 * another token, or without the label, is never named to the engine. An
 * engine that is missing or fails keeps its entries for the next start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "container/engine.h"
#include "journal/journal.h"
#include "journal/journal_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* How long listing may take before the engine counts as failing; the
 * stop ladder has engine_remove's own bounds (stop -t, then rm -f). */
#define JOURNAL_ENGINE_LIST_MS 10000

/* Engine commands at once: enough that the reconcile takes about one
 * stop grace, not one per container, without a process per container. */
#define JOURNAL_ENGINE_PARALLEL 8

struct journal_ctr_batch;

/* One container of ours, being removed. */
struct journal_ctr_target {
	struct journal_ctr_batch *b;
	const struct engine_container *c;
	bool gone;
	char *why;
};

/* The removals on one engine, on a loop of our own. */
struct journal_ctr_batch {
	uv_loop_t loop;
	const char *engine;
	unsigned stop_secs;
	struct journal_ctr_target *t;
	size_t n;
	size_t next; /* the first not started */
};

static bool journal_token_held(const struct journal *j, const char *token)
{
	for (size_t i = 0; i < j->n; i++) {
		if (strcmp(j->entries[i].token, token) == 0)
			return true;
	}
	for (size_t i = 0; i < j->nreserved; i++) {
		if (strcmp(j->reserved[i].token, token) == 0)
			return true;
	}
	return false;
}

static void journal_ctr_removed_cb(void *ctx, bool gone, const char *why);

/* Starts the next removal that can start. */
static void journal_ctr_start_next(struct journal_ctr_batch *b)
{
	while (b->next < b->n) {
		struct journal_ctr_target *t = &b->t[b->next++];
		int rc = engine_remove(&b->loop, b->engine, t->c->id,
				       b->stop_secs, journal_ctr_removed_cb, t);
		if (rc == 0)
			return;
		t->why = xstrdup(strerror(-rc));
	}
}

static void journal_ctr_removed_cb(void *ctx, bool gone, const char *why)
{
	struct journal_ctr_target *t = ctx;
	t->gone = gone;
	t->why = why ? xstrdup(why) : NULL;
	journal_ctr_start_next(t->b);
}

/* Stops and removes every target, JOURNAL_ENGINE_PARALLEL at a time. */
static void journal_ctr_remove_all(const char *engine, unsigned stop_secs,
				   struct journal_ctr_target *t, size_t n)
{
	struct journal_ctr_batch b = {
		.engine = engine, .stop_secs = stop_secs, .t = t, .n = n};
	for (size_t i = 0; i < n; i++)
		t[i].b = &b;
	int rc = uv_loop_init(&b.loop);
	if (rc < 0) {
		for (size_t i = 0; i < n; i++)
			t[i].why = xstrdup(uv_strerror(rc));
		return;
	}
	for (int k = 0; k < JOURNAL_ENGINE_PARALLEL; k++)
		journal_ctr_start_next(&b);
	uv_run(&b.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&b.loop) != 0)
		log_warn("journal: engine loop still has handles");
}

/* The entries of engine whose container was not removed: kept. */
static void journal_ctr_keep(struct journal *j, const char *engine,
			     const char *token, struct journal_report *r)
{
	for (size_t i = 0; i < j->n; i++) {
		struct journal_entry *e = &j->entries[i];
		if (e->kind != UPSTREAM_OWNED_CONTAINER || e->carried ||
		    strcmp(e->engine, engine) != 0 ||
		    (token && strcmp(e->token, token) != 0))
			continue;
		e->carried = true;
		r->kept++;
	}
}

/* Entries of engine whose token no listed container carries: their
 * containers are gone. */
static void journal_ctr_settle(struct journal *j, const char *engine,
			       const struct engine_container *list, size_t n,
			       struct journal_report *r)
{
	for (size_t i = 0; i < j->n; i++) {
		const struct journal_entry *e = &j->entries[i];
		if (e->kind != UPSTREAM_OWNED_CONTAINER || e->carried ||
		    strcmp(e->engine, engine) != 0)
			continue;
		bool found = false;
		for (size_t k = 0; k < n && !found; k++)
			found = strcmp(list[k].owner, e->token) == 0;
		r->gone += !found;
	}
}

static void journal_ctr_engine(struct journal *j, const char *engine,
			       unsigned stop_secs, struct journal_report *r)
{
	struct engine_container *list = NULL;
	size_t n = 0;
	char *why = NULL;
	int rc = engine_list_owned_sync(engine, JOURNAL_ENGINE_LIST_MS, &list,
					&n, &why);
	if (rc < 0) {
		size_t before = r->kept;
		journal_ctr_keep(j, engine, NULL, r);
		log_warn("journal: cannot list containers through %s (%s); "
			 "%zu container entr%s kept for the next start",
			 engine, why ? why : strerror(-rc), r->kept - before,
			 r->kept - before == 1 ? "y" : "ies");
		free(why);
		return;
	}
	struct journal_ctr_target *t = xcalloc(n ? n : 1, sizeof *t);
	size_t nt = 0;
	for (size_t i = 0; i < n; i++) {
		if (!journal_token_held(j, list[i].owner)) {
			/* Another runtime's (another home), or a label
			 * someone set by hand: not ours to touch. */
			log_debug("container %s (%.12s) has another owner; "
				  "left alone",
				  list[i].name, list[i].id);
			r->containers_left_alone++;
			continue;
		}
		t[nt++].c = &list[i];
	}
	journal_ctr_remove_all(engine, stop_secs, t, nt);
	for (size_t i = 0; i < nt; i++) {
		const struct engine_container *c = t[i].c;
		if (t[i].gone) {
			log_info("stopped container %s (%s)%s%s, left by the "
				 "last runtime",
				 c->name, c->id,
				 *c->server ? " of server " : "", c->server);
			r->containers_stopped++;
		} else {
			log_warn("container %s (%s) could not be removed "
				 "(%s); kept for the next start",
				 c->name, c->id, t[i].why ? t[i].why : "?");
			journal_ctr_keep(j, engine, c->owner, r);
		}
		free(t[i].why);
	}
	free(t);
	journal_ctr_settle(j, engine, list, n, r);
	engine_containers_free(list, n);
}

void journal_reconcile_containers(struct journal *j, unsigned grace_ms,
				  struct journal_report *r)
{
	unsigned stop_secs = (grace_ms + 999) / 1000;
	for (size_t i = 0; i < j->n; i++) {
		const struct journal_entry *e = &j->entries[i];
		if (e->kind != UPSTREAM_OWNED_CONTAINER)
			continue;
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = j->entries[k].kind == UPSTREAM_OWNED_CONTAINER &&
			       strcmp(j->entries[k].engine, e->engine) == 0;
		if (!seen)
			journal_ctr_engine(j, e->engine, stop_secs, r);
	}
}
