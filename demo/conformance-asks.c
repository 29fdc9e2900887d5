/*
 * The conformance fixture's requests to its client in the middle of a call
 * (sampling, elicitation, roots), the 2025 way: a job sends one round of
 * requests, waits for every answer, then answers the call or asks again.
 * Also the tools and the prompt that ask. The 2026-07-28 suite calls some by
 * name through a gateway that turns each round into an input_required
 * result; their requests' ids are the names of the inputs that suite
 * expects (user_name, capital_question, ...), which a gateway uses as the
 * inputRequests keys.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* Requests in one round: the most any tool sends at once. */
#define CONF_MAX_ASKS 3

struct conf_ask {
	const char *name; /* the input's name, our request's id; NULL: a
			     number is */
	const char *method;
	json_t *params;
	json_t *out_id; /* our request's id; NULL until sent */
	json_t *result; /* the client's answer, once in: one of the two */
	json_t *error;
};

/* Called once every request of a round is answered (the answers are in
 * a->ask). Returns the call's result (a CallToolResult, or a
 * GetPromptResult for a prompt), or NULL after asking again with
 * conf_asks_add (which drops this round's answers: read them first), or
 * NULL with *fail set to why the call failed (malloc'd). */
typedef json_t *conf_round_fn(struct conf_server *s, struct conf_asks *a,
			      char **fail);

struct conf_asks {
	struct conf_ask ask[CONF_MAX_ASKS];
	size_t n;
	unsigned round; /* 1 for the first */
	bool asking;	/* the round in ask[] is this one (not answered) */
	bool sent;
	bool prompt; /* answers a prompts/get: failures are JSON-RPC errors */
	conf_round_fn *next;
	json_t *keep; /* what a tool keeps from one round to the next */
};

/* ---- the rounds ------------------------------------------------------- */

static void conf_ask_clear(struct conf_ask *k)
{
	json_decref(k->params);
	json_decref(k->out_id);
	json_decref(k->result);
	json_decref(k->error);
	memset(k, 0, sizeof(*k));
}

void conf_asks_free(struct conf_asks *a)
{
	size_t i;

	if (a == NULL)
		return;
	for (i = 0; i < a->n; i++)
		conf_ask_clear(&a->ask[i]);
	json_decref(a->keep);
	free(a);
}

/* Starts a job that asks the client; the first conf_asks_add names what. */
static struct conf_asks *conf_asks_start(struct conf_server *s, json_t *id,
					 json_t *token, bool prompt,
					 conf_round_fn *next)
{
	struct conf_job *j = conf_job_new(s, CONF_JOB_ASK, id, token);

	j->asks = conf_xcalloc(1, sizeof(*j->asks));
	j->asks->prompt = prompt;
	j->asks->next = next;
	return j->asks;
}

/* Adds a request to the round being built: the first call after a round
 * was answered starts the next one. name (a constant) becomes the
 * request's id; NULL gives it a number. Takes ownership of params. */
static void conf_asks_add(struct conf_asks *a, const char *name,
			  const char *method, json_t *params)
{
	struct conf_ask *k;
	size_t i;

	if (!a->asking) {
		for (i = 0; i < a->n; i++)
			conf_ask_clear(&a->ask[i]);
		a->n = 0;
		a->round++;
		a->asking = true;
		a->sent = false;
	}
	if (a->n == CONF_MAX_ASKS) {
		conf_log("more than %d requests in one round", CONF_MAX_ASKS);
		abort();
	}
	k = &a->ask[a->n++];
	k->name = name;
	k->method = method;
	k->params = params;
}

static bool conf_ask_waiting(const struct conf_ask *k)
{
	return k->out_id != NULL && k->result == NULL && k->error == NULL;
}

/* Whether one of our requests still waiting has this id. */
static bool conf_asks_id_taken(const struct conf_server *s, const char *id)
{
	const struct conf_job *j;
	size_t i;

	for (j = s->jobs; j != NULL; j = j->next) {
		for (i = 0; j->asks != NULL && i < j->asks->n; i++) {
			const struct conf_ask *k = &j->asks->ask[i];

			if (conf_ask_waiting(k) && json_is_string(k->out_id) &&
			    strcmp(json_string_value(k->out_id), id) == 0)
				return true;
		}
	}
	return false;
}

/* The input's name while no other request of ours waits under it (two
 * calls of one tool at once): then the name and a number. */
