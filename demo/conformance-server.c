/*
 * Conformance fixture server: a stdio MCP server (newline-delimited JSON-RPC)
 * offering every tool, prompt, resource and template that the server
 * scenarios of @modelcontextprotocol/conformance expect (0.1.16, and
 * 0.2.0-alpha.12's 2025-11-25 and 2026-07-28 sets through a gateway), plus a
 * few extras for end-to-end tests. It owns one poll() loop with timers so
 * slow calls and its own requests to the client never block other requests;
 * those requests are conformance-asks.c's. It stays a 2025-era server: what
 * a 2026-07-28 client gets as input_required is a gateway's doing.
 */

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"
#include "fixture-http.h"

/* An input line longer than this is skipped whole. */
#define CONF_MAX_LINE (4u << 20)
#define CONF_READ_CHUNK 65536u
/* While this much output is queued the client is not reading: stop reading
 * its input too, so memory stays bounded. */
#define CONF_MAX_OUTQ (16u << 20)
#define CONF_MAX_JOBS 256
#define CONF_MAX_SUBS 64
#define CONF_MAX_URI 2048
#define CONF_MAX_TEMPLATE_ID 256
#define CONF_MAX_PAGE_SIZE 1000
#define CONF_MAX_SLOW_MS 60000
#define CONF_MAX_COMPLETIONS 100
#define CONF_STEP_MS 50
#define CONF_SLOW_PROGRESS_MS 100
#define CONF_RECONNECT_MS 100

#define CONF_LATEST "2025-11-25"
#define CONF_LOGGER "conformance-server"

/* A 1x1 red PNG and eight samples of 8 kHz 8-bit silence, both made for
 * this file. */
static const char conf_png[] =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAA"
	"DElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";
static const char conf_wav[] = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAAB"
			       "AAgAZGF0YQgAAACAgICAgICAgA==";

static const char *const conf_versions[] = {
	"2025-11-25",
	"2025-06-18",
	"2025-03-26",
	"2024-11-05",
};

/* RFC 5424 severities, least severe first, as MCP orders them. */
static const char *const conf_levels[] = {
	"debug", "info",     "notice", "warning",
	"error", "critical", "alert",  "emergency",
};
#define CONF_LEVEL_INFO 1
#define CONF_NLEVELS (sizeof(conf_levels) / sizeof(conf_levels[0]))

/* ---- small helpers ---------------------------------------------------- */

void conf_log(const char *fmt, ...)
{
	va_list ap;

	fputs("conformance-server: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *conf_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL) {
		conf_log("out of memory (%zu bytes)", n);
		abort();
	}
	return q;
}

void *conf_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL) {
		conf_log("out of memory");
		abort();
	}
	return p;
}

char *conf_xstrdup(const char *str)
{
	char *p = strdup(str);

	if (p == NULL) {
		conf_log("out of memory");
		abort();
	}
	return p;
}

char *conf_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0) {
		conf_log("out of memory");
		abort();
	}
	return p;
}

json_t *conf_pack(const char *fmt, ...)
{
	json_error_t err;
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = json_vpack_ex(&err, 0, fmt, ap);
	va_end(ap);
	if (v == NULL) {
		conf_log("json_pack(%s): %s", fmt, err.text);
		abort();
	}
	return v;
}

json_t *conf_parse_const(const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, 0, &err);

	if (v == NULL) {
		conf_log("bad built-in JSON (%s): %s", err.text, text);
		abort();
	}
	return v;
}

char *conf_dump(json_t *v)
{
	char *p = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (p == NULL) {
		conf_log("out of memory");
		abort();
	}
	return p;
}

int64_t conf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Protocol revisions are dates, so string order is time order. */
bool conf_version_at_least(const struct conf_server *s, const char *version)
{
	return strcmp(s->version, version) >= 0;
}

bool conf_caps_has(json_t *caps, const char *cap)
{
	return json_is_object(json_object_get(caps, cap));
}

bool conf_caps_has_form(json_t *caps)
{
	json_t *el = json_object_get(caps, "elicitation");

	if (!json_is_object(el))
		return false;
	if (json_object_size(el) == 0)
		return true;
	return json_object_get(el, "form") != NULL;
}

const char *conf_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* ---- output ----------------------------------------------------------- */

static void conf_flush(struct conf_server *s)
{
	while (s->out_off < s->out_len && !s->out_dead) {
		ssize_t n = write(STDOUT_FILENO, s->out + s->out_off,
				  s->out_len - s->out_off);

		if (n > 0) {
			s->out_off += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			break;
		} else {
			if (errno != EPIPE)
				conf_log("stdout: %s", strerror(errno));
			s->out_dead = true;
		}
	}
	if (s->out_off == s->out_len) {
		s->out_off = 0;
		s->out_len = 0;
	}
}

/* Queues one message and tries to write it at once. */
void conf_send(struct conf_server *s, json_t *msg)
{
	char *text = conf_dump(msg);
	size_t n = strlen(text);

	if (s->verbose)
		conf_log("-> %.300s", text);
	if (s->hs) {
		free(text);
		fxh_send(s->hs, s->cause, msg);
		return;
	}
	if (s->out_off > 0 && s->out_off == s->out_len)
		s->out_off = s->out_len = 0;
	if (s->out_cap - s->out_len < n + 1) {
		if (s->out_off > 0) {
			memmove(s->out, s->out + s->out_off,
				s->out_len - s->out_off);
			s->out_len -= s->out_off;
			s->out_off = 0;
		}
		if (s->out_cap - s->out_len < n + 1) {
			s->out_cap = s->out_len + n + 1 + CONF_READ_CHUNK;
			s->out = conf_xrealloc(s->out, s->out_cap);
		}
	}
	memcpy(s->out + s->out_len, text, n);
	s->out[s->out_len + n] = '\n';
	s->out_len += n + 1;
	free(text);
	json_decref(msg);
	conf_flush(s);
}

void conf_send_result(struct conf_server *s, json_t *id, json_t *result)
{
	conf_send(s, conf_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id,
			       "result", result));
}

/* id may be NULL for errors that cannot be tied to a request. */
static void conf_send_error_data(struct conf_server *s, json_t *id, int code,
				 const char *message, json_t *data)
{
	json_t *err = conf_pack("{s:i,s:s}", "code", code, "message", message);

	if (data != NULL)
		json_object_set_new(err, "data", data);
	conf_send(s, conf_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id",
			       id ? id : json_null(), "error", err));
}

void conf_send_error(struct conf_server *s, json_t *id, int code,
		     const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	conf_send_error_data(s, id, code, msg, NULL);
	free(msg);
}

/* params may be NULL. */
void conf_notify(struct conf_server *s, const char *method, json_t *params)
{
	json_t *msg =
		conf_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);

	if (params != NULL)
		json_object_set_new(msg, "params", params);
	conf_send(s, msg);
}

static void conf_notify_log(struct conf_server *s, size_t level,
			    const char *text)
{
	if (s->phase == CONF_PHASE_NEW || level < s->log_level)
		return;
	conf_notify(s, "notifications/message",
		    conf_pack("{s:s,s:s,s:s}", "level", conf_levels[level],
			      "logger", CONF_LOGGER, "data", text));
}

static void conf_notify_progress(struct conf_server *s, json_t *token,
				 json_int_t progress, json_int_t total,
				 const char *message)
{
	json_t *params;

	if (token == NULL)
		return;
	params = conf_pack("{s:O,s:I}", "progressToken", token, "progress",
			   progress);
	if (total > 0)
		json_object_set_new(params, "total", json_integer(total));
	if (message != NULL && conf_version_at_least(s, "2025-03-26"))
		json_object_set_new(params, "message", json_string(message));
	conf_notify(s, "notifications/progress", params);
}

/* ---- content builders --------------------------------------------------- */

json_t *conf_text_block(const char *text)
{
	return conf_pack("{s:s,s:s}", "type", "text", "text", text);
}

static json_t *conf_image_block(void)
{
	return conf_pack("{s:s,s:s,s:s}", "type", "image", "data", conf_png,
			 "mimeType", "image/png");
}

json_t *conf_text_result(const char *text)
{
	return conf_pack("{s:[o]}", "content", conf_text_block(text));
}

json_t *conf_error_result(const char *fmt, ...)
{
	va_list ap;
	char *msg;
	json_t *r;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	r = conf_pack("{s:[o],s:b}", "content", conf_text_block(msg), "isError",
		      1);
	free(msg);
	return r;
}

/* ---- jobs ------------------------------------------------------------- */

