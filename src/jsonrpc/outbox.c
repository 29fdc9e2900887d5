/*
 * The outbox: requests in flight toward one server, found by id in O(1)
 * (a chained hash over sequential ids, so id & mask spreads them evenly)
 * and kept in creation order for "oldest first" decisions. Settling is
 * the only way out, so each request has exactly one outcome.
 */
#include "jsonrpc/outbox.h"

#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "util/xmalloc.h"

#define OUTBOX_MIN_BUCKETS 16
/* Short methods are kept inline so the hot path allocates no copy. */
#define OUTBOX_METHOD_INLINE 24

struct outbox_req {
	int64_t id;
	enum outbox_state state;
	uint64_t link;	    /* generation written on; 0 while queued */
	unsigned sends;	    /* times written, across connections */
	unsigned reached;   /* writes not proven unwritten or refused */
	bool internal;	    /* the owner's own */
	bool idempotent;    /* its method changes nothing */
	const char *method; /* method_buf or method_heap */
	json_t *params;	    /* kept for a re-send, or NULL */
	char *msg;	    /* the message as written, or NULL */
	json_t *hint;	    /* the owner's description, or NULL */
	size_t msg_len;
	uint64_t deadline_ms; /* 0: none */
	outbox_reply_cb cb;
	outbox_text_cb text_cb;
	void *arg;
	struct outbox_req *next, *prev; /* in order of creation */
	struct outbox_req *hnext;	/* id hash chain, or the spares */
	char *method_heap;
	char method_buf[OUTBOX_METHOD_INLINE];
};
/* Freed requests kept for reuse: a steady stream of calls allocates no
 * request after warm-up. */
#define OUTBOX_SPARE_MAX 64

struct outbox {
	struct outbox_req head; /* list head of the creation order */
	struct outbox_req **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
	size_t external;
	int64_t next_id;
	struct outbox_req *spare; /* through hnext */
	size_t nspare;
};

struct outbox *outbox_new(void)
{
	struct outbox *ob = xcalloc(1, sizeof *ob);
	ob->head.next = ob->head.prev = &ob->head;
	ob->nbuckets = OUTBOX_MIN_BUCKETS;
	ob->buckets = xcalloc(ob->nbuckets, sizeof *ob->buckets);
	ob->next_id = 1;
	return ob;
}

static void outbox_req_release(struct outbox_req *r)
{
	free(r->method_heap);
	r->method_heap = NULL;
	json_decref(r->params);
	r->params = NULL;
	free(r->msg);
	r->msg = NULL;
	json_decref(r->hint);
	r->hint = NULL;
}

void outbox_free(struct outbox *ob)
{
	if (ob == NULL)
		return;
	while (ob->head.next != &ob->head) {
		struct outbox_req *r = ob->head.next;
		r->prev->next = r->next;
		r->next->prev = r->prev;
		outbox_req_release(r);
		free(r);
	}
	while (ob->spare) {
		struct outbox_req *r = ob->spare;
		ob->spare = r->hnext;
		free(r);
	}
	free(ob->buckets);
	free(ob);
}

static size_t outbox_slot(const struct outbox *ob, int64_t id)
{
	return (size_t)((uint64_t)id & (ob->nbuckets - 1));
}

static void outbox_grow(struct outbox *ob)
{
	size_t n = ob->nbuckets * 2;
	struct outbox_req **b = xcalloc(n, sizeof *b);
	for (size_t i = 0; i < ob->nbuckets; i++) {
		struct outbox_req *r = ob->buckets[i];
		while (r) {
			struct outbox_req *next = r->hnext;
			size_t s = (size_t)((uint64_t)r->id & (n - 1));
			r->hnext = b[s];
			b[s] = r;
			r = next;
		}
	}
	free(ob->buckets);
	ob->buckets = b;
	ob->nbuckets = n;
}

struct outbox_req *outbox_add(struct outbox *ob, const char *method,
			      json_t *params, bool internal, outbox_reply_cb cb,
			      outbox_text_cb text_cb, void *arg)
{
	struct outbox_req *r = ob->spare;
	if (r) {
		ob->spare = r->hnext;
		ob->nspare--;
		memset(r, 0, sizeof *r);
	} else {
		r = xcalloc(1, sizeof *r);
	}
	r->id = ob->next_id++;
	r->state = OUTBOX_QUEUED;
	r->internal = internal;
	size_t mlen = strlen(method);
	if (mlen < sizeof r->method_buf) {
		memcpy(r->method_buf, method, mlen + 1);
		r->method = r->method_buf;
	} else {
		r->method_heap = xstrdup(method);
		r->method = r->method_heap;
	}
	r->idempotent = jr_method_is_idempotent(r->method);
	r->params = params;
	r->cb = cb;
	r->text_cb = text_cb;
	r->arg = arg;
	if (ob->count >= ob->nbuckets)
		outbox_grow(ob);
	size_t s = outbox_slot(ob, r->id);
	r->hnext = ob->buckets[s];
	ob->buckets[s] = r;
	r->prev = ob->head.prev;
	r->next = &ob->head;
	ob->head.prev->next = r;
	ob->head.prev = r;
	ob->count++;
	if (!internal)
		ob->external++;
	return r;
}

