/*
 * The resources a session follows: each resources/subscribe its server
 * answered, less each unsubscribe, by instance and uri. An instance counts
 * the subscriptions of all its clients (instance/subs.c) and keeps them
 * across its server's restarts; a session that ends without unsubscribing
 * gives its own back here, so that its server is neither left sending
 * updates of a resource nobody follows nor asked for them again at its
 * next start.
 */
#include <stdlib.h>
#include <string.h>

#include "instance/instance.h"
#include "pool/pool.h"
#include "session/hub.h"
#include "session/session_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* What one session may have counted: a client that subscribes to more,
 * or to longer uris, has the rest counted by the instance alone (and
 * left there when it ends), as past INSTANCE_MAX_SUBS. */
#define SESSION_MAX_SUBS 1024
#define SESSION_MAX_SUB_URI 4096

struct session_sub {
	struct session_sub *next;
	char *key;	 /* its instance's key */
	uint64_t serial; /* and which instance of that key */
	unsigned n;	 /* subscribes less unsubscribes answered */
	char uri[];
};

bool session_subs_method(const char *method)
{
	return strcmp(method, "resources/subscribe") == 0 ||
	       strcmp(method, "resources/unsubscribe") == 0;
}

void session_subs_note(struct session *s, struct instance *inst,
		       const char *method, const char *uri)
{
	bool on = strcmp(method, "resources/subscribe") == 0;
	const char *key = instance_key(inst);
	uint64_t serial = instance_serial(inst);
	struct session_sub **pp = &s->subs;
	for (; *pp; pp = &(*pp)->next) {
		struct session_sub *sub = *pp;
		if (sub->serial == serial && strcmp(sub->uri, uri) == 0)
			break;
	}
	struct session_sub *sub = *pp;
	if (!on) {
		if (sub && --sub->n == 0) {
			*pp = sub->next;
			free(sub->key);
			free(sub);
			s->nsubs--;
		}
		return;
	}
	if (sub) {
		sub->n++;
		return;
	}
	size_t len = strlen(uri);
	if (s->nsubs >= SESSION_MAX_SUBS || len > SESSION_MAX_SUB_URI) {
		log_debug("session %.8s: a subscription past what a session "
			  "counts; its instance keeps it after the session",
			  s->id);
		return;
	}
	sub = xmalloc(sizeof *sub + len + 1);
	sub->key = xstrdup(key);
	sub->serial = serial;
	sub->n = 1;
	memcpy(sub->uri, uri, len + 1);
	sub->next = s->subs;
	s->subs = sub;
	s->nsubs++;
}

void session_subs_leave(struct session *s)
{
	struct pool *pool = hub_pool(s->hub);
	for (struct session_sub *sub = s->subs; sub; sub = sub->next) {
		/* The instance it was counted by, if it is still there: one
		 * a reload closed took the count with it. */
		struct instance *inst = pool_instance_find(pool, sub->key);
		if (inst && instance_serial(inst) == sub->serial)
			instance_subs_leave(inst, sub->uri, sub->n);
	}
	session_subs_free(s);
}

void session_subs_free(struct session *s)
{
	while (s->subs) {
		struct session_sub *sub = s->subs;
		s->subs = sub->next;
		free(sub->key);
		free(sub);
	}
	s->nsubs = 0;
}