struct conf_job *conf_job_new(struct conf_server *s, enum conf_job_kind kind,
			      json_t *id, json_t *token)
{
	struct conf_job *j = conf_xcalloc(1, sizeof(*j));

	j->kind = kind;
	j->id = json_incref(id);
	j->token = token ? json_incref(token) : NULL;
	j->start_ms = conf_now_ms();
	j->wake_ms = j->start_ms;
	j->next = s->jobs;
	s->jobs = j;
	s->njobs++;
	return j;
}

void conf_job_free(struct conf_job *j)
{
	if (j == NULL)
		return;
	json_decref(j->id);
	json_decref(j->token);
	conf_asks_free(j->asks);
	free(j->text);
	free(j);
}

void conf_job_unlink(struct conf_server *s, struct conf_job *j)
{
	struct conf_job **pp;

	for (pp = &s->jobs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			s->njobs--;
			return;
		}
	}
}

/* Advances a job whose timer fired. Returns true when it has answered. */
static bool conf_job_step(struct conf_server *s, struct conf_job *j,
			  int64_t now)
{
	static const char *const log_lines[] = {
		"Tool execution started",
		"Tool processing data",
		"Tool execution completed",
	};

	switch (j->kind) {
	case CONF_JOB_LOGGING:
		conf_notify_log(s, CONF_LEVEL_INFO, log_lines[j->step]);
		if (++j->step < 3) {
			j->wake_ms = now + CONF_STEP_MS;
			return false;
		}
		conf_send_result(
			s, j->id,
			conf_text_result(
				"Tool with logging executed successfully"));
		return true;
	case CONF_JOB_PROGRESS: {
		char msg[64];

		snprintf(msg, sizeof(msg), "Completed step %d of 100",
			 j->step * 50);
		conf_notify_progress(s, j->token, j->step * 50, 100, msg);
		if (++j->step < 3) {
			j->wake_ms = now + CONF_STEP_MS;
			return false;
		}
		conf_send_result(
			s, j->id,
			conf_text_result(
				"Tool with progress executed successfully"));
		return true;
	}
	case CONF_JOB_DELAY: {
		int64_t elapsed = now - j->start_ms;

		if (elapsed < j->total_ms) {
			conf_notify_progress(s, j->token, elapsed, j->total_ms,
					     NULL);
			j->wake_ms = now + CONF_SLOW_PROGRESS_MS;
			if (j->wake_ms > j->start_ms + j->total_ms)
				j->wake_ms = j->start_ms + j->total_ms;
			return false;
		}
		conf_notify_progress(s, j->token, j->total_ms, j->total_ms,
				     NULL);
		conf_send_result(s, j->id, conf_text_result(j->text));
		return true;
	}
	case CONF_JOB_ASK:
		return conf_asks_step(s, j, now);
	}
	return true;
}

static void conf_jobs_run(struct conf_server *s, int64_t now)
{
	struct conf_job **pp = &s->jobs;

	while (*pp != NULL) {
		struct conf_job *j = *pp;

		bool answered;

		s->cause = j->id;
		answered = j->wake_ms >= 0 && j->wake_ms <= now &&
			   conf_job_step(s, j, now);
		s->cause = NULL;
		if (answered) {
			*pp = j->next;
			s->njobs--;
			conf_job_free(j);
			continue;
		}
		pp = &j->next;
	}
}

static int conf_jobs_timeout(const struct conf_server *s, int64_t now)
{
	int64_t next = -1;
	const struct conf_job *j;

	for (j = s->jobs; j != NULL; j = j->next) {
		if (j->wake_ms >= 0 && (next < 0 || j->wake_ms < next))
			next = j->wake_ms;
	}
	if (next < 0)
		return -1;
	if (next <= now)
		return 0;
	return next - now > 60000 ? 60000 : (int)(next - now);
}

/* notifications/cancelled: the client no longer wants the answer. */
static void conf_jobs_cancel(struct conf_server *s, json_t *request_id)
{
	struct conf_job *j;

	for (j = s->jobs; j != NULL; j = j->next) {
		if (json_equal(j->id, request_id))
			break;
	}
	if (j == NULL)
		return; /* finished already, or never ours: both are normal */
	s->cause = j->id;
	if (j->kind == CONF_JOB_ASK)
		conf_asks_cancel(s, j,
				 "the request that needed it was cancelled");
	s->cause = NULL;
	conf_job_unlink(s, j);
	conf_job_free(j);
}

static void conf_jobs_wake_waiting(struct conf_server *s)
{
	struct conf_job *j;
	int64_t now = conf_now_ms();

	for (j = s->jobs; j != NULL; j = j->next) {
		if (j->kind == CONF_JOB_ASK && j->wake_ms < 0)
			j->wake_ms = now;
	}
}

/* ---- tools ------------------------------------------------------------ */

/* When an item is listed (and found). */
enum conf_shown {
	CONF_SHOWN_ALWAYS,
	CONF_SHOWN_DYNAMIC,   /* while test_toggle_dynamic has it on */
	CONF_SHOWN_TRIGGERED, /* while test_trigger_*_change has it on */
};

static bool conf_shown(const struct conf_server *s, enum conf_shown shown,
		       bool prompt)
{
	switch (shown) {
	case CONF_SHOWN_ALWAYS:
		return true;
	case CONF_SHOWN_DYNAMIC:
		return s->dynamic_on;
	case CONF_SHOWN_TRIGGERED:
		return prompt ? s->triggered_prompt : s->triggered_tool;
	}
	return false;
}

struct conf_tool {
	const char *name;
	const char *title;
	const char *description;
	const char *schema; /* inputSchema, JSON text */
	const char *since;  /* oldest revision that has what it returns */
	enum conf_shown shown;
	conf_tool_fn *call;
};

#define CONF_NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static void conf_tool_simple_text(struct conf_server *s, json_t *id,
				  json_t *args, json_t *token)
{
	conf_send_result(
		s, id,
		conf_text_result(
			"This is a simple text response for testing."));
}

static void conf_tool_image(struct conf_server *s, json_t *id, json_t *args,
			    json_t *token)
{
	conf_send_result(s, id,
			 conf_pack("{s:[o]}", "content", conf_image_block()));
}

static void conf_tool_audio(struct conf_server *s, json_t *id, json_t *args,
			    json_t *token)
{
	conf_send_result(s, id,
			 conf_pack("{s:[{s:s,s:s,s:s}]}", "content", "type",
				   "audio", "data", conf_wav, "mimeType",
				   "audio/wav"));
}

static void conf_tool_embedded(struct conf_server *s, json_t *id, json_t *args,
			       json_t *token)
{
	conf_send_result(s, id,
			 conf_pack("{s:[{s:s,s:{s:s,s:s,s:s}}]}", "content",
				   "type", "resource", "resource", "uri",
				   "test://embedded-resource", "mimeType",
				   "text/plain", "text",
				   "This is an embedded resource content."));
}

static void conf_tool_mixed(struct conf_server *s, json_t *id, json_t *args,
			    json_t *token)
{
	conf_send_result(
		s, id,
		conf_pack("{s:[o,o,{s:s,s:{s:s,s:s,s:s}}]}", "content",
			  conf_text_block("Multiple content types test:"),
			  conf_image_block(), "type", "resource", "resource",
			  "uri", "test://mixed-content-resource", "mimeType",
			  "application/json", "text",
			  "{\"test\":\"data\",\"value\":123}"));
}

static void conf_tool_error(struct conf_server *s, json_t *id, json_t *args,
			    json_t *token)
{
	conf_send_result(s, id,
			 conf_error_result("This tool intentionally returns "
					   "an error for testing"));
}

static void conf_tool_resource_link(struct conf_server *s, json_t *id,
				    json_t *args, json_t *token)
{
	conf_send_result(
		s, id,
		conf_pack(
			"{s:[o,{s:s,s:s,s:s,s:s,s:s}]}", "content",
			conf_text_block("A link to the static text resource:"),
			"type", "resource_link", "uri", "test://static-text",
			"name", "static-text", "description",
			"A static text resource for testing", "mimeType",
			"text/plain"));
}

static void conf_tool_logging(struct conf_server *s, json_t *id, json_t *args,
			      json_t *token)
{
	conf_job_new(s, CONF_JOB_LOGGING, id, token);
}

static void conf_tool_progress(struct conf_server *s, json_t *id, json_t *args,
			       json_t *token)
{
	conf_job_new(s, CONF_JOB_PROGRESS, id, token);
}