static json_t *conf_asks_new_id(struct conf_server *s, const char *name)
{
	if (name == NULL)
		return json_integer(++s->next_out_id);
	if (!conf_asks_id_taken(s, name))
		return json_string(name);
	return json_sprintf("%s-%lld", name, (long long)++s->next_out_id);
}

static void conf_asks_send(struct conf_server *s, struct conf_job *j,
			   int64_t now)
{
	struct conf_asks *a = j->asks;
	size_t i;

	for (i = 0; i < a->n; i++) {
		struct conf_ask *k = &a->ask[i];

		k->out_id = conf_asks_new_id(s, k->name);
		conf_send(s, conf_pack("{s:s,s:O,s:s,s:O}", "jsonrpc", "2.0",
				       "id", k->out_id, "method", k->method,
				       "params", k->params));
	}
	a->sent = true;
	j->wake_ms = now + CONF_ASK_TIMEOUT_MS;
}

static void conf_asks_fail(struct conf_server *s, struct conf_job *j,
			   const char *why)
{
	if (j->asks->prompt)
		conf_send_error(s, j->id, CONF_ERR_INTERNAL, "%s", why);
	else
		conf_send_result(s, j->id, conf_error_result("%s", why));
}

void conf_asks_cancel(struct conf_server *s, struct conf_job *j,
		      const char *reason)
{
	size_t i;

	for (i = 0; i < j->asks->n; i++) {
		struct conf_ask *k = &j->asks->ask[i];

		if (conf_ask_waiting(k))
			conf_notify(s, "notifications/cancelled",
				    conf_pack("{s:O,s:s}", "requestId",
					      k->out_id, "reason", reason));
	}
}

bool conf_asks_step(struct conf_server *s, struct conf_job *j, int64_t now)
{
	struct conf_asks *a = j->asks;
	const char *method = "the request";
	char *why;
	size_t i;

	if (!a->sent) {
		/* The lifecycle forbids our requests until the client says
		 * it is initialized. */
		if (s->phase != CONF_PHASE_READY) {
			j->wake_ms = -1;
			return false;
		}
		conf_asks_send(s, j, now);
		return false;
	}
	for (i = a->n; i > 0; i--) {
		if (conf_ask_waiting(&a->ask[i - 1]))
			method = a->ask[i - 1].method;
	}
	conf_asks_cancel(s, j, "timed out");
	why = conf_xasprintf("The client did not answer %s within %d ms",
			     method, CONF_ASK_TIMEOUT_MS);
	conf_asks_fail(s, j, why);
	free(why);
	return true;
}

/* Every request of j's round is answered: the call's result, or the next
 * round. True when j has answered. */
static bool conf_asks_round_done(struct conf_server *s, struct conf_job *j)
{
	struct conf_asks *a = j->asks;
	char *fail = NULL;
	json_t *result;

	a->asking = false;
	result = a->next(s, a, &fail);
	if (result != NULL) {
		conf_send_result(s, j->id, result);
		return true;
	}
	if (fail == NULL && !a->asking)
		fail = conf_xstrdup("The fixture asked nothing more and did "
				    "not answer (a bug)");
	if (fail != NULL) {
		conf_asks_fail(s, j, fail);
		free(fail);
		return true;
	}
	conf_asks_send(s, j, conf_now_ms());
	return false;
}

void conf_asks_answer(struct conf_server *s, json_t *msg)
{
	json_t *id = json_object_get(msg, "id");
	json_t *result = json_object_get(msg, "result");
	json_t *error = json_object_get(msg, "error");
	struct conf_ask *k = NULL;
	struct conf_job *j;
	bool done = true;
	size_t i;

	for (j = s->jobs; j != NULL; j = j->next) {
		for (i = 0; j->asks != NULL && i < j->asks->n; i++) {
			if (conf_ask_waiting(&j->asks->ask[i]) &&
			    json_equal(j->asks->ask[i].out_id, id)) {
				k = &j->asks->ask[i];
				break;
			}
		}
		if (k != NULL)
			break;
	}
	if (k == NULL) {
		char *text = conf_dump(id);

		conf_log("response to unknown request id %s ignored", text);
		free(text);
		return;
	}
	s->cause = j->id;
	if (!json_is_object(result) && !json_is_object(error)) {
		char *why = conf_xasprintf("The client answered %s with "
					   "neither result nor error",
					   k->method);

		/* Not a wait for its round-mates: the call is over. */
		k->error = json_object();
		conf_asks_cancel(s, j, "the call failed");
		conf_asks_fail(s, j, why);
		free(why);
	} else {
		if (json_is_object(result))
			k->result = json_incref(result);
		else
			k->error = json_incref(error);
		for (i = 0; i < j->asks->n; i++) {
			if (conf_ask_waiting(&j->asks->ask[i]))
				done = false;
		}
		if (done)
			done = conf_asks_round_done(s, j);
	}
	s->cause = NULL;
	if (done) {
		conf_job_unlink(s, j);
		conf_job_free(j);
	}
}

