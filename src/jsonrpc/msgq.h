/*
 * A queue of whole JSON-RPC messages held until where they go can take
 * them (a session whose transport is not known yet, a server not yet
 * listening, a container whose id is not known yet), each with the id it
 * relates to, in order, with a count of its bytes. The one queue the
 * HTTP session, the local HTTP upstream and the container upstream hold
 * messages in.
 */
#ifndef MCPV_JSONRPC_MSGQ_H
#define MCPV_JSONRPC_MSGQ_H

#include <stddef.h>
#include <stdint.h>

struct msgq_item {
	struct msgq_item *next;
	int64_t id; /* the request it is or answers; 0: none */
	size_t len;
	char msg[]; /* not NUL-terminated */
};

/* Embedded in its owner; zeroed by msgq_init. */
struct msgq {
	struct msgq_item *head;
	struct msgq_item **tail;
	size_t count;
	size_t bytes;
};

void msgq_init(struct msgq *q);
/* Copies len bytes of msg to the end (or, _front, to the front). */
void msgq_push(struct msgq *q, const char *msg, size_t len, int64_t id);
void msgq_push_front(struct msgq *q, const char *msg, size_t len, int64_t id);
/* The oldest, taken out (the caller frees it with free()); NULL when
 * empty. */
struct msgq_item *msgq_pop(struct msgq *q);
/* Puts an item taken with msgq_pop back at the front. */
void msgq_unpop(struct msgq *q, struct msgq_item *it);
/* Drops every message with id; how many there were. */
size_t msgq_forget(struct msgq *q, int64_t id);
/* Drops everything. */
void msgq_clear(struct msgq *q);

#endif