static void conf_tool_reconnection(struct conf_server *s, json_t *id,
				   json_t *args, json_t *token)
{
	struct conf_job *j = conf_job_new(s, CONF_JOB_DELAY, id, token);

	j->total_ms = CONF_RECONNECT_MS;
	j->text = conf_xstrdup("Reconnection test completed successfully. If "
			       "you received this, the client properly "
			       "reconnected after stream closure.");
	/* Over HTTP the stream closes before the answer (SEP-1699
	 * polling): the client gets it by GET with Last-Event-ID. */
	if (s->hs)
		fxh_end_stream(s->hs, id);
}

static void conf_tool_slow(struct conf_server *s, json_t *id, json_t *args,
			   json_t *token)
{
	json_t *ms = json_object_get(args, "ms");
	json_int_t total = 1000;
	struct conf_job *j;

	if (ms != NULL) {
		if (!json_is_integer(ms) || json_integer_value(ms) < 0 ||
		    json_integer_value(ms) > CONF_MAX_SLOW_MS) {
			conf_send_result(s, id,
					 conf_error_result("ms must be an "
							   "integer from 0 "
							   "to %d",
							   CONF_MAX_SLOW_MS));
			return;
		}
		total = json_integer_value(ms);
	}
	j = conf_job_new(s, CONF_JOB_DELAY, id, token);
	j->total_ms = total;
	j->text = conf_xasprintf("Slept %lld ms", (long long)total);
}

static void conf_tool_json_schema(struct conf_server *s, json_t *id,
				  json_t *args, json_t *token)
{
	json_t *name = json_object_get(args, "name");
	json_t *addr = json_object_get(args, "address");
	const char *key;
	json_t *v;
	char *text, *echo;

	json_object_foreach(args, key, v)
	{
		if (strcmp(key, "name") != 0 && strcmp(key, "address") != 0) {
			conf_send_result(
				s, id,
				conf_error_result("Unexpected argument "
						  "'%s'",
						  key));
			return;
		}
	}
	if (name != NULL && !json_is_string(name)) {
		conf_send_result(s, id,
				 conf_error_result("name must be a string"));
		return;
	}
	if (addr != NULL) {
		json_t *street = json_object_get(addr, "street");
		json_t *city = json_object_get(addr, "city");

		if (!json_is_object(addr) ||
		    (street != NULL && !json_is_string(street)) ||
		    (city != NULL && !json_is_string(city))) {
			conf_send_result(
				s, id,
				conf_error_result("address must be an object "
						  "with string street and "
						  "city"));
			return;
		}
	}
	echo = conf_dump(args);
	text = conf_xasprintf("JSON Schema 2020-12 tool called with: %s", echo);
	conf_send_result(s, id, conf_text_result(text));
	free(text);
	free(echo);
}

static void conf_tool_dynamic(struct conf_server *s, json_t *id, json_t *args,
			      json_t *token)
{
	conf_send_result(s, id,
			 conf_text_result("The dynamic tool is available."));
}

static void conf_tool_toggle(struct conf_server *s, json_t *id, json_t *args,
			     json_t *token)
{
	s->dynamic_on = !s->dynamic_on;
	conf_notify(s, "notifications/tools/list_changed", NULL);
	conf_notify(s, "notifications/prompts/list_changed", NULL);
	conf_notify(s, "notifications/resources/list_changed", NULL);
	conf_send_result(s, id,
			 conf_text_result(s->dynamic_on
						  ? "Dynamic items added"
						  : "Dynamic items removed"));
}

/* The 2026-07-28 suite's hooks for subscriptions/listen: each changes the
 * list for real (a gateway that compares lists sees a change) and says so,
 * one kind of list each, so a filter on the kinds can be checked. */
static void conf_tool_trigger_tool(struct conf_server *s, json_t *id,
				   json_t *args, json_t *token)
{
	s->triggered_tool = !s->triggered_tool;
	conf_notify(s, "notifications/tools/list_changed", NULL);
	conf_send_result(s, id,
			 conf_text_result(s->triggered_tool
						  ? "test_triggered_tool added"
						  : "test_triggered_tool "
						    "removed"));
}

static void conf_tool_trigger_prompt(struct conf_server *s, json_t *id,
				     json_t *args, json_t *token)
{
	s->triggered_prompt = !s->triggered_prompt;
	conf_notify(s, "notifications/prompts/list_changed", NULL);
	conf_send_result(
		s, id,
		conf_text_result(s->triggered_prompt
					 ? "test_triggered_prompt added"
					 : "test_triggered_prompt "
					   "removed"));
}

static void conf_tool_triggered(struct conf_server *s, json_t *id, json_t *args,
				json_t *token)
{
	conf_send_result(s, id,
			 conf_text_result("The triggered tool is available."));
}

/* Logs at four levels before its answer, at once: which of them reach a
 * client is the level's business (logging/setLevel here, a 2026-07-28
 * request's _meta logLevel at a gateway). */
static void conf_tool_log_levels(struct conf_server *s, json_t *id,
				 json_t *args, json_t *token)
{
	static const size_t levels[] = {0, 1, 3, 4}; /* debug .. error */
	size_t i;

	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char *text = conf_xasprintf("test_logging_tool: a %s message",
					    conf_levels[levels[i]]);

		conf_notify_log(s, levels[i], text);
		free(text);
	}
	conf_send_result(s, id,
			 conf_text_result("Logged at debug, info, warning and "
					  "error"));
}

/* A tool whose argument a 2026-07-28 client mirrors in an Mcp-Param-Region
 * header (SEP-2243): the header's checks are the gateway's. */
static void conf_tool_custom_headers(struct conf_server *s, json_t *id,
				     json_t *args, json_t *token)
{
	const char *region = conf_str(args, "region");
	char *text;

	if (region == NULL) {
		conf_send_result(s, id,
				 conf_error_result("region (string) is "
						   "required"));
		return;
	}
	text = conf_xasprintf("Region: %s", region);
	conf_send_result(s, id, conf_text_result(text));
	free(text);
}

static bool conf_subscribed(const struct conf_server *s, const char *uri)
{
	size_t i;
	json_t *v;

	json_array_foreach(s->subs, i, v)
	{
		if (strcmp(json_string_value(v), uri) == 0)
			return true;
	}
	return false;
}

static void conf_tool_update_watched(struct conf_server *s, json_t *id,
				     json_t *args, json_t *token)
{
	bool notified = conf_subscribed(s, "test://watched-resource");
	char *text;

	s->watched_rev++;
	if (notified)
		conf_notify(
			s, "notifications/resources/updated",
			conf_pack("{s:s}", "uri", "test://watched-resource"));
	text = conf_xasprintf("test://watched-resource is now at revision %u%s",
			      s->watched_rev,
			      notified ? "; subscriber notified" : "");
	conf_send_result(s, id, conf_text_result(text));
	free(text);
}

