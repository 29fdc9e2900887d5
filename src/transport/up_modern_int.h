/*
 * Inside the 2026-07-28 side of an upstream: its state, shared by
 * up_modern.c (the era, the envelope, listening) and up_mrtr.c (the
 * input_required rounds mcpvisor answers for a 2025 client).
 */
#ifndef MCPV_TRANSPORT_UP_MODERN_INT_H
#define MCPV_TRANSPORT_UP_MODERN_INT_H

#include <jansson.h>

#include "jsonrpc/msgq.h"
#include "transport/up_modern.h"

/* The ids of our own requests upstream (the listen stream's, a round's
 * retries): far above any the instance gives (it counts from 1), and
 * below 2^53, so a server in JavaScript reads them exactly. */
#define UPM_LISTEN_BASE ((int64_t)1 << 52)
#define UPM_RETRY_BASE (((int64_t)1 << 52) + ((int64_t)1 << 51))

enum upm_era {
	UPM_LEGACY,	  /* 2025: everything as it comes */
	UPM_UNKNOWN,	  /* the initialize will probe */
	UPM_INITIALIZING, /* the initialize sent first (UPM_PROBE_AFTER_INIT):
			     its answer decides */
	UPM_PROBING,	  /* server/discover sent under the initialize's id */
	UPM_MODERN,	  /* 2026-07-28 */
};

struct upm_call; /* up_mrtr.c */

struct upm {
	const struct upm_wire *wire;
	void *wctx;
	enum upm_probe how;
	struct upm_out out;
	void *ctx;
	enum upm_era era;
	int64_t init_id;
	char *init_msg; /* the initialize, to send as it came if legacy */
	size_t init_len;
	char *init_err;	      /* UPM_PROBE_AFTER_INIT: the initialize's error
				 answer, the instance's if the server is legacy */
	struct msgq held;     /* what the instance sent during the probe */
	struct msgq later;    /* for the instance, made inside upm_send */
	unsigned in_send;     /* upm_send is running (nested: flushes) */
	json_t *caps;	      /* the instance's clientCapabilities */
	json_t *client_info;  /* the instance's clientInfo */
	json_t *listen_kinds; /* {"toolsListChanged":true,...}; NULL: none */
	bool listening;	      /* notifications/initialized came: listen */
	int64_t listen_id;    /* the listen stream's request, 0: none */
	/* The stream the last one replaced (its filter was older), let go of
	 * once the new one is acknowledged; 0: none. */
	int64_t listen_old;
	/* What 2025 clients subscribed to: uri -> how many subscribe
	 * requests (less unsubscribes) the instance sent; followed through
	 * the listen stream's resourceSubscriptions when the server can. */
	json_t *subs;
	bool can_subscribe; /* discover said resources.subscribe */
	unsigned listen_seq;
	unsigned relistens; /* opened again in a row, each short-lived */
	uint64_t listen_ms; /* when the listen stream was asked for */
	/* Calls of 2025 clients that may answer input_required (up_mrtr.c),
	 * and the ids of their retries. */
	struct upm_call *calls;
	unsigned retry_seq;
	bool probe_again; /* the probe met -32022 naming our version once */
	/* tools/list requests in flight (id -> whether a first page), and
	 * the inputSchema of each listed tool with x-mcp-header
	 * annotations (name -> schema): the Mcp-Param-* headers of its
	 * calls. */
	json_t *lists;
	json_t *schemas;
};

/* Gives the instance msg: at once, or after upm_send returns. */
void upm_out_message(struct upm *p, const char *msg, size_t len,
		     int64_t related);
/* Sends msg (with its _meta) as a message of the revision under id; a
 * tools/call with the Mcp-Param-* headers its tool's schema asks for. */
int upm_post(struct upm *p, json_t *msg, int64_t id);
/* Request id's answer has come: its stream is let go of (nothing is said
 * to the server). */
void upm_done(struct upm *p, int64_t id);
/* Request id, maybe still running upstream, is given up on: its stream
 * goes (HTTP), or notifications/cancelled names it (a channel). */
void upm_cancel(struct upm *p, int64_t id);

/* up_mrtr.c */
/* Whether method may answer input_required (tools/call, prompts/get,
 * resources/read). */
bool upm_mrtr_method(const char *method);
/* Keeps call id (its params, as they go upstream) for its rounds. */
void upm_mrtr_track(struct upm *p, int64_t id, const char *method,
		    json_t *params);
/* A message on a tracked call's stream: true when dealt with here. */
bool upm_mrtr_message(struct upm *p, const char *msg, size_t len,
		      int64_t related);
/* The instance's answer to a request a round asked of its client: true
 * when it was one. */
bool upm_mrtr_answer(struct upm *p, json_t *msg);
/* A tracked call's answer is lost, or the call cancelled: true when it
 * was a retry's (dealt with here). */
bool upm_mrtr_lost(struct upm *p, int64_t id, enum outbox_fact f);
bool upm_mrtr_forget(struct upm *p, int64_t id);
/* The request now upstream for the instance's call id: a retry's id, 0
 * while a round waits for the client, id itself when untracked. */
int64_t upm_mrtr_wire(struct upm *p, int64_t id);
void upm_mrtr_free(struct upm *p);

/* up_modern.c: gives the instance msg (an object), related to request
 * related; answers the instance's request id with result (taken); sends
 * a request of ours (params taken, with the revision's _meta). */
void upm_give(struct upm *p, json_t *msg, int64_t related);
void upm_answer(struct upm *p, int64_t id, json_t *result);
int upm_request(struct upm *p, const char *method, json_t *params, int64_t id);

/* up_listen.c: the listen stream and what the revision removed. */
void upm_listen(struct upm *p);
/* The listen stream ended: asked for again, within the limits. */
void upm_relisten(struct upm *p);
/* A message on listen stream sid. */
void upm_listen_message(struct upm *p, const char *msg, size_t len,
			int64_t sid);
/* resources/subscribe (on) or unsubscribe of a 2025 client, request id. */
void upm_subscribe(struct upm *p, int64_t id, json_t *params, bool on);
/* logging/setLevel of a 2025 client, request id: answered, and kept
 * nowhere (the instance is shared; the level is each session's, in its
 * requests' _meta). */
void upm_set_level(struct upm *p, int64_t id, json_t *params);

#endif
