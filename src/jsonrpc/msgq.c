/*
 * Held messages: a singly linked list with a tail pointer, one allocation
 * per message (its bytes inline), counts kept as it changes.
 */
#include "jsonrpc/msgq.h"

#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

void msgq_init(struct msgq *q)
{
	q->head = NULL;
	q->tail = &q->head;
	q->count = 0;
	q->bytes = 0;
}

static struct msgq_item *msgq_item_new(const char *msg, size_t len, int64_t id)
{
	struct msgq_item *it = xmalloc(sizeof *it + len);
	it->next = NULL;
	it->id = id;
	it->len = len;
	memcpy(it->msg, msg, len);
	return it;
}

void msgq_push_front(struct msgq *q, const char *msg, size_t len, int64_t id)
{
	msgq_unpop(q, msgq_item_new(msg, len, id));
}

void msgq_push(struct msgq *q, const char *msg, size_t len, int64_t id)
{
	struct msgq_item *it = msgq_item_new(msg, len, id);
	*q->tail = it;
	q->tail = &it->next;
	q->count++;
	q->bytes += len;
}

struct msgq_item *msgq_pop(struct msgq *q)
{
	struct msgq_item *it = q->head;
	if (it == NULL)
		return NULL;
	q->head = it->next;
	if (q->head == NULL)
		q->tail = &q->head;
	it->next = NULL;
	q->count--;
	q->bytes -= it->len;
	return it;
}

void msgq_unpop(struct msgq *q, struct msgq_item *it)
{
	it->next = q->head;
	q->head = it;
	if (it->next == NULL)
		q->tail = &it->next;
	q->count++;
	q->bytes += it->len;
}

size_t msgq_forget(struct msgq *q, int64_t id)
{
	size_t n = 0;
	for (struct msgq_item **pp = &q->head; *pp;) {
		struct msgq_item *it = *pp;
		if (it->id != id) {
			pp = &it->next;
			continue;
		}
		*pp = it->next;
		if (q->tail == &it->next)
			q->tail = pp;
		q->count--;
		q->bytes -= it->len;
		free(it);
		n++;
	}
	return n;
}

void msgq_clear(struct msgq *q)
{
	while (q->head) {
		struct msgq_item *it = q->head;
		q->head = it->next;
		free(it);
	}
	msgq_init(q);
}