/* ---- what the answers say ---------------------------------------------- */

static json_t *conf_client_error(json_t *error, const char *what)
{
	const char *msg = conf_str(error, "message");

	return conf_error_result("%s failed: %s", what,
				 msg ? msg : "(no message)");
}

static json_t *conf_sampling_reply(json_t *result, json_t *error)
{
	json_t *content, *block;
	char *text = NULL, *out;
	json_t *r;
	size_t i;

	if (error != NULL)
		return conf_client_error(error, "Sampling");
	content = json_object_get(result, "content");
	if (json_is_object(content)) {
		if (conf_str(content, "text") != NULL)
			text = conf_xstrdup(conf_str(content, "text"));
	} else if (json_is_array(content)) {
		json_array_foreach(content, i, block)
		{
			const char *t = conf_str(block, "text");
			char *joined;

			if (t == NULL)
				continue;
			joined = conf_xasprintf("%s%s", text ? text : "", t);
			free(text);
			text = joined;
		}
	} else {
		return conf_error_result("Sampling result has no content");
	}
	out = conf_xasprintf("LLM response: %s",
			     text ? text : "(no text content)");
	r = conf_text_result(out);
	free(out);
	free(text);
	return r;
}

static json_t *conf_elicit_result(json_t *result, json_t *error,
				  const char *prefix)
{
	const char *action;
	json_t *content, *r;
	char *dump, *text;

	if (error != NULL)
		return conf_client_error(error, "Elicitation");
	action = conf_str(result, "action");
	if (action == NULL ||
	    (strcmp(action, "accept") != 0 && strcmp(action, "decline") != 0 &&
	     strcmp(action, "cancel") != 0))
		return conf_error_result("Elicitation result has no valid "
					 "action");
	content = json_object_get(result, "content");
	dump = content ? conf_dump(content) : conf_xstrdup("{}");
	text = conf_xasprintf("%s: action=%s, content=%s", prefix, action,
			      dump);
	r = conf_text_result(text);
	free(text);
	free(dump);
	return r;
}

static json_t *conf_roots_reply(json_t *result, json_t *error)
{
	json_t *roots, *root;
	char *text, *next;
	json_t *r;
	size_t i;

	if (error != NULL)
		return conf_client_error(error, "roots/list");
	roots = json_object_get(result, "roots");
	if (!json_is_array(roots))
		return conf_error_result(
			"roots/list result has no roots array");
	text = conf_xasprintf("Roots (%zu):", json_array_size(roots));
	json_array_foreach(roots, i, root)
	{
		const char *uri = conf_str(root, "uri");

		next = conf_xasprintf("%s %s", text, uri ? uri : "(no uri)");
		free(text);
		text = next;
	}
	r = conf_text_result(text);
	free(text);
	return r;
}

/* An accepted elicitation's string field, else NULL. */
static const char *conf_elicited(json_t *result, const char *field)
{
	const char *action = conf_str(result, "action");

	if (action == NULL || strcmp(action, "accept") != 0)
		return NULL;
	return conf_str(json_object_get(result, "content"), field);
}

static json_t *conf_greeting(json_t *result, json_t *error)
{
	const char *name = conf_elicited(result, "name");
	json_t *r;
	char *text;

	if (error != NULL || name == NULL)
		return conf_elicit_result(result, error, "No name given");
	text = conf_xasprintf("Hello, %s!", name);
	r = conf_text_result(text);
	free(text);
	return r;
}

/* Takes ownership of part: its blocks join all's, and an isError stays. */
static void conf_result_join(json_t *all, json_t *part)
{
	json_array_extend(json_object_get(all, "content"),
			  json_object_get(part, "content"));
	if (json_is_true(json_object_get(part, "isError")))
		json_object_set_new(all, "isError", json_true());
	json_decref(part);
}

/* ---- the 0.1.16 suite's tools ---------------------------------------- */