static const struct conf_tool conf_tools[] = {
	{"test_simple_text", "Simple text",
	 "Tests simple text content response", CONF_NO_ARGS, NULL,
	 CONF_SHOWN_ALWAYS, conf_tool_simple_text},
	{"test_image_content", "Image content", "Tests image content response",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_image},
	{"test_audio_content", "Audio content", "Tests audio content response",
	 CONF_NO_ARGS, "2025-03-26", CONF_SHOWN_ALWAYS, conf_tool_audio},
	{"test_embedded_resource", "Embedded resource",
	 "Tests embedded resource content response", CONF_NO_ARGS, NULL,
	 CONF_SHOWN_ALWAYS, conf_tool_embedded},
	{"test_multiple_content_types", "Multiple content types",
	 "Tests response with multiple content types (text, image, resource)",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_mixed},
	{"test_tool_with_logging", "Tool with logging",
	 "Tests tool that emits three info log messages ~50 ms apart",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_logging},
	{"test_tool_with_progress", "Tool with progress",
	 "Tests tool that reports progress 0, 50 and 100 of 100 ~50 ms apart",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_progress},
	{"test_error_handling", "Error handling",
	 "Tests error response handling: always returns isError", CONF_NO_ARGS,
	 NULL, CONF_SHOWN_ALWAYS, conf_tool_error},
	{"test_reconnection", "Reconnection",
	 "Tests SSE stream disconnection and client reconnection (SEP-1699): "
	 "answers after 100 ms so the transport can close the stream first",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_reconnection},
	{"test_sampling", "Sampling",
	 "Tests server-initiated sampling (LLM completion request)",
	 "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
	 "\"description\":\"The prompt to send to the LLM\"}},"
	 "\"required\":[\"prompt\"]}",
	 NULL, CONF_SHOWN_ALWAYS, conf_tool_sampling},
	{"test_elicitation", "Elicitation",
	 "Tests server-initiated elicitation (user input request)",
	 "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":"
	 "\"string\","
	 "\"description\":\"The message to show the user\"}},"
	 "\"required\":[\"message\"]}",
	 "2025-06-18", CONF_SHOWN_ALWAYS, conf_tool_elicitation},
	{"test_elicitation_sep1034_defaults", "Elicitation defaults",
	 "Tests elicitation with default values per SEP-1034", CONF_NO_ARGS,
	 "2025-06-18", CONF_SHOWN_ALWAYS, conf_tool_elicit_defaults},
	{"test_elicitation_sep1330_enums", "Elicitation enums",
	 "Tests elicitation with enum schema improvements per SEP-1330",
	 CONF_NO_ARGS, "2025-06-18", CONF_SHOWN_ALWAYS, conf_tool_elicit_enums},
	{"json_schema_2020_12_tool", "JSON Schema 2020-12",
	 "Tool with JSON Schema 2020-12 features for conformance testing "
	 "(SEP-1613)",
	 "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
	 "\"type\":\"object\",\"$defs\":{\"address\":{\"type\":\"object\","
	 "\"properties\":{\"street\":{\"type\":\"string\"},"
	 "\"city\":{\"type\":\"string\"}}}},"
	 "\"properties\":{\"name\":{\"type\":\"string\"},"
	 "\"address\":{\"$ref\":\"#/$defs/address\"}},"
	 "\"additionalProperties\":false}",
	 NULL, CONF_SHOWN_ALWAYS, conf_tool_json_schema},
	{"test_resource_link", "Resource link",
	 "Returns a resource_link to test://static-text", CONF_NO_ARGS,
	 "2025-06-18", CONF_SHOWN_ALWAYS, conf_tool_resource_link},
	{"test_roots", "Roots", "Asks the client for its roots (roots/list)",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_roots},
	{"test_slow", "Slow",
	 "Answers after ms milliseconds (default 1000), reporting progress "
	 "every 100 ms when given a progress token; cancellable",
	 "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
	 "\"minimum\":0,\"maximum\":60000,\"description\":\"How long to "
	 "take\"}}}",
	 NULL, CONF_SHOWN_ALWAYS, conf_tool_slow},
	{"test_toggle_dynamic", "Toggle dynamic items",
	 "Adds or removes test_dynamic_tool, test_dynamic_prompt and "
	 "test://dynamic, and sends the three list_changed notifications",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_toggle},
	{"test_update_watched", "Update watched resource",
	 "Changes test://watched-resource and sends "
	 "notifications/resources/updated if it is subscribed",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_update_watched},
	{"test_dynamic_tool", "Dynamic tool",
	 "Listed only while test_toggle_dynamic has it on", CONF_NO_ARGS, NULL,
	 CONF_SHOWN_DYNAMIC, conf_tool_dynamic},
	/* What the 2026-07-28 suite calls by name (the everything-server's
	 * names), each done the 2025 way: a request to the client in the
	 * middle of the call, whose id is the input's name. */
	{"test_input_required_result_elicitation", "Elicit a name",
	 "Asks the user's name (elicitation/create, id user_name) and greets "
	 "them",
	 CONF_NO_ARGS, "2025-06-18", CONF_SHOWN_ALWAYS,
	 conf_tool_ir_elicitation},
	{"test_input_required_result_sampling", "Sample an answer",
	 "Asks the client's model a question (sampling/createMessage, id "
	 "capital_question) and returns its answer",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_ir_sampling},
	{"test_input_required_result_list_roots", "List roots",
	 "Asks the client's roots (roots/list, id client_roots) and lists them",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_ir_roots},
	{"test_input_required_result_request_state", "Confirm",
	 "Asks the user to confirm (elicitation/create, id confirm); answers "
	 "state-ok",
	 CONF_NO_ARGS, "2025-06-18", CONF_SHOWN_ALWAYS,
	 conf_tool_ir_request_state},
	{"test_input_required_result_multiple_inputs", "Three inputs at once",
	 "Asks elicitation (user_name), sampling (greeting) and roots/list "
	 "(client_roots) at once, before any answer",
	 CONF_NO_ARGS, "2025-06-18", CONF_SHOWN_ALWAYS, conf_tool_ir_multiple},
	{"test_input_required_result_multi_round", "Two rounds",
	 "Asks a name (step1), then, once answered, a colour (step2), then "
	 "answers",
	 CONF_NO_ARGS, "2025-06-18", CONF_SHOWN_ALWAYS,
	 conf_tool_ir_multi_round},
	{"test_input_required_result_tampered_state", "Confirm (state check)",
	 "Asks the user to confirm (elicitation/create, id confirm); a "
	 "gateway's "
	 "requestState for it must not be forgeable",
	 CONF_NO_ARGS, "2025-06-18", CONF_SHOWN_ALWAYS, conf_tool_ir_tampered},
	{"test_input_required_result_capabilities", "Ask what is declared",
	 "Asks elicitation, sampling and roots/list, each only when the "
	 "request's _meta clientCapabilities (else initialize's) declares it",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_ir_capabilities},
	{"test_missing_capability", "Sampling, declared or not",
	 "Asks sampling/createMessage whatever the client declared (for a "
	 "gateway's missing-capability error)",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_missing_capability},
	{"test_streaming_elicitation", "Elicitation mid-call",
	 "Asks the user's name in the middle of the call (elicitation/create, "
	 "id streaming_name)",
	 CONF_NO_ARGS, "2025-06-18", CONF_SHOWN_ALWAYS,
	 conf_tool_streaming_elicitation},
	{"test_logging_tool", "Logging at four levels",
	 "Logs at debug, info, warning and error, then answers", CONF_NO_ARGS,
	 NULL, CONF_SHOWN_ALWAYS, conf_tool_log_levels},
	{"test_trigger_tool_change", "Change the tool list",
	 "Adds or removes test_triggered_tool and sends "
	 "notifications/tools/list_changed",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_trigger_tool},
	{"test_trigger_prompt_change", "Change the prompt list",
	 "Adds or removes test_triggered_prompt and sends "
	 "notifications/prompts/list_changed",
	 CONF_NO_ARGS, NULL, CONF_SHOWN_ALWAYS, conf_tool_trigger_prompt},
	{"test_triggered_tool", "Triggered tool",
	 "Listed only while test_trigger_tool_change has it on", CONF_NO_ARGS,
	 NULL, CONF_SHOWN_TRIGGERED, conf_tool_triggered},
	{"test_custom_headers", "Custom header",
	 "Echoes region, which a 2026-07-28 client mirrors in the "
	 "Mcp-Param-Region header",
	 "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":"
	 "\"string\",\"description\":\"A region name\","
	 "\"x-mcp-header\":\"Region\"}},\"required\":[\"region\"]}",
	 NULL, CONF_SHOWN_ALWAYS, conf_tool_custom_headers},
};

#define CONF_NTOOLS (sizeof(conf_tools) / sizeof(conf_tools[0]))

static const struct conf_tool *conf_tool_find(const struct conf_server *s,
					      const char *name)
{
	size_t i;

	for (i = 0; i < CONF_NTOOLS; i++) {
		const struct conf_tool *t = &conf_tools[i];

		if (strcmp(t->name, name) != 0)
			continue;
		if (!conf_shown(s, t->shown, false))
			return NULL;
		if (t->since != NULL && !conf_version_at_least(s, t->since))
			return NULL;
		return t;
	}
	return NULL;
}

/* ---- prompts, resources, completions ---------------------------------- */

struct conf_prompt {
	const char *name;
	const char *title;
	const char *description;
	const char *arguments; /* JSON array text */
	enum conf_shown shown;
};

static const struct conf_prompt conf_prompts[] = {
	{"test_simple_prompt", "Simple Test Prompt",
	 "A simple prompt without arguments", "[]", CONF_SHOWN_ALWAYS},
	{"test_prompt_with_arguments", "Prompt With Arguments",
	 "A prompt with required arguments",
	 "[{\"name\":\"arg1\",\"description\":\"First test argument\","
	 "\"required\":true},{\"name\":\"arg2\",\"description\":\"Second test "
	 "argument\",\"required\":true}]",
	 CONF_SHOWN_ALWAYS},
	{"test_prompt_with_embedded_resource", "Prompt With Embedded Resource",
	 "A prompt that includes an embedded resource",
	 "[{\"name\":\"resourceUri\",\"description\":\"URI of the resource to "
	 "embed\",\"required\":true}]",
	 CONF_SHOWN_ALWAYS},
	{"test_prompt_with_image", "Prompt With Image",
	 "A prompt that includes image content", "[]", CONF_SHOWN_ALWAYS},
	{"test_dynamic_prompt", "Dynamic Prompt",
	 "Listed only while test_toggle_dynamic has it on", "[]",
	 CONF_SHOWN_DYNAMIC},
	{"test_input_required_result_prompt", "Prompt With Elicited Context",
	 "Asks the user for a context (elicitation/create, id user_context), "
	 "then answers with it",
	 "[]", CONF_SHOWN_ALWAYS},
	{"test_triggered_prompt", "Triggered Prompt",
	 "Listed only while test_trigger_prompt_change has it on", "[]",
	 CONF_SHOWN_TRIGGERED},
};

