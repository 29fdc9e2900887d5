/*
 * The conformance fixture's insides, shared by its two files:
 * conformance-server.c (transport, dispatch, lists and the tools that answer
 * by themselves) and conformance-asks.c (the fixture's requests to its
 * client in the middle of a call). Not an API for anything else.
 */
#ifndef CONFORMANCE_H
#define CONFORMANCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fxh_session;

#define CONF_ERR_PARSE -32700
#define CONF_ERR_REQUEST -32600
#define CONF_ERR_METHOD -32601
#define CONF_ERR_PARAMS -32602
#define CONF_ERR_INTERNAL -32603
#define CONF_ERR_NO_RESOURCE -32002

/* How long a request to the client (sampling, elicitation, roots) may go
 * unanswered before the call gives up and cancels it. */
#define CONF_ASK_TIMEOUT_MS 60000

enum conf_phase {
	CONF_PHASE_NEW,		 /* no initialize yet */
	CONF_PHASE_INITIALIZING, /* answered initialize, awaiting initialized */
	CONF_PHASE_READY,
};

enum conf_job_kind {
	CONF_JOB_LOGGING,  /* three log messages ~50 ms apart */
	CONF_JOB_PROGRESS, /* progress 0, 50, 100 of 100 ~50 ms apart */
	CONF_JOB_DELAY,	   /* answers after total_ms, progress meanwhile */
	CONF_JOB_ASK,	   /* asks the client, answers from that (asks.c) */
};

struct conf_asks;

struct conf_job {
	struct conf_job *next;
	enum conf_job_kind kind;
	json_t *id;    /* the client's request id */
	json_t *token; /* progress token, or NULL */
	int step;
	int64_t wake_ms; /* -1: waits for a message, not for time */
	int64_t start_ms;
	int64_t total_ms;
	char *text;		/* what a delay job answers */
	struct conf_asks *asks; /* CONF_JOB_ASK: its requests to the client */
};

struct conf_server {
	enum conf_phase phase;
	char version[16];
	json_t *client_caps;
	/* params._meta of the request being handled (borrowed), NULL
	 * outside one: a gateway forwards a 2026-07-28 client's
	 * per-request capabilities there. */
	json_t *request_meta;
	size_t log_level;
	bool dynamic_on;
	bool triggered_tool;   /* test_trigger_tool_change's item */
	bool triggered_prompt; /* test_trigger_prompt_change's item */
	unsigned watched_rev;
	json_t *subs; /* URIs the client subscribed to */
	struct conf_job *jobs;
	size_t njobs;
	json_int_t next_out_id;
	size_t page_size;
	bool verbose;

	/* Over HTTP (NULL over stdio): the session, the client request that
	 * what is sent now belongs to, and the next session's state. */
	struct fxh_session *hs;
	json_t *cause;
	struct conf_server *http_next;

	char *in;
	size_t in_len;
	size_t in_cap;
	bool in_skipping;
	bool in_eof;

	char *out;
	size_t out_off;
	size_t out_len;
	size_t out_cap;
	bool out_nonblock;
	bool out_dead;
};

/* ---- conformance-server.c: helpers ---------------------------------- */

void conf_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Allocation failure aborts. */
void *conf_xcalloc(size_t n, size_t size);
char *conf_xstrdup(const char *str);
char *conf_xasprintf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* json_pack that cannot fail: a NULL there is a bug in the fixture. */
json_t *conf_pack(const char *fmt, ...);
/* Parses one of the fixture's constant JSON texts. */
json_t *conf_parse_const(const char *text);
char *conf_dump(json_t *v);
int64_t conf_now_ms(void);
bool conf_version_at_least(const struct conf_server *s, const char *version);
/* Whether caps (a client's capabilities object) has cap. */
bool conf_caps_has(json_t *caps, const char *cap);
/* Form-mode elicitation: an empty elicitation capability means form. */
bool conf_caps_has_form(json_t *caps);
const char *conf_str(json_t *obj, const char *key);

/* Sending: each takes ownership of what it sends. Over HTTP what is sent
 * goes on the stream of s->cause. */
void conf_send(struct conf_server *s, json_t *msg);
void conf_send_result(struct conf_server *s, json_t *id, json_t *result);
void conf_send_error(struct conf_server *s, json_t *id, int code,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void conf_notify(struct conf_server *s, const char *method, json_t *params);

json_t *conf_text_block(const char *text);
json_t *conf_text_result(const char *text);
/* A CallToolResult with isError. */
json_t *conf_error_result(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

struct conf_job *conf_job_new(struct conf_server *s, enum conf_job_kind kind,
			      json_t *id, json_t *token);
void conf_job_unlink(struct conf_server *s, struct conf_job *j);
void conf_job_free(struct conf_job *j);

/* ---- conformance-asks.c --------------------------------------------- */

/* A tool: answers id now (conf_send_result) or starts a job that will. */
typedef void conf_tool_fn(struct conf_server *s, json_t *id, json_t *args,
			  json_t *token);

/* The tools that ask the client: the 0.1.16 suite's sampling, elicitation
 * and roots, and those the 2026-07-28 suite calls by name. */
conf_tool_fn conf_tool_sampling, conf_tool_elicitation,
	conf_tool_elicit_defaults, conf_tool_elicit_enums, conf_tool_roots,
	conf_tool_ir_elicitation, conf_tool_ir_sampling, conf_tool_ir_roots,
	conf_tool_ir_request_state, conf_tool_ir_multiple,
	conf_tool_ir_multi_round, conf_tool_ir_tampered,
	conf_tool_ir_capabilities, conf_tool_missing_capability,
	conf_tool_streaming_elicitation;

/* prompts/get of test_input_required_result_prompt: elicits a context,
 * then answers the GetPromptResult (or a JSON-RPC error). */
void conf_prompt_ir(struct conf_server *s, json_t *id, const char *description);

/* A CONF_JOB_ASK job's timer: sends its round once the client is
 * initialized, or gives up when the round timed out. True when the job has
 * answered and is to be freed. */
bool conf_asks_step(struct conf_server *s, struct conf_job *j, int64_t now);
/* A response from the client to one of our requests. */
void conf_asks_answer(struct conf_server *s, json_t *msg);
/* The call j serves was cancelled: cancels its unanswered requests. */
void conf_asks_cancel(struct conf_server *s, struct conf_job *j,
		      const char *reason);
void conf_asks_free(struct conf_asks *a);
/* Parses the built-in schemas once, so a typo shows at start. */
void conf_asks_check_constants(void);

#endif