int64_t outbox_peek_id(const struct outbox *ob)
{
	return ob->next_id;
}

struct outbox_req *outbox_find(const struct outbox *ob, int64_t id)
{
	for (struct outbox_req *r = ob->buckets[outbox_slot(ob, id)]; r;
	     r = r->hnext)
		if (r->id == id)
			return r;
	return NULL;
}

bool outbox_may_write(const struct outbox_req *r)
{
	return r->state == OUTBOX_QUEUED && (r->idempotent || r->reached == 0);
}

void outbox_written(struct outbox *ob, struct outbox_req *r, uint64_t link)
{
	(void)ob;
	r->state = OUTBOX_WRITTEN;
	r->link = link;
	r->sends++;
	r->reached++;
}

/* ---- the resend rule ---- */

/* The error for a request that will not be written again: whether any
 * write of it may have reached the server (reached counts the one the
 * fact is about), and whether that can have changed anything. */
static enum outbox_verdict outbox_give_up(const struct outbox_req *r,
					  unsigned reached)
{
	return reached > 0 && !r->idempotent ? OUTBOX_FAIL_MAYBE
					     : OUTBOX_FAIL_UNRUN;
}

enum outbox_verdict outbox_rule(const struct outbox_req *r, enum outbox_fact f)
{
	bool written = r->state == OUTBOX_WRITTEN;
	/* The writes that may have reached the server once the fact is
	 * counted: an unwritten or refused write did not. */
	unsigned reached = r->reached;
	if (written && (f == OUTBOX_UNWRITTEN || f == OUTBOX_REFUSED) &&
	    reached > 0)
		reached--;
	/* The owner's own requests (a handshake, a list refresh, a probe)
	 * are never sent again by the rule: their callbacks decide. */
	bool can = !r->internal && outbox_req_kept(r);
	switch (f) {
	case OUTBOX_UNWRITTEN:
	case OUTBOX_REFUSED:
		/* It never ran there: again, a bounded number of times,
		 * unless an earlier write of a call may have reached. */
		if (can && r->sends < OUTBOX_MAX_ATTEMPTS &&
		    (r->idempotent || reached == 0))
			return OUTBOX_RESEND;
		return outbox_give_up(r, reached);
	case OUTBOX_CUT:
		if (!written)
			return outbox_give_up(r, reached);
		/* Something that changes nothing goes once more; a server
		 * that dies on it twice is likely killed by it. */
		if (can && r->idempotent && reached < 2)
			return OUTBOX_RESEND;
		return outbox_give_up(r, reached);
	case OUTBOX_ENDING:
		return outbox_give_up(r, reached);
	}
	return OUTBOX_FAIL_MAYBE;
}

enum outbox_verdict outbox_judge(struct outbox *ob, struct outbox_req *r,
				 enum outbox_fact f)
{
	enum outbox_verdict v = outbox_rule(r, f);
	if (r->state == OUTBOX_WRITTEN &&
	    (f == OUTBOX_UNWRITTEN || f == OUTBOX_REFUSED) && r->reached > 0)
		r->reached--;
	if (v == OUTBOX_RESEND)
		outbox_requeue(ob, r);
	return v;
}

void outbox_requeue(struct outbox *ob, struct outbox_req *r)
{
	(void)ob;
	r->state = OUTBOX_QUEUED;
	r->link = 0;
}

/* Takes r out of the table and the order; r itself stays valid. */
static void outbox_unlink(struct outbox *ob, struct outbox_req *r)
{
	struct outbox_req **pp = &ob->buckets[outbox_slot(ob, r->id)];
	while (*pp != r)
		pp = &(*pp)->hnext;
	*pp = r->hnext;
	r->prev->next = r->next;
	r->next->prev = r->prev;
	r->next = r->prev = NULL;
	ob->count--;
	if (!r->internal)
		ob->external--;
}

static void outbox_recycle(struct outbox *ob, struct outbox_req *r)
{
	outbox_req_release(r);
	if (ob->nspare >= OUTBOX_SPARE_MAX) {
		free(r);
		return;
	}
	r->hnext = ob->spare;
	ob->spare = r;
	ob->nspare++;
}