#define CONF_NPROMPTS (sizeof(conf_prompts) / sizeof(conf_prompts[0]))

static const struct conf_prompt *conf_prompt_find(const struct conf_server *s,
						  const char *name)
{
	size_t i;

	for (i = 0; i < CONF_NPROMPTS; i++) {
		if (strcmp(conf_prompts[i].name, name) == 0 &&
		    conf_shown(s, conf_prompts[i].shown, true))
			return &conf_prompts[i];
	}
	return NULL;
}

struct conf_resource {
	const char *uri;
	const char *name;
	const char *title;
	const char *description;
	const char *mime;
	bool dynamic;
};

static const struct conf_resource conf_resources[] = {
	{"test://static-text", "static-text", "Static Text Resource",
	 "A static text resource for testing", "text/plain", false},
	{"test://static-binary", "static-binary", "Static Binary Resource",
	 "A static binary resource (image) for testing", "image/png", false},
	{"test://watched-resource", "watched-resource", "Watched Resource",
	 "A resource that changes when test_update_watched is called; "
	 "subscribe to hear of it",
	 "text/plain", false},
	{"test://dynamic", "dynamic", "Dynamic Resource",
	 "Listed only while test_toggle_dynamic has it on", "text/plain", true},
};

#define CONF_NRESOURCES (sizeof(conf_resources) / sizeof(conf_resources[0]))

#define CONF_TEMPLATE "test://template/{id}/data"
#define CONF_TEMPLATE_HEAD "test://template/"
#define CONF_TEMPLATE_TAIL "/data"

static const struct conf_resource *
conf_resource_find(const struct conf_server *s, const char *uri)
{
	size_t i;

	for (i = 0; i < CONF_NRESOURCES; i++) {
		if (strcmp(conf_resources[i].uri, uri) == 0 &&
		    (!conf_resources[i].dynamic || s->dynamic_on))
			return &conf_resources[i];
	}
	return NULL;
}

/* Matches test://template/{id}/data; id is one non-empty path segment. */
static bool conf_template_match(const char *uri, char *id, size_t idsize)
{
	size_t head = strlen(CONF_TEMPLATE_HEAD);
	size_t tail = strlen(CONF_TEMPLATE_TAIL);
	size_t len = strlen(uri), n;

	if (len <= head + tail || strncmp(uri, CONF_TEMPLATE_HEAD, head) != 0 ||
	    strcmp(uri + len - tail, CONF_TEMPLATE_TAIL) != 0)
		return false;
	n = len - head - tail;
	if (n >= idsize || memchr(uri + head, '/', n) != NULL)
		return false;
	memcpy(id, uri + head, n);
	id[n] = '\0';
	return true;
}

/* Serves the cursor's page of all. Takes ownership of all. */
static void conf_send_page(struct conf_server *s, json_t *id, json_t *params,
			   const char *key, json_t *all)
{
	json_t *cursor = json_object_get(params, "cursor");
	size_t total = json_array_size(all), off = 0, end, i;
	json_t *page, *result;

	if (cursor != NULL) {
		const char *c = json_string_value(cursor);
		char *endp;
		unsigned long long v;

		errno = 0;
		v = c ? strtoull(c, &endp, 10) : 0;
		if (c == NULL || *c < '0' || *c > '9' || *endp != '\0' ||
		    errno != 0 || v > total) {
			conf_send_error(s, id, CONF_ERR_PARAMS,
					"Invalid cursor");
			json_decref(all);
			return;
		}
		off = (size_t)v;
	}
	end = total;
	if (s->page_size > 0 && total - off > s->page_size)
		end = off + s->page_size;
	page = json_array();
	for (i = off; i < end; i++)
		json_array_append(page, json_array_get(all, i));
	result = conf_pack("{s:o}", key, page);
	if (end < total) {
		char next[32];

		snprintf(next, sizeof(next), "%zu", end);
		json_object_set_new(result, "nextCursor", json_string(next));
	}
	json_decref(all);
	conf_send_result(s, id, result);
}

static const char *const conf_arg1_values[] = {
	"test", "testValue1", "paris", "park", "party",
};
static const char *const conf_arg2_values[] = {
	"test",
	"testValue2",
	"world",
};
static const char *const conf_id_values[] = {
	"1",
	"2",
	"3",
	"123",
};
static const char *const conf_uri_values[] = {
	"test://static-text",
	"test://static-binary",
	"test://watched-resource",
};

#define CONF_N(a) (sizeof(a) / sizeof((a)[0]))

static json_t *conf_complete_values(const char *const *cands, size_t n,
				    const char *prefix)
{
	json_t *values = json_array();
	size_t i, plen = strlen(prefix);

	for (i = 0; i < n && json_array_size(values) < CONF_MAX_COMPLETIONS;
	     i++) {
		if (strncmp(cands[i], prefix, plen) == 0)
			json_array_append_new(values, json_string(cands[i]));
	}
	return values;
}

/* ---- request handlers --------------------------------------------------- */

static void conf_on_initialize(struct conf_server *s, json_t *id,
			       json_t *params)
{
	const char *requested = conf_str(params, "protocolVersion");
	json_t *caps = json_object_get(params, "capabilities");
	const char *chosen = CONF_LATEST;
	json_t *result;
	size_t i;

	if (s->phase != CONF_PHASE_NEW) {
		conf_send_error(s, id, CONF_ERR_REQUEST,
				"initialize was already received");
		return;
	}
	if (requested == NULL || !json_is_object(caps) ||
	    !json_is_object(json_object_get(params, "clientInfo"))) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"initialize needs protocolVersion, "
				"capabilities and clientInfo");
		return;
	}
	for (i = 0; i < CONF_N(conf_versions); i++) {
		if (strcmp(requested, conf_versions[i]) == 0)
			chosen = conf_versions[i];
	}
	snprintf(s->version, sizeof(s->version), "%s", chosen);
	json_decref(s->client_caps);
	s->client_caps = json_deep_copy(caps);
	s->phase = CONF_PHASE_INITIALIZING;
	result = conf_pack(
		"{s:s,s:{s:{s:b},s:{s:b,s:b},s:{s:b},s:{},s:{}},"
		"s:{s:s,s:s,s:s},s:s}",
		"protocolVersion", chosen, "capabilities", "tools",
		"listChanged", 1, "resources", "subscribe", 1, "listChanged", 1,
		"prompts", "listChanged", 1, "logging", "completions",
		"serverInfo", "name", "mcpvisor-conformance-server", "title",
		"mcpvisor conformance fixture", "version", "1.0.0",
		"instructions",
		"Fixture server for the MCP conformance suite's server "
		"scenarios.");
	conf_send_result(s, id, result);
}

static void conf_on_ping(struct conf_server *s, json_t *id, json_t *params)
{
	conf_send_result(s, id, json_object());
}

static void conf_on_tools_list(struct conf_server *s, json_t *id,
			       json_t *params)
{
	json_t *all = json_array();
	size_t i;

	for (i = 0; i < CONF_NTOOLS; i++) {
		const struct conf_tool *t = &conf_tools[i];
		json_t *tool;

		if (conf_tool_find(s, t->name) != t)
			continue;
		tool = conf_pack("{s:s,s:s,s:o}", "name", t->name,
				 "description", t->description, "inputSchema",
				 conf_parse_const(t->schema));
		if (conf_version_at_least(s, "2025-06-18"))
			json_object_set_new(tool, "title",
					    json_string(t->title));
		json_array_append_new(all, tool);
	}
	conf_send_page(s, id, params, "tools", all);
}

static void conf_on_tools_call(struct conf_server *s, json_t *id,
			       json_t *params)
{
	const char *name = conf_str(params, "name");
	json_t *args = json_object_get(params, "arguments");
	json_t *meta = json_object_get(params, "_meta");
	json_t *token = json_object_get(meta, "progressToken");
	const struct conf_tool *t;
	json_t *empty = NULL;

	if (name == NULL) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"tools/call needs a name");
		return;
	}
	if (args != NULL && !json_is_object(args)) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"arguments must be an object");
		return;
	}
	t = conf_tool_find(s, name);
	if (t == NULL) {
		conf_send_error(s, id, CONF_ERR_PARAMS, "Unknown tool: %s",
				name);
		return;
	}
	if (s->njobs >= CONF_MAX_JOBS) {
		conf_send_result(s, id,
				 conf_error_result("Too many calls in flight "
						   "(%d)",
						   CONF_MAX_JOBS));
		return;
	}
	if (!json_is_string(token) && !json_is_number(token))
		token = NULL;
	if (args == NULL)
		args = empty = json_object();
	t->call(s, id, args, token);
	json_decref(empty);
}

