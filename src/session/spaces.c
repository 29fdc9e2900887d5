/* The per-space cache of .mcp.json reads, filled by uv_queue_work. */
#include "session/spaces.h"

#include <stdlib.h>
#include <string.h>

#include "session/hub.h"
#include "session/session.h"
#include "util/filewatch.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct spaces_wait {
	struct spaces_wait *next;
	struct space_entry *e;
	spaces_cb cb;
	void *arg;
	bool kept; /* its handle is held: only spaces_cancel frees it */
};

struct space_entry {
	struct space_entry *next;
	struct spaces *sp; /* NULL once spaces_free let it go mid-work */
	char *dir;
	char *file;
	struct trust_space *cur;  /* last result, or NULL */
	struct trust_space *done; /* what the work item made */
	bool busy;
	uv_work_t work;
	struct spaces_wait *waiters;
	struct filewatch *watch; /* with spaces_watch */
	/* A read found it saying something else than the read before: its
	 * older sessions may not know yet (a session opened since an edit
	 * read it first). Cleared when the change is passed on. */
	bool changed;
	bool checking;
};

struct spaces {
	uv_loop_t *loop;
	struct space_entry *entries;
	size_t n;
	spaces_cb on_change; /* spaces_watch */
	void *change_arg;
};

struct spaces *spaces_new(uv_loop_t *loop)
{
	struct spaces *sp = xcalloc(1, sizeof *sp);
	sp->loop = loop;
	return sp;
}

/* Waiters of an entry that goes: a held handle stays valid (detached)
 * until its holder cancels it; its callback never comes. */
static void spaces_drop_waiters(struct space_entry *e)
{
	while (e->waiters) {
		struct spaces_wait *w = e->waiters;
		e->waiters = w->next;
		w->e = NULL;
		if (!w->kept)
			free(w);
	}
}

static void spaces_entry_free(struct space_entry *e)
{
	spaces_drop_waiters(e);
	filewatch_free(e->watch);
	trust_space_unref(e->cur);
	trust_space_unref(e->done);
	free(e->dir);
	free(e->file);
	free(e);
}

void spaces_free(struct spaces *sp)
{
	if (sp == NULL)
		return;
	while (sp->entries) {
		struct space_entry *e = sp->entries;
		sp->entries = e->next;
		filewatch_free(e->watch);
		e->watch = NULL;
		if (e->busy) {
			/* Its thread still reads e->cur: the after-work
			 * callback frees it. */
			e->sp = NULL;
			spaces_drop_waiters(e);
		} else {
			spaces_entry_free(e);
		}
	}
	free(sp);
}

/* Whether two reads of a space say the same: same bytes and the same word
 * of the store on them (an `allow` changes what the same bytes mean). */
static bool spaces_same(const struct trust_space *a,
			const struct trust_space *b)
{
	if (a->err != b->err)
		return false;
	if (a->err < 0)
		return true;
	bool a_ok = a->allowed && strcmp(a->allowed, a->hash) == 0;
	bool b_ok = b->allowed && strcmp(b->allowed, b->hash) == 0;
	return strcmp(a->hash, b->hash) == 0 && a_ok == b_ok;
}

/* On a pool thread: e->cur and e->file are not changed while busy. */
static void spaces_work_cb(uv_work_t *req)
{
	struct space_entry *e = req->data;
	e->done = trust_space_read(NULL, e->file, e->cur);
}

static void spaces_after_cb(uv_work_t *req, int status)
{
	(void)status;
	struct space_entry *e = req->data;
	e->busy = false;
	if (e->sp == NULL) {
		spaces_entry_free(e);
		return;
	}
	if (e->done) {
		if (e->cur && !spaces_same(e->cur, e->done))
			e->changed = true;
		trust_space_unref(e->cur);
		e->cur = e->done;
		e->done = NULL;
	}
	/* Waiters run in the order they came; each is off the list before
	 * its callback, which may ask for this space again. */
	struct spaces_wait *list = e->waiters;
	e->waiters = NULL;
	struct trust_space *ts = e->cur;
	trust_space_ref(ts);
	while (list) {
		struct spaces_wait *w = list;
		list = w->next;
		spaces_cb cb = w->cb;
		void *arg = w->arg;
		w->e = NULL;
		free(w);
		cb(arg, e->dir, ts);
	}
	trust_space_unref(ts);
}

static struct space_entry *spaces_find(struct spaces *sp, const char *dir)
{
	for (struct space_entry *e = sp->entries; e; e = e->next)
		if (strcmp(e->dir, dir) == 0)
			return e;
	return NULL;
}

/* Over the cap: one idle entry goes (its result is only a cache). */
static void spaces_trim(struct spaces *sp)
{
	if (sp->n < SPACES_MAX)
		return;
	for (struct space_entry **pp = &sp->entries; *pp; pp = &(*pp)->next) {
		struct space_entry *e = *pp;
		if (!e->busy && e->waiters == NULL) {
			*pp = e->next;
			sp->n--;
			spaces_entry_free(e);
			return;
		}
	}
}

static struct spaces_wait *spaces_wait_on(struct spaces *sp, const char *dir,
					  spaces_cb cb, void *arg, bool kept);

static void spaces_checked_cb(void *arg, const char *dir,
			      struct trust_space *ts)
{
	struct space_entry *e = arg;
	e->checking = false;
	bool same = !e->changed;
	e->changed = false;
	if (same) {
		log_info("space %s: %s written, content unchanged: nothing to "
			 "do",
			 dir, SESSION_SPACE_CONFIG);
		return;
	}
	log_info("space %s: %s changed; its sessions take it", dir,
		 SESSION_SPACE_CONFIG);
	e->sp->on_change(e->sp->change_arg, dir, ts);
}

