/*
 * Inside the hub: its state, shared by hub.c (sessions, routing, spaces
 * and reload) and hub_status.c (what status and describe show). Not for
 * use outside src/session/.
 */
#ifndef MCPV_HUB_INT_H
#define MCPV_HUB_INT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "instance/instance.h"
#include "session/hub.h"
#include "session/tokens.h"
#include "util/hmap.h"
#include "util/keymap.h"

/* Every session is on one list (for walks) and in the map by its id (for
 * the lookup each request makes). */
struct hub_entry {
	struct hub_entry *next, *prev;
	struct session *s;
};

struct hub {
	uv_loop_t *loop;
	struct config *cfg;
	struct pool *pool;
	char *app_dir;
	size_t page_size;
	struct hub_entry *sessions;
	size_t nsessions;
	struct keymap by_id; /* session id (its own string) -> hub_entry */
	size_t max_sessions;
	uint64_t session_timeout_ms;
	struct tokens tokens; /* progress tokens given to servers -> call */
	/* Server name -> its tool names too long for hosts, as last logged
	 * (hub_names.c); NULL until the first. */
	json_t *long_names;
	/* Every call in flight, by its address: a server message's cause
	 * (the instance request's arg) is looked up here before it is
	 * trusted to be a call, so an arg of anything else (a fan-out of
	 * the runtime's own) is never taken for one. */
	struct hmap calls;
	uv_timer_t sweep;
	void (*quiet_fn)(void *arg);
	void *quiet_arg;
	struct spaces *spaces;	  /* .mcp.json reads, off the loop */
	char *reload_error;	  /* why the config on disk is not running */
	uint64_t reload_error_at; /* epoch ms */
	struct metrics *metrics;  /* figures per server (metrics/) */
	/* /metrics reads of /proc under way (hub_metrics.c). */
	struct hub_metrics_req *metrics_reqs;
	/* Sign-ins through clients' URL-mode elicitation (signin.c). */
	struct signin_flow *signins;
	/* Over stdio a server's request names no call: the instances (by
	 * key; key and value owned, the same string) whose servers have
	 * asked a client in the middle of a call, and the calls waiting for
	 * their turn on one of them (calls.c), in order. */
	struct keymap askers;
	struct call *turns;
	/* Calls whose client answered their server's questions, waiting
	 * for that server's turn to go on (calls.c), first first. */
	struct call *resumes;
};

/* What the hub's instances report (the pool passes them on); shared for
 * the unit tests, which hand it messages with a cause. */
extern const struct instance_cbs hub_instance_cbs;

/* hub.c: whether inst's server asks its clients mid-call over a transport
 * that cannot say which call asked (stdio). */
bool hub_instance_asks(struct hub *hub, struct instance *inst);

/* signin.c: the flows under way end (hub_free, after the sessions). */
void hub_signins_free(struct hub *hub);

/* hub_names.c */
/* Adds to o, the status of sv: what its first instance with known lists
 * offers before filters ("offered", not in the public view) and its tool
 * names too long for hosts ("longToolNames", "longToolNamesAdvice"). */
void hub_status_names(struct hub *hub, const struct server_config *sv,
		      json_t *o, enum hub_status_detail detail);
/* inst's lists changed: logs its tool names too long for hosts, once for
 * each change of them. */
void hub_names_note(struct hub *hub, struct instance *inst);
/* The config changed (a prefix, a filter): notes every instance again. */
void hub_names_recheck(struct hub *hub);

#endif