static void conf_on_prompts_list(struct conf_server *s, json_t *id,
				 json_t *params)
{
	json_t *all = json_array();
	size_t i;

	for (i = 0; i < CONF_NPROMPTS; i++) {
		const struct conf_prompt *p = &conf_prompts[i];
		json_t *prompt;

		if (!conf_shown(s, p->shown, true))
			continue;
		prompt = conf_pack("{s:s,s:s,s:o}", "name", p->name,
				   "description", p->description, "arguments",
				   conf_parse_const(p->arguments));
		if (conf_version_at_least(s, "2025-06-18"))
			json_object_set_new(prompt, "title",
					    json_string(p->title));
		json_array_append_new(all, prompt);
	}
	conf_send_page(s, id, params, "prompts", all);
}

static json_t *conf_prompt_message(json_t *content)
{
	return conf_pack("{s:s,s:o}", "role", "user", "content", content);
}

static void conf_on_prompts_get(struct conf_server *s, json_t *id,
				json_t *params)
{
	const char *name = conf_str(params, "name");
	json_t *args = json_object_get(params, "arguments");
	const struct conf_prompt *p;
	json_t *decl, *arg, *v, *messages;
	const char *key;
	size_t i;
	char *text;

	if (name == NULL) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"prompts/get needs a name");
		return;
	}
	if (args != NULL && !json_is_object(args)) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"arguments must be an object");
		return;
	}
	json_object_foreach(args, key, v)
	{
		if (!json_is_string(v)) {
			conf_send_error(s, id, CONF_ERR_PARAMS,
					"Argument %s must be a string", key);
			return;
		}
	}
	p = conf_prompt_find(s, name);
	if (p == NULL) {
		conf_send_error(s, id, CONF_ERR_PARAMS, "Unknown prompt: %s",
				name);
		return;
	}
	decl = conf_parse_const(p->arguments);
	json_array_foreach(decl, i, arg)
	{
		key = conf_str(arg, "name");
		if (json_is_true(json_object_get(arg, "required")) &&
		    conf_str(args, key) == NULL) {
			conf_send_error(s, id, CONF_ERR_PARAMS,
					"Missing required argument: %s", key);
			json_decref(decl);
			return;
		}
	}
	json_decref(decl);
	if (strcmp(name, "test_input_required_result_prompt") == 0) {
		if (s->njobs >= CONF_MAX_JOBS)
			conf_send_error(s, id, CONF_ERR_INTERNAL,
					"Too many requests in flight (%d)",
					CONF_MAX_JOBS);
		else
			conf_prompt_ir(s, id, p->description);
		return;
	}

	messages = json_array();
	if (strcmp(name, "test_prompt_with_arguments") == 0) {
		text = conf_xasprintf("Prompt with arguments: arg1='%s', "
				      "arg2='%s'",
				      conf_str(args, "arg1"),
				      conf_str(args, "arg2"));
		json_array_append_new(
			messages, conf_prompt_message(conf_text_block(text)));
		free(text);
	} else if (strcmp(name, "test_prompt_with_embedded_resource") == 0) {
		json_array_append_new(
			messages,
			conf_prompt_message(conf_pack(
				"{s:s,s:{s:s,s:s,s:s}}", "type", "resource",
				"resource", "uri",
				conf_str(args, "resourceUri"), "mimeType",
				"text/plain", "text",
				"Embedded resource content for testing.")));
		json_array_append_new(messages,
				      conf_prompt_message(conf_text_block(
					      "Please process the embedded "
					      "resource above.")));
	} else if (strcmp(name, "test_prompt_with_image") == 0) {
		json_array_append_new(messages,
				      conf_prompt_message(conf_image_block()));
		json_array_append_new(messages,
				      conf_prompt_message(conf_text_block(
					      "Please analyze the image "
					      "above.")));
	} else if (strcmp(name, "test_dynamic_prompt") == 0) {
		json_array_append_new(messages,
				      conf_prompt_message(conf_text_block(
					      "This is the dynamic prompt.")));
	} else if (strcmp(name, "test_triggered_prompt") == 0) {
		json_array_append_new(
			messages, conf_prompt_message(conf_text_block(
					  "This is the triggered prompt.")));
	} else {
		json_array_append_new(messages,
				      conf_prompt_message(conf_text_block(
					      "This is a simple prompt for "
					      "testing.")));
	}
	conf_send_result(s, id,
			 conf_pack("{s:s,s:o}", "description", p->description,
				   "messages", messages));
}

static void conf_on_resources_list(struct conf_server *s, json_t *id,
				   json_t *params)
{
	json_t *all = json_array();
	size_t i;

	for (i = 0; i < CONF_NRESOURCES; i++) {
		const struct conf_resource *r = &conf_resources[i];
		json_t *res;

		if (r->dynamic && !s->dynamic_on)
			continue;
		res = conf_pack("{s:s,s:s,s:s,s:s}", "uri", r->uri, "name",
				r->name, "description", r->description,
				"mimeType", r->mime);
		if (conf_version_at_least(s, "2025-06-18"))
			json_object_set_new(res, "title",
					    json_string(r->title));
		json_array_append_new(all, res);
	}
	conf_send_page(s, id, params, "resources", all);
}

static void conf_on_templates_list(struct conf_server *s, json_t *id,
				   json_t *params)
{
	json_t *tmpl =
		conf_pack("{s:s,s:s,s:s,s:s}", "uriTemplate", CONF_TEMPLATE,
			  "name", "template", "description",
			  "A resource template with parameter substitution",
			  "mimeType", "application/json");

	if (conf_version_at_least(s, "2025-06-18"))
		json_object_set_new(tmpl, "title",
				    json_string("Resource Template"));
	conf_send_page(s, id, params, "resourceTemplates",
		       conf_pack("[o]", tmpl));
}

static void conf_send_not_found(struct conf_server *s, json_t *id,
				const char *uri)
{
	conf_send_error_data(s, id, CONF_ERR_NO_RESOURCE, "Resource not found",
			     conf_pack("{s:s}", "uri", uri));
}

static void conf_on_resources_read(struct conf_server *s, json_t *id,
				   json_t *params)
{
	const char *uri = conf_str(params, "uri");
	const struct conf_resource *r;
	char tid[CONF_MAX_TEMPLATE_ID + 1];
	json_t *content;
	char *text;

	if (uri == NULL || strlen(uri) > CONF_MAX_URI) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"resources/read needs a uri of at most %d "
				"bytes",
				CONF_MAX_URI);
		return;
	}
	r = conf_resource_find(s, uri);
	if (r != NULL && strcmp(r->uri, "test://static-binary") == 0) {
		content = conf_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType",
				    r->mime, "blob", conf_png);
	} else if (r != NULL) {
		if (strcmp(r->uri, "test://watched-resource") == 0)
			text = conf_xasprintf("Watched resource content, "
					      "revision %u",
					      s->watched_rev);
		else if (strcmp(r->uri, "test://dynamic") == 0)
			text = conf_xstrdup("Dynamic resource content.");
		else
			text = conf_xstrdup("This is the content of the "
					    "static text resource.");
		content = conf_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType",
				    r->mime, "text", text);
		free(text);
	} else if (conf_template_match(uri, tid, sizeof(tid))) {
		json_t *data =
			conf_pack("{s:s,s:b,s:s+}", "id", tid, "templateTest",
				  1, "data", "Data for ID: ", tid);

		text = conf_dump(data);
		json_decref(data);
		content = conf_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType",
				    "application/json", "text", text);
		free(text);
	} else {
		conf_send_not_found(s, id, uri);
		return;
	}
	conf_send_result(s, id, conf_pack("{s:[o]}", "contents", content));
}

static void conf_on_subscribe(struct conf_server *s, json_t *id, json_t *params)
{
	const char *uri = conf_str(params, "uri");

	if (uri == NULL) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"resources/subscribe needs a uri");
		return;
	}
	if (conf_resource_find(s, uri) == NULL) {
		conf_send_not_found(s, id, uri);
		return;
	}
	if (!conf_subscribed(s, uri)) {
		if (json_array_size(s->subs) >= CONF_MAX_SUBS) {
			conf_send_error(s, id, CONF_ERR_INTERNAL,
					"Too many subscriptions (%d)",
					CONF_MAX_SUBS);
			return;
		}
		json_array_append_new(s->subs, json_string(uri));
	}
	conf_send_result(s, id, json_object());
}