/* Reads e's space again; the sessions hear of it only when it changed. */
static void spaces_check(struct space_entry *e)
{
	if (e->checking)
		return;
	e->checking = true;
	spaces_wait_on(e->sp, e->dir, spaces_checked_cb, e, false);
}

static void spaces_file_cb(void *arg, const char *path, unsigned events,
			   uint64_t span_ms)
{
	struct space_entry *e = arg;
	log_info("%s: %u change event(s) in %llu ms: reading it again", path,
		 events, (unsigned long long)span_ms);
	spaces_check(e);
}

static void spaces_watch_entry(struct spaces *sp, struct space_entry *e)
{
	if (sp->on_change && e->watch == NULL)
		e->watch = filewatch_new(sp->loop, e->file, spaces_file_cb, e);
}

void spaces_watch(struct spaces *sp, spaces_cb on_change, void *arg)
{
	sp->on_change = on_change;
	sp->change_arg = arg;
	for (struct space_entry *e = sp->entries; e; e = e->next)
		spaces_watch_entry(sp, e);
}

void spaces_recheck(struct spaces *sp)
{
	if (sp->on_change == NULL)
		return;
	for (struct space_entry *e = sp->entries; e; e = e->next)
		spaces_check(e);
}

static struct spaces_wait *spaces_wait_on(struct spaces *sp, const char *dir,
					  spaces_cb cb, void *arg, bool kept)
{
	struct space_entry *e = spaces_find(sp, dir);
	if (e == NULL) {
		spaces_trim(sp);
		e = xcalloc(1, sizeof *e);
		e->sp = sp;
		e->dir = xstrdup(dir);
		e->file = xasprintf("%s/%s", strcmp(dir, "/") ? dir : "",
				    SESSION_SPACE_CONFIG);
		e->work.data = e;
		e->next = sp->entries;
		sp->entries = e;
		sp->n++;
		spaces_watch_entry(sp, e);
	}
	/* The same waiter twice (a reload asks once per session) is one. */
	for (struct spaces_wait *o = e->waiters; o; o = o->next)
		if (o->cb == cb && o->arg == arg)
			return o;
	struct spaces_wait *w = xcalloc(1, sizeof *w);
	w->e = e;
	w->cb = cb;
	w->arg = arg;
	w->kept = kept;
	struct spaces_wait **pp = &e->waiters;
	while (*pp)
		pp = &(*pp)->next;
	*pp = w;
	/* A work item under way serves this waiter too: it began after the
	 * waiter asked at the earliest when it was queued with it, and at
	 * worst shortly before, which an initialize cannot tell apart. */
	if (!e->busy) {
		e->busy = true;
		int rc = uv_queue_work(sp->loop, &e->work, spaces_work_cb,
				       spaces_after_cb);
		if (rc < 0) {
			/* Only a bad argument fails: read here rather than
			 * never answer. */
			spaces_work_cb(&e->work);
			spaces_after_cb(&e->work, rc);
			return NULL;
		}
	}
	return w;
}

struct spaces_wait *spaces_get(struct spaces *sp, const char *dir, spaces_cb cb,
			       void *arg)
{
	return spaces_wait_on(sp, dir, cb, arg, true);
}

void spaces_refresh(struct spaces *sp, const char *dir, spaces_cb cb, void *arg)
{
	spaces_wait_on(sp, dir, cb, arg, false);
}

void spaces_cancel(struct spaces_wait *w)
{
	if (w == NULL)
		return;
	if (w->e == NULL) {
		free(w);
		return;
	}
	for (struct spaces_wait **pp = &w->e->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	free(w);
}

struct trust_space *spaces_cached(struct spaces *sp, const char *dir)
{
	struct space_entry *e = spaces_find(sp, dir);
	return e ? e->cur : NULL;
}

/* ---- initialize with a space, for the hub ---- */

json_t *hub_initialize(struct hub *hub, json_t *params, const char *space,
		       struct session **out)
{
	return hub_initialize_read(
		hub, params, space,
		space ? spaces_cached(hub_spaces(hub), space) : NULL, out);
}

struct hub_init {
	struct hub *hub;
	json_t *params;
	hub_init_cb cb;
	void *arg;
	struct spaces_wait *wait;
};

static void hub_init_loaded(void *arg, const char *dir, struct trust_space *ts)
{
	struct hub_init *hi = arg;
	struct session *s;
	json_t *result = hub_initialize_read(hi->hub, hi->params, dir, ts, &s);
	hi->cb(hi->arg, result, s);
	json_decref(hi->params);
	free(hi);
}

struct hub_init *hub_initialize_async(struct hub *hub, json_t *params,
				      const char *space, hub_init_cb cb,
				      void *arg)
{
	if (space == NULL) {
		struct session *s;
		json_t *result =
			hub_initialize_read(hub, params, NULL, NULL, &s);
		cb(arg, result, s);
		return NULL;
	}
	struct hub_init *hi = xcalloc(1, sizeof *hi);
	*hi = (struct hub_init){hub, json_incref(params), cb, arg, NULL};
	struct spaces_wait *w =
		spaces_get(hub_spaces(hub), space, hub_init_loaded, hi);
	if (w == NULL)
		return NULL; /* answered already, hi is gone */
	hi->wait = w;
	return hi;
}

void hub_initialize_cancel(struct hub_init *hi)
{
	if (hi == NULL)
		return;
	spaces_cancel(hi->wait);
	json_decref(hi->params);
	free(hi);
}