void outbox_settle(struct outbox *ob, struct outbox_req *r,
		   enum outbox_outcome how, json_t *response)
{
	outbox_unlink(ob, r);
	/* Out of the table before the callback: whatever the callback does
	 * (cancel, a new request, a stop) cannot reach r again. */
	if (how != OUTBOX_CANCELLED && r->cb)
		r->cb(r->arg, response, how != OUTBOX_LOST_UNSENT);
	outbox_recycle(ob, r);
}

void outbox_settle_text(struct outbox *ob, struct outbox_req *r,
			const char *msg, size_t off, size_t len)
{
	outbox_unlink(ob, r);
	r->text_cb(r->arg, msg, off, len);
	outbox_recycle(ob, r);
}

struct outbox_req *outbox_first(const struct outbox *ob)
{
	return ob->head.next == &ob->head ? NULL : ob->head.next;
}

struct outbox_req *outbox_next(const struct outbox *ob,
			       const struct outbox_req *r)
{
	return r->next == &ob->head ? NULL : r->next;
}

void outbox_each(struct outbox *ob, bool (*fn)(void *arg, struct outbox_req *r),
		 void *arg)
{
	size_t n = ob->count;
	if (n == 0)
		return;
	int64_t *ids = xcalloc(n, sizeof *ids);
	size_t k = 0;
	for (const struct outbox_req *r = ob->head.next; r != &ob->head;
	     r = r->next)
		ids[k++] = r->id;
	for (size_t i = 0; i < n; i++) {
		struct outbox_req *r = outbox_find(ob, ids[i]);
		if (r != NULL && !fn(arg, r))
			break;
	}
	free(ids);
}

size_t outbox_count(const struct outbox *ob)
{
	return ob->count;
}

size_t outbox_count_external(const struct outbox *ob)
{
	return ob->external;
}

size_t outbox_count_written(const struct outbox *ob, uint64_t link)
{
	size_t n = 0;
	for (const struct outbox_req *r = ob->head.next; r != &ob->head;
	     r = r->next)
		if (r->state == OUTBOX_WRITTEN && r->link == link)
			n++;
	return n;
}

int64_t outbox_req_id(const struct outbox_req *r)
{
	return r->id;
}

enum outbox_state outbox_req_state(const struct outbox_req *r)
{
	return r->state;
}

bool outbox_req_on(const struct outbox_req *r, uint64_t link)
{
	return r->state == OUTBOX_WRITTEN && r->link == link;
}

unsigned outbox_req_sends(const struct outbox_req *r)
{
	return r->sends;
}

unsigned outbox_req_reached(const struct outbox_req *r)
{
	return r->reached;
}

bool outbox_req_idempotent(const struct outbox_req *r)
{
	return r->idempotent;
}

bool outbox_req_internal(const struct outbox_req *r)
{
	return r->internal;
}

void *outbox_req_arg(const struct outbox_req *r)
{
	return r->arg;
}

const char *outbox_req_method(const struct outbox_req *r)
{
	return r->method;
}

json_t *outbox_req_params(const struct outbox_req *r)
{
	return r->params;
}

void outbox_req_set_params(struct outbox_req *r, json_t *params)
{
	json_decref(r->params);
	r->params = params;
}

const char *outbox_req_msg(const struct outbox_req *r, size_t *len)
{
	if (len)
		*len = r->msg_len;
	return r->msg;
}

void outbox_req_set_msg(struct outbox_req *r, const char *msg, size_t len)
{
	free(r->msg);
	r->msg = NULL;
	r->msg_len = 0;
	if (msg == NULL)
		return;
	r->msg = xmalloc(len + 1);
	memcpy(r->msg, msg, len);
	r->msg[len] = '\0';
	r->msg_len = len;
}

json_t *outbox_req_hint(const struct outbox_req *r)
{
	return r->hint;
}

void outbox_req_set_hint(struct outbox_req *r, json_t *hint)
{
	json_decref(r->hint);
	r->hint = hint;
}

bool outbox_req_kept(const struct outbox_req *r)
{
	return r->params != NULL || r->msg != NULL;
}

uint64_t outbox_req_deadline(const struct outbox_req *r)
{
	return r->deadline_ms;
}

void outbox_req_set_deadline(struct outbox_req *r, uint64_t ms)
{
	r->deadline_ms = ms;
}

void outbox_req_set_text_cb(struct outbox_req *r, outbox_text_cb text_cb)
{
	r->text_cb = text_cb;
}

bool outbox_req_has_text(const struct outbox_req *r)
{
	return r->text_cb != NULL;
}