static void conf_on_unsubscribe(struct conf_server *s, json_t *id,
				json_t *params)
{
	const char *uri = conf_str(params, "uri");
	size_t i;
	json_t *v;

	if (uri == NULL) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"resources/unsubscribe needs a uri");
		return;
	}
	json_array_foreach(s->subs, i, v)
	{
		if (strcmp(json_string_value(v), uri) == 0) {
			json_array_remove(s->subs, i);
			break;
		}
	}
	conf_send_result(s, id, json_object());
}

static void conf_on_set_level(struct conf_server *s, json_t *id, json_t *params)
{
	const char *level = conf_str(params, "level");
	size_t i;

	for (i = 0; level != NULL && i < CONF_NLEVELS; i++) {
		if (strcmp(level, conf_levels[i]) == 0) {
			s->log_level = i;
			conf_send_result(s, id, json_object());
			return;
		}
	}
	conf_send_error(s, id, CONF_ERR_PARAMS, "Invalid log level");
}

static void conf_on_complete(struct conf_server *s, json_t *id, json_t *params)
{
	json_t *ref = json_object_get(params, "ref");
	json_t *arg = json_object_get(params, "argument");
	const char *type = conf_str(ref, "type");
	const char *argname = conf_str(arg, "name");
	const char *value = conf_str(arg, "value");
	json_t *values = NULL;

	if (type == NULL || argname == NULL || value == NULL) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"completion/complete needs ref.type, "
				"argument.name and argument.value");
		return;
	}
	if (strcmp(type, "ref/prompt") == 0) {
		const char *name = conf_str(ref, "name");

		if (name == NULL || conf_prompt_find(s, name) == NULL) {
			conf_send_error(s, id, CONF_ERR_PARAMS,
					"Unknown prompt: %s",
					name ? name : "(none)");
			return;
		}
		if (strcmp(name, "test_prompt_with_arguments") == 0 &&
		    strcmp(argname, "arg1") == 0)
			values = conf_complete_values(conf_arg1_values,
						      CONF_N(conf_arg1_values),
						      value);
		else if (strcmp(name, "test_prompt_with_arguments") == 0 &&
			 strcmp(argname, "arg2") == 0)
			values = conf_complete_values(conf_arg2_values,
						      CONF_N(conf_arg2_values),
						      value);
		else if (strcmp(name, "test_prompt_with_embedded_resource") ==
				 0 &&
			 strcmp(argname, "resourceUri") == 0)
			values = conf_complete_values(conf_uri_values,
						      CONF_N(conf_uri_values),
						      value);
	} else if (strcmp(type, "ref/resource") == 0) {
		const char *uri = conf_str(ref, "uri");

		if (uri == NULL || (strcmp(uri, CONF_TEMPLATE) != 0 &&
				    conf_resource_find(s, uri) == NULL)) {
			conf_send_error(s, id, CONF_ERR_PARAMS,
					"Unknown resource: %s",
					uri ? uri : "(none)");
			return;
		}
		if (strcmp(uri, CONF_TEMPLATE) == 0 &&
		    strcmp(argname, "id") == 0)
			values = conf_complete_values(
				conf_id_values, CONF_N(conf_id_values), value);
	} else {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"Unknown reference type: %s", type);
		return;
	}
	if (values == NULL)
		values = json_array();
	conf_send_result(s, id,
			 conf_pack("{s:{s:o,s:I,s:b}}", "completion", "values",
				   values, "total",
				   (json_int_t)json_array_size(values),
				   "hasMore", 0));
}

typedef void conf_method_fn(struct conf_server *s, json_t *id, json_t *params);

static const struct {
	const char *name;
	conf_method_fn *fn;
} conf_methods[] = {
	{"initialize", conf_on_initialize},
	{"ping", conf_on_ping},
	{"tools/list", conf_on_tools_list},
	{"tools/call", conf_on_tools_call},
	{"prompts/list", conf_on_prompts_list},
	{"prompts/get", conf_on_prompts_get},
	{"resources/list", conf_on_resources_list},
	{"resources/templates/list", conf_on_templates_list},
	{"resources/read", conf_on_resources_read},
	{"resources/subscribe", conf_on_subscribe},
	{"resources/unsubscribe", conf_on_unsubscribe},
	{"logging/setLevel", conf_on_set_level},
	{"completion/complete", conf_on_complete},
};

/* ---- message dispatch --------------------------------------------------- */

static void conf_on_request(struct conf_server *s, json_t *id,
			    const char *method, json_t *params)
{
	json_t *empty = NULL;
	size_t i;

	for (i = 0; i < CONF_N(conf_methods); i++) {
		if (strcmp(conf_methods[i].name, method) == 0)
			break;
	}
	if (i == CONF_N(conf_methods)) {
		conf_send_error(s, id, CONF_ERR_METHOD, "Method not found: %s",
				method);
		return;
	}
	if (params != NULL && !json_is_object(params)) {
		conf_send_error(s, id, CONF_ERR_PARAMS,
				"params must be an object");
		return;
	}
	if (s->phase == CONF_PHASE_NEW && strcmp(method, "initialize") != 0 &&
	    strcmp(method, "ping") != 0) {
		conf_send_error(s, id, CONF_ERR_REQUEST,
				"Server not initialized: send initialize "
				"first");
		return;
	}
	if (params == NULL)
		params = empty = json_object();
	s->cause = id;
	s->request_meta = json_object_get(params, "_meta");
	conf_methods[i].fn(s, id, params);
	s->request_meta = NULL;
	s->cause = NULL;
	json_decref(empty);
}

static void conf_on_notification(struct conf_server *s, const char *method,
				 json_t *params)
{
	if (strcmp(method, "notifications/initialized") == 0) {
		if (s->phase == CONF_PHASE_NEW) {
			conf_log("initialized before initialize: ignored");
			return;
		}
		s->phase = CONF_PHASE_READY;
		conf_jobs_wake_waiting(s);
	} else if (strcmp(method, "notifications/cancelled") == 0) {
		json_t *rid = json_object_get(params, "requestId");

		if (rid != NULL)
			conf_jobs_cancel(s, rid);
	}
	/* Everything else (roots/list_changed, progress for our requests,
	 * unknown notifications) needs nothing from us. */
}

static void conf_on_message(struct conf_server *s, json_t *msg)
{
	json_t *id, *method, *params;
	const char *version;

	if (!json_is_object(msg)) {
		/* Batches left MCP in 2025-06-18; we take single messages. */
		conf_send_error(s, NULL, CONF_ERR_REQUEST,
				"Invalid Request: expected one JSON-RPC "
				"message object");
		return;
	}
	id = json_object_get(msg, "id");
	method = json_object_get(msg, "method");
	params = json_object_get(msg, "params");
	version = conf_str(msg, "jsonrpc");
	if (id != NULL && !json_is_string(id) && !json_is_number(id)) {
		conf_send_error(s, NULL, CONF_ERR_REQUEST,
				"Invalid Request: id must be a string or a "
				"number");
		return;
	}
	if (version == NULL || strcmp(version, "2.0") != 0) {
		if (id != NULL)
			conf_send_error(s, id, CONF_ERR_REQUEST,
					"Invalid Request: jsonrpc must be "
					"\"2.0\"");
		else
			conf_log("message without jsonrpc 2.0 ignored");
		return;
	}
	if (json_is_string(method)) {
		if (id != NULL)
			conf_on_request(s, id, json_string_value(method),
					params);
		else
			conf_on_notification(s, json_string_value(method),
					     params);
		return;
	}
	if (method == NULL && id != NULL &&
	    (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
		conf_asks_answer(s, msg);
		return;
	}
	if (id != NULL)
		conf_send_error(s, id, CONF_ERR_REQUEST,
				"Invalid Request: no method");
	else
		conf_log("message that is neither request, notification nor "
			 "response ignored");
}

static void conf_on_line(struct conf_server *s, char *line, size_t len)
{
	json_error_t err;
	json_t *msg;
	size_t i;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
			   line[len - 1] == '\t'))
		len--;
	for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	if (i == len)
		return;
	if (s->verbose)
		conf_log("<- %.*s", (int)(len < 300 ? len : 300), line);
	msg = json_loadb(line, len, 0, &err);
	if (msg == NULL) {
		conf_send_error(s, NULL, CONF_ERR_PARSE, "Parse error: %s",
				err.text);
		return;
	}
	conf_on_message(s, msg);
	json_decref(msg);
}

/* ---- input ------------------------------------------------------------ */