static json_t *conf_sampling_round(struct conf_server *s, struct conf_asks *a,
				   char **fail)
{
	return conf_sampling_reply(a->ask[0].result, a->ask[0].error);
}

void conf_tool_sampling(struct conf_server *s, json_t *id, json_t *args,
			json_t *token)
{
	const char *prompt = conf_str(args, "prompt");

	if (prompt == NULL) {
		conf_send_result(s, id,
				 conf_error_result("prompt (string) is "
						   "required"));
		return;
	}
	if (!conf_caps_has(s->client_caps, "sampling")) {
		conf_send_result(s, id,
				 conf_error_result("The client did not declare "
						   "the sampling capability"));
		return;
	}
	conf_asks_add(conf_asks_start(s, id, token, false, conf_sampling_round),
		      NULL, "sampling/createMessage",
		      conf_pack("{s:[{s:s,s:{s:s,s:s}}],s:i}", "messages",
				"role", "user", "content", "type", "text",
				"text", prompt, "maxTokens", 100));
}

static json_t *conf_elicit_round(struct conf_server *s, struct conf_asks *a,
				 char **fail)
{
	return conf_elicit_result(a->ask[0].result, a->ask[0].error,
				  "User response");
}

static json_t *conf_elicit_done_round(struct conf_server *s,
				      struct conf_asks *a, char **fail)
{
	return conf_elicit_result(a->ask[0].result, a->ask[0].error,
				  "Elicitation completed");
}

static const char conf_schema_contact[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"username\":{\"type\":\"string\",\"description\":\"User's "
	"response\"},"
	"\"email\":{\"type\":\"string\",\"description\":\"User's email "
	"address\"}},"
	"\"required\":[\"username\",\"email\"]}";

static const char conf_schema_defaults[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"name\":{\"type\":\"string\",\"description\":\"User name\","
	"\"default\":\"John Doe\"},"
	"\"age\":{\"type\":\"integer\",\"description\":\"User age\","
	"\"default\":30},"
	"\"score\":{\"type\":\"number\",\"description\":\"User score\","
	"\"default\":95.5},"
	"\"status\":{\"type\":\"string\",\"description\":\"User status\","
	"\"enum\":[\"active\",\"inactive\",\"pending\"],"
	"\"default\":\"active\"},"
	"\"verified\":{\"type\":\"boolean\",\"description\":\"Verification "
	"status\",\"default\":true}},"
	"\"required\":[]}";

static const char conf_schema_enums[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"untitledSingle\":{\"type\":\"string\",\"description\":\"Select one "
	"option\",\"enum\":[\"option1\",\"option2\",\"option3\"]},"
	"\"titledSingle\":{\"type\":\"string\",\"description\":\"Select one "
	"option with titles\",\"oneOf\":["
	"{\"const\":\"value1\",\"title\":\"First Option\"},"
	"{\"const\":\"value2\",\"title\":\"Second Option\"},"
	"{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
	"\"legacyEnum\":{\"type\":\"string\",\"description\":\"Select one "
	"option (legacy)\",\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
	"\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
	"\"untitledMulti\":{\"type\":\"array\",\"description\":\"Select "
	"multiple options\",\"minItems\":1,\"maxItems\":3,"
	"\"items\":{\"type\":\"string\","
	"\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
	"\"titledMulti\":{\"type\":\"array\",\"description\":\"Select "
	"multiple options with titles\",\"minItems\":1,\"maxItems\":3,"
	"\"items\":{\"anyOf\":["
	"{\"const\":\"value1\",\"title\":\"First Choice\"},"
	"{\"const\":\"value2\",\"title\":\"Second Choice\"},"
	"{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},"
	"\"required\":[]}";

/* One required field of a type, for the 2026-07-28 suite's inputs. */
#define CONF_SCHEMA_ONE(field, type)                                           \
	"{\"type\":\"object\",\"properties\":{\"" field "\":{\"type\":\"" type \
	"\"}},\"required\":[\"" field "\"]}"

static const char *const conf_schemas[] = {
	conf_schema_contact,
	conf_schema_defaults,
	conf_schema_enums,
	CONF_SCHEMA_ONE("name", "string"),
	CONF_SCHEMA_ONE("ok", "boolean"),
	CONF_SCHEMA_ONE("color", "string"),
	CONF_SCHEMA_ONE("context", "string"),
};

void conf_asks_check_constants(void)
{
	size_t i;

	for (i = 0; i < sizeof(conf_schemas) / sizeof(conf_schemas[0]); i++)
		json_decref(conf_parse_const(conf_schemas[i]));
}

/* An elicitation/create form's params. */
static json_t *conf_form(const struct conf_server *s, const char *message,
			 const char *schema)
{
	json_t *params = conf_pack("{s:s,s:o}", "message", message,
				   "requestedSchema", conf_parse_const(schema));

	/* mode arrived with 2025-11-25; older clients must not see it. */
	if (conf_version_at_least(s, "2025-11-25"))
		json_object_set_new(params, "mode", json_string("form"));
	return params;
}

/* Shared by the elicitation tools: checks the client can take a form. */
static void conf_elicit(struct conf_server *s, json_t *id, json_t *token,
			const char *message, const char *schema,
			conf_round_fn *reply)
{
	if (!conf_caps_has_form(s->client_caps)) {
		conf_send_result(s, id,
				 conf_error_result("The client did not declare "
						   "form elicitation"));
		return;
	}
	conf_asks_add(conf_asks_start(s, id, token, false, reply), NULL,
		      "elicitation/create", conf_form(s, message, schema));
}

void conf_tool_elicitation(struct conf_server *s, json_t *id, json_t *args,
			   json_t *token)
{
	const char *message = conf_str(args, "message");

	if (message == NULL) {
		conf_send_result(s, id,
				 conf_error_result("message (string) is "
						   "required"));
		return;
	}
	conf_elicit(s, id, token, message, conf_schema_contact,
		    conf_elicit_round);
}

void conf_tool_elicit_defaults(struct conf_server *s, json_t *id, json_t *args,
			       json_t *token)
{
	conf_elicit(s, id, token,
		    "Please review and update the form fields with defaults",
		    conf_schema_defaults, conf_elicit_done_round);
}

void conf_tool_elicit_enums(struct conf_server *s, json_t *id, json_t *args,
			    json_t *token)
{
	conf_elicit(s, id, token, "Please select options from the enum fields",
		    conf_schema_enums, conf_elicit_done_round);
}

static json_t *conf_roots_round(struct conf_server *s, struct conf_asks *a,
				char **fail)
{
	return conf_roots_reply(a->ask[0].result, a->ask[0].error);
}

void conf_tool_roots(struct conf_server *s, json_t *id, json_t *args,
		     json_t *token)
{
	if (!conf_caps_has(s->client_caps, "roots")) {
		conf_send_result(s, id,
				 conf_error_result("The client did not declare "
						   "the roots capability"));
		return;
	}
	conf_asks_add(conf_asks_start(s, id, token, false, conf_roots_round),
		      NULL, "roots/list", json_object());
}

/* ---- the 2026-07-28 suite's tools and prompt ----------------------------
 *
 * Each asks under the input names the suite asserts or answers by (its
 * everything-server's), and only what the client declared: in this
 * request's _meta when a gateway forwards a 2026-07-28 client's there,
 * else at initialize. */

#define CONF_META_CAPS "io.modelcontextprotocol/clientCapabilities"

static json_t *conf_request_caps(const struct conf_server *s)
{
	json_t *caps = json_object_get(s->request_meta, CONF_META_CAPS);

	return json_is_object(caps) ? caps : s->client_caps;
}

/* Whether this request's client can answer method; elicitation needs form
 * mode and a revision that has it. */
static bool conf_can_ask(const struct conf_server *s, const char *method)
{
	json_t *caps = conf_request_caps(s);

	if (strcmp(method, "elicitation/create") == 0)
		return conf_version_at_least(s, "2025-06-18") &&
		       conf_caps_has_form(caps);
	if (strcmp(method, "sampling/createMessage") == 0)
		return conf_caps_has(caps, "sampling");
	return conf_caps_has(caps, "roots");
}

/* Answers id with isError and returns false when the client cannot
 * answer method. */
static bool conf_check_can_ask(struct conf_server *s, json_t *id,
			       const char *method)
{
	if (conf_can_ask(s, method))
		return true;
	conf_send_result(s, id,
			 conf_error_result("The client did not declare what "
					   "%s needs",
					   method));
	return false;
}

static json_t *conf_sampling_ask(const char *text, int max_tokens)
{
	return conf_pack("{s:[{s:s,s:{s:s,s:s}}],s:i}", "messages", "role",
			 "user", "content", "type", "text", "text", text,
			 "maxTokens", max_tokens);
}

/* Whatever this round asked, each answer as the tool of its kind says it,
 * in one result. */
static json_t *conf_each_round(struct conf_server *s, struct conf_asks *a,
			       char **fail)
{
	json_t *all = conf_pack("{s:[]}", "content");
	size_t i;

	for (i = 0; i < a->n; i++) {
		struct conf_ask *k = &a->ask[i];

		if (strcmp(k->method, "elicitation/create") == 0)
			conf_result_join(all,
					 conf_greeting(k->result, k->error));
		else if (strcmp(k->method, "sampling/createMessage") == 0)
			conf_result_join(
				all, conf_sampling_reply(k->result, k->error));
		else
			conf_result_join(all,
					 conf_roots_reply(k->result, k->error));
	}
	return all;
}

static void conf_ask_one(struct conf_server *s, json_t *id, json_t *token,
			 const char *name, const char *method, json_t *params)
{
	if (!conf_check_can_ask(s, id, method)) {
		json_decref(params);
		return;
	}
	conf_asks_add(conf_asks_start(s, id, token, false, conf_each_round),
		      name, method, params);
}

void conf_tool_ir_elicitation(struct conf_server *s, json_t *id, json_t *args,
			      json_t *token)
{
	conf_ask_one(s, id, token, "user_name", "elicitation/create",
		     conf_form(s, "What is your name?",
			       CONF_SCHEMA_ONE("name", "string")));
}

void conf_tool_ir_sampling(struct conf_server *s, json_t *id, json_t *args,
			   json_t *token)
{
	conf_ask_one(s, id, token, "capital_question", "sampling/createMessage",
		     conf_sampling_ask("What is the capital of France?", 100));
}

void conf_tool_ir_roots(struct conf_server *s, json_t *id, json_t *args,
			json_t *token)
{
	conf_ask_one(s, id, token, "client_roots", "roots/list", json_object());
}

static json_t *conf_confirm_round(struct conf_server *s, struct conf_asks *a,
				  char **fail)
{
	return conf_elicit_result(a->ask[0].result, a->ask[0].error,
				  "state-ok");
}

static void conf_confirm(struct conf_server *s, json_t *id, json_t *token)
{
	if (!conf_check_can_ask(s, id, "elicitation/create"))
		return;
	conf_asks_add(conf_asks_start(s, id, token, false, conf_confirm_round),
		      "confirm", "elicitation/create",
		      conf_form(s, "Please confirm",
				CONF_SCHEMA_ONE("ok", "boolean")));
}

void conf_tool_ir_request_state(struct conf_server *s, json_t *id, json_t *args,
				json_t *token)
{
	conf_confirm(s, id, token);
}

void conf_tool_ir_tampered(struct conf_server *s, json_t *id, json_t *args,
			   json_t *token)
{
	conf_confirm(s, id, token);
}

void conf_tool_ir_multiple(struct conf_server *s, json_t *id, json_t *args,
			   json_t *token)
{
	struct conf_asks *a;

	if (!conf_check_can_ask(s, id, "elicitation/create") ||
	    !conf_check_can_ask(s, id, "sampling/createMessage") ||
	    !conf_check_can_ask(s, id, "roots/list"))
		return;
	a = conf_asks_start(s, id, token, false, conf_each_round);
	conf_asks_add(a, "user_name", "elicitation/create",
		      conf_form(s, "What is your name?",
				CONF_SCHEMA_ONE("name", "string")));
	conf_asks_add(a, "greeting", "sampling/createMessage",
		      conf_sampling_ask("Generate a greeting", 50));
	conf_asks_add(a, "client_roots", "roots/list", json_object());
}

/* Round 1 asked a name (step1), round 2 a colour (step2). */
static json_t *conf_two_steps_round(struct conf_server *s, struct conf_asks *a,
				    char **fail)
{
	struct conf_ask *k = &a->ask[0];
	const char *name, *color;
	json_t *r;
	char *text;

	if (a->round == 1) {
		name = conf_elicited(k->result, "name");
		if (name == NULL)
			return conf_elicit_result(k->result, k->error,
						  "No name given");
		a->keep = json_string(name);
		conf_asks_add(a, "step2", "elicitation/create",
			      conf_form(s,
					"Step 2: What is your favorite "
					"color?",
					CONF_SCHEMA_ONE("color", "string")));
		return NULL;
	}
	color = conf_elicited(k->result, "color");
	if (color == NULL)
		return conf_elicit_result(k->result, k->error,
					  "No colour given");
	text = conf_xasprintf("%s likes %s.", json_string_value(a->keep),
			      color);
	r = conf_text_result(text);
	free(text);
	return r;
}

void conf_tool_ir_multi_round(struct conf_server *s, json_t *id, json_t *args,
			      json_t *token)
{
	if (!conf_check_can_ask(s, id, "elicitation/create"))
		return;
	conf_asks_add(
		conf_asks_start(s, id, token, false, conf_two_steps_round),
		"step1", "elicitation/create",
		conf_form(s, "Step 1: What is your name?",
			  CONF_SCHEMA_ONE("name", "string")));
}

void conf_tool_ir_capabilities(struct conf_server *s, json_t *id, json_t *args,
			       json_t *token)
{
	struct conf_asks *a = NULL;

	if (conf_can_ask(s, "elicitation/create")) {
		a = conf_asks_start(s, id, token, false, conf_each_round);
		conf_asks_add(a, "user_name", "elicitation/create",
			      conf_form(s, "What is your name?",
					CONF_SCHEMA_ONE("name", "string")));
	}
	if (conf_can_ask(s, "sampling/createMessage")) {
		if (a == NULL)
			a = conf_asks_start(s, id, token, false,
					    conf_each_round);
		conf_asks_add(a, "capital_question", "sampling/createMessage",
			      conf_sampling_ask("What is the capital of "
						"France?",
						100));
	}
	if (conf_can_ask(s, "roots/list")) {
		if (a == NULL)
			a = conf_asks_start(s, id, token, false,
					    conf_each_round);
		conf_asks_add(a, "client_roots", "roots/list", json_object());
	}
	if (a == NULL)
		conf_send_result(s, id,
				 conf_text_result("The client declared none of "
						  "elicitation, sampling and "
						  "roots: nothing to ask"));
}

/* Asks even a client that did not declare sampling: what a gateway does
 * then (a -32021 for a 2026-07-28 client) is what is tested. */
void conf_tool_missing_capability(struct conf_server *s, json_t *id,
				  json_t *args, json_t *token)
{
	conf_asks_add(conf_asks_start(s, id, token, false, conf_each_round),
		      "capital_question", "sampling/createMessage",
		      conf_sampling_ask("What is the capital of France?", 100));
}

/* Its own input name: the suite never answers this one, so through a
 * gateway the call waits for a retry that never comes, and would hold
 * user_name (the next scenario's asserted key) while it waits. */
void conf_tool_streaming_elicitation(struct conf_server *s, json_t *id,
				     json_t *args, json_t *token)
{
	conf_ask_one(s, id, token, "streaming_name", "elicitation/create",
		     conf_form(s, "What is your name?",
			       CONF_SCHEMA_ONE("name", "string")));
}

static json_t *conf_prompt_round(struct conf_server *s, struct conf_asks *a,
				 char **fail)
{
	struct conf_ask *k = &a->ask[0];
	const char *context = conf_elicited(k->result, "context");
	const char *msg = conf_str(k->error, "message");
	json_t *r;
	char *text;

	if (k->error != NULL) {
		*fail = conf_xasprintf("Elicitation failed: %s",
				       msg ? msg : "(no message)");
		return NULL;
	}
	if (context != NULL)
		text = conf_xasprintf("Write with this context: %s", context);
	else
		text = conf_xasprintf("Write without a context (action=%s).",
				      conf_str(k->result, "action")
					      ? conf_str(k->result, "action")
					      : "none");
	r = conf_pack("{s:O,s:[{s:s,s:o}]}", "description", a->keep, "messages",
		      "role", "user", "content", conf_text_block(text));
	free(text);
	return r;
}

void conf_prompt_ir(struct conf_server *s, json_t *id, const char *description)
{
	struct conf_asks *a;

	if (!conf_can_ask(s, "elicitation/create")) {
		conf_send_error(s, id, CONF_ERR_INTERNAL,
				"The client did not declare what "
				"elicitation/create needs");
		return;
	}
	a = conf_asks_start(s, id, NULL, true, conf_prompt_round);
	a->keep = json_string(description);
	conf_asks_add(a, "user_context", "elicitation/create",
		      conf_form(s, "What context should the prompt use?",
				CONF_SCHEMA_ONE("context", "string")));
}