static void conf_read_input(struct conf_server *s)
{
	size_t start = 0;
	ssize_t n;
	char *nl;

	if (s->in_cap - s->in_len < CONF_READ_CHUNK) {
		s->in_cap = s->in_cap * 2 > s->in_len + CONF_READ_CHUNK
				    ? s->in_cap * 2
				    : s->in_len + CONF_READ_CHUNK;
		s->in = conf_xrealloc(s->in, s->in_cap);
	}
	n = read(STDIN_FILENO, s->in + s->in_len, s->in_cap - s->in_len);
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		conf_log("stdin: %s", strerror(errno));
		n = 0;
	}
	if (n == 0) {
		s->in_eof = true;
		/* A last line without its newline still counts. */
		if (!s->in_skipping && s->in_len > 0)
			conf_on_line(s, s->in, s->in_len);
		s->in_len = 0;
		return;
	}
	s->in_len += (size_t)n;
	while ((nl = memchr(s->in + start, '\n', s->in_len - start)) != NULL) {
		size_t len = (size_t)(nl - (s->in + start));

		if (s->in_skipping) {
			s->in_skipping = false;
		} else if (len > CONF_MAX_LINE) {
			conf_log("input line over %u bytes skipped",
				 CONF_MAX_LINE);
		} else {
			conf_on_line(s, s->in + start, len);
		}
		start += len + 1;
	}
	if (s->in_skipping) {
		s->in_len = 0;
		return;
	}
	memmove(s->in, s->in + start, s->in_len - start);
	s->in_len -= start;
	if (s->in_len > CONF_MAX_LINE) {
		conf_log("input line over %u bytes skipped", CONF_MAX_LINE);
		s->in_skipping = true;
		s->in_len = 0;
	}
}

/* ---- main ------------------------------------------------------------- */

/* Only pipes and sockets get O_NONBLOCK: on a terminal it would leak into
 * the shell that shares it. */
static bool conf_set_nonblock(int fd)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) != 0 ||
	    !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return false;
	fl = fcntl(fd, F_GETFL);
	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

static void conf_usage(FILE *f)
{
	fputs("usage: conformance-server [--page-size N] [--verbose] "
	      "[--http PORT [faults]]\n"
	      "An MCP server (stdio, or HTTP with --http) with the fixtures "
	      "of the MCP\nconformance suite; over HTTP each session has its "
	      "own state.\n"
	      "  --page-size N          paginate lists N items at a time "
	      "(default: none)\n"
	      "  --verbose              log every message on stderr\n",
	      f);
	fputs(fxh_usage, f);
}

static struct fxh_opts conf_http;

static int conf_parse_args(struct conf_server *s, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		int taken = fxh_parse_flag(&conf_http, argc, argv, &i);

		if (taken < 0)
			return -EINVAL;
		if (taken > 0)
			continue;
		if (strcmp(argv[i], "--verbose") == 0 ||
		    strcmp(argv[i], "-v") == 0) {
			s->verbose = true;
		} else if (strcmp(argv[i], "--page-size") == 0 &&
			   i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);

			if (*end != '\0' || v < 0 || v > CONF_MAX_PAGE_SIZE) {
				fprintf(stderr,
					"conformance-server: --page-size "
					"takes 0 to %d\n",
					CONF_MAX_PAGE_SIZE);
				return -EINVAL;
			}
			s->page_size = (size_t)v;
		} else if (strcmp(argv[i], "--help") == 0 ||
			   strcmp(argv[i], "-h") == 0) {
			conf_usage(stdout);
			exit(0);
		} else {
			conf_usage(stderr);
			return -EINVAL;
		}
	}
	return fxh_check_opts(&conf_http) < 0 ? -EINVAL : 0;
}

/* Catches a typo in the built-in JSON at start, not in the middle of a
 * test. */
static void conf_check_constants(void)
{
	size_t i;

	for (i = 0; i < CONF_NTOOLS; i++)
		json_decref(conf_parse_const(conf_tools[i].schema));
	for (i = 0; i < CONF_NPROMPTS; i++)
		json_decref(conf_parse_const(conf_prompts[i].arguments));
	conf_asks_check_constants();
}

static void conf_server_init(struct conf_server *s)
{
	s->phase = CONF_PHASE_NEW;
	snprintf(s->version, sizeof(s->version), "%s", CONF_LATEST);
	s->client_caps = json_object();
	s->log_level = CONF_LEVEL_INFO;
	s->subs = json_array();
}

static void conf_server_free(struct conf_server *s)
{
	struct conf_job *j;

	while ((j = s->jobs) != NULL) {
		s->jobs = j->next;
		conf_job_free(j);
	}
	json_decref(s->client_caps);
	json_decref(s->subs);
	free(s->in);
	free(s->out);
}

/* ---- over HTTP: one conf_server per session --------------------------- */

static struct conf_server *conf_http_sessions;
static const struct conf_server *conf_http_template;

static void *conf_http_open(struct fxh_session *hs)
{
	struct conf_server *s = conf_xcalloc(1, sizeof(*s));

	conf_server_init(s);
	s->page_size = conf_http_template->page_size;
	s->verbose = conf_http_template->verbose;
	s->hs = hs;
	s->http_next = conf_http_sessions;
	conf_http_sessions = s;
	return s;
}

static void conf_http_message(void *user, json_t *msg)
{
	struct conf_server *s = user;

	if (s->verbose) {
		char *text = conf_dump(msg);

		conf_log("<- %.300s", text);
		free(text);
	}
	conf_on_message(s, msg);
}

static void conf_http_close(void *user)
{
	struct conf_server **pp;

	for (pp = &conf_http_sessions; *pp != NULL; pp = &(*pp)->http_next) {
		if (*pp == user) {
			*pp = ((struct conf_server *)user)->http_next;
			break;
		}
	}
	conf_server_free(user);
	free(user);
}

static int conf_http_tick(void)
{
	int64_t now = conf_now_ms();
	int next = -1;

	for (struct conf_server *s = conf_http_sessions; s; s = s->http_next)
		conf_jobs_run(s, now);
	for (struct conf_server *s = conf_http_sessions; s; s = s->http_next) {
		int t = conf_jobs_timeout(s, conf_now_ms());

		if (t >= 0 && (next < 0 || t < next))
			next = t;
	}
	return next;
}

int main(int argc, char **argv)
{
	static const struct fxh_ops http_ops = {
		.open = conf_http_open,
		.message = conf_http_message,
		.close = conf_http_close,
		.tick = conf_http_tick,
	};
	struct conf_server srv = {0};
	struct conf_server *s = &srv;
	int rc = 0;

	signal(SIGPIPE, SIG_IGN);
	fxh_opts_init(&conf_http, "conformance-server");
	if (conf_parse_args(s, argc, argv) != 0)
		return 2;
	conf_check_constants();
	if (conf_http.on) {
		conf_http_template = s;
		conf_http.own_signals = true;
		return fxh_serve(&conf_http, &http_ops);
	}
	conf_server_init(s);
	conf_set_nonblock(STDIN_FILENO);
	s->out_nonblock = conf_set_nonblock(STDOUT_FILENO);

	while (!s->in_eof && !s->out_dead) {
		struct pollfd pfd[2];
		int64_t now = conf_now_ms();
		int nfds = 0, in_idx = -1, out_idx = -1, timeout;

		conf_jobs_run(s, now);
		if (s->out_dead)
			break;
		timeout = conf_jobs_timeout(s, conf_now_ms());
		if (s->out_len - s->out_off < CONF_MAX_OUTQ) {
			in_idx = nfds;
			pfd[nfds].fd = STDIN_FILENO;
			pfd[nfds++].events = POLLIN;
		}
		if (s->out_len > s->out_off) {
			out_idx = nfds;
			pfd[nfds].fd = STDOUT_FILENO;
			pfd[nfds++].events = POLLOUT;
		}
		if (poll(pfd, (nfds_t)nfds, timeout) < 0) {
			if (errno == EINTR)
				continue;
			conf_log("poll: %s", strerror(errno));
			rc = 1;
			break;
		}
		if (out_idx >= 0 && pfd[out_idx].revents != 0)
			conf_flush(s);
		if (in_idx >= 0 && pfd[in_idx].revents != 0)
			conf_read_input(s);
	}

	/* stdin closed: finish writing what is queued, then go. */
	if (s->out_nonblock && !s->out_dead) {
		int fl = fcntl(STDOUT_FILENO, F_GETFL);

		if (fl >= 0)
			fcntl(STDOUT_FILENO, F_SETFL, fl & ~O_NONBLOCK);
	}
	conf_flush(s);
	conf_server_free(s);
	return rc;
}
