/*
 * Minimal stdio MCP server for make bench: one tool, `echo`, that returns its
 * text (with `--tools N`, N tools in all: N - 1 others listed before it, as
 * real servers have 20-150, so that the cost of finding a tool by name
 * shows). Reads stdin in large chunks, answers every complete line of a chunk,
 * and writes all the answers of a chunk with one write; tools/call takes a
 * scanning fast path, so that the server costs as little as possible on every
 * path the bench compares.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ECHO_READ_CHUNK 65536
#define ECHO_MAX_LINE (4 * 1024 * 1024)
#define ECHO_LATEST_VERSION "2025-11-25"
/* More than any real server lists. */
#define ECHO_MAX_TOOLS 10000

/* How many tools tools/list gives (--tools); echo is the last. */
static long echo_ntools = 1;

struct echo_buf {
	char *p;
	size_t len;
	size_t cap;
};

static const char *const echo_versions[] = {"2025-11-25", "2025-06-18",
					    "2025-03-26", "2024-11-05", NULL};

static void echo_buf_reserve(struct echo_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : ECHO_READ_CHUNK;

	if (b->len + more <= b->cap)
		return;
	while (cap < b->len + more)
		cap *= 2;
	b->p = realloc(b->p, cap);
	if (b->p == NULL) {
		fputs("echo-server: out of memory\n", stderr);
		exit(1);
	}
	b->cap = cap;
}

static void echo_emit(struct echo_buf *out, json_t *msg)
{
	size_t n = json_dumpb(msg, NULL, 0, JSON_COMPACT);

	echo_buf_reserve(out, n + 1);
	json_dumpb(msg, out->p + out->len, n, JSON_COMPACT);
	out->len += n;
	out->p[out->len++] = '\n';
	json_decref(msg);
}

/* Takes ownership of result. */
static void echo_reply(struct echo_buf *out, json_t *id, json_t *result)
{
	echo_emit(out, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id,
				 "result", result));
}

static void echo_error(struct echo_buf *out, json_t *id, int code,
		       const char *text)
{
	echo_emit(out, json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0",
				 "id", id ? id : json_null(), "error", "code",
				 code, "message", text));
}

/* The fast path scans a message without building a tree: a span of the raw
 * line for each member that matters. */
struct echo_span {
	const char *p;
	size_t n;
};

static const char *echo_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *echo_str_end(const char *p, const char *e)
{
	for (p++; p < e; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
		else if ((unsigned char)*p < 0x20)
			return NULL;
	}
	return NULL;
}

static const char *echo_skip(const char *p, const char *e)
{
	const char *s;
	int depth = 0;

	if (p >= e)
		return NULL;
	if (*p == '"')
		return echo_str_end(p, e);
	if (*p == '{' || *p == '[') {
		while (p < e) {
			if (*p == '"') {
				p = echo_str_end(p, e);
				if (p == NULL)
					return NULL;
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if ((*p == '}' || *p == ']') && --depth == 0)
				return p + 1;
			p++;
		}
		return NULL;
	}
	for (s = p;
	     p < e &&
	     (*p == '-' || *p == '+' || *p == '.' || (*p >= '0' && *p <= '9') ||
	      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'));
	     p++)
		;
	return p > s ? p : NULL;
}

/* Finds the members named in keys (plain ASCII names) of the object at
 * [p, e); returns 0, or -1 if it is not an object of this simple shape. */
static int echo_members(const char *p, const char *e, const char *const *keys,
			struct echo_span *vals, int nkeys)
{
	memset(vals, 0, sizeof(*vals) * (size_t)nkeys);
	p = echo_ws(p, e);
	if (p >= e || *p != '{')
		return -1;
	p = echo_ws(p + 1, e);
	if (p < e && *p == '}')
		return 0;
	for (;;) {
		const char *k, *ke, *v, *ve;

		if (p >= e || *p != '"')
			return -1;
		k = p + 1;
		ke = echo_str_end(p, e);
		if (ke == NULL || memchr(k, '\\', (size_t)(ke - k)))
			return -1;
		p = echo_ws(ke, e);
		if (p >= e || *p != ':')
			return -1;
		v = echo_ws(p + 1, e);
		ve = echo_skip(v, e);
		if (ve == NULL)
			return -1;
		for (int i = 0; i < nkeys; i++)
			if ((size_t)(ke - 1 - k) == strlen(keys[i]) &&
			    memcmp(k, keys[i], (size_t)(ke - 1 - k)) == 0) {
				if (vals[i].p)
					return -1; /* duplicate member */
				vals[i].p = v;
				vals[i].n = (size_t)(ve - v);
			}
		p = echo_ws(ve, e);
		if (p < e && *p == ',') {
			p = echo_ws(p + 1, e);
			continue;
		}
		if (p < e && *p == '}')
			return echo_ws(p + 1, e) == e ? 0 : -1;
		return -1;
	}
}

static int echo_span_is(struct echo_span v, const char *lit)
{
	return v.n == strlen(lit) && memcmp(v.p, lit, v.n) == 0;
}

/* Answers a plain `tools/call echo` straight from the raw line; returns -1
 * to leave anything else (or anything odd) to the full parser. */
static int echo_fast_call(struct echo_buf *out, const char *line, size_t len)
{
	static const char *const top[] = {"jsonrpc", "id", "method", "params"};
	static const char *const par[] = {"name", "arguments", "_meta"};
	static const char *const arg[] = {"text"};
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	static const char mid[] =
		",\"result\":{\"content\":[{\"type\":\"text\",\"text\":";
	static const char tail[] = "}]}}\n";
	struct echo_span t[4], pa[3], a[1];
	const char *e = line + len;

	if (echo_members(line, e, top, t, 4) < 0 || t[1].p == NULL ||
	    !echo_span_is(t[0], "\"2.0\"") ||
	    !echo_span_is(t[2], "\"tools/call\"") ||
	    (t[1].p[0] != '"' && t[1].p[0] != '-' &&
	     (t[1].p[0] < '0' || t[1].p[0] > '9')) ||
	    t[3].p == NULL ||
	    echo_members(t[3].p, t[3].p + t[3].n, par, pa, 3) < 0 ||
	    !echo_span_is(pa[0], "\"echo\"") || pa[1].p == NULL ||
	    echo_members(pa[1].p, pa[1].p + pa[1].n, arg, a, 1) < 0 ||
	    a[0].p == NULL || a[0].p[0] != '"')
		return -1;
	echo_buf_reserve(out, sizeof(head) + sizeof(mid) + sizeof(tail) +
				      t[1].n + a[0].n);
	memcpy(out->p + out->len, head, sizeof(head) - 1);
	out->len += sizeof(head) - 1;
	memcpy(out->p + out->len, t[1].p, t[1].n);
	out->len += t[1].n;
	memcpy(out->p + out->len, mid, sizeof(mid) - 1);
	out->len += sizeof(mid) - 1;
	memcpy(out->p + out->len, a[0].p, a[0].n);
	out->len += a[0].n;
	memcpy(out->p + out->len, tail, sizeof(tail) - 1);
	out->len += sizeof(tail) - 1;
	return 0;
}

static json_t *echo_initialize(json_t *params)
{
	const char *want =
		json_string_value(json_object_get(params, "protocolVersion"));
	const char *ver = ECHO_LATEST_VERSION;

	for (int i = 0; want && echo_versions[i]; i++)
		if (strcmp(want, echo_versions[i]) == 0)
			ver = echo_versions[i];
	return json_pack("{s:s,s:{s:{}},s:{s:s,s:s}}", "protocolVersion", ver,
			 "capabilities", "tools", "serverInfo", "name",
			 "bench-echo", "version", "1.0.0");
}

static json_t *echo_tools(void)
{
	json_t *tools = json_array();

	/* The others first: the one called is found last in a walk. */
	for (long i = 1; i < echo_ntools; i++) {
		char name[32];

		snprintf(name, sizeof name, "other_tool_%04ld", i);
		json_array_append_new(tools,
				      json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s}}}}",
						"name", name, "description",
						"A tool the bench never calls.",
						"inputSchema", "type", "object",
						"properties", "value", "type",
						"string"));
	}
	json_array_append_new(
		tools,
		json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s}},s:[s]}}", "name", "echo",
			  "description", "Return the given text unchanged.",
			  "inputSchema", "type", "object", "properties", "text",
			  "type", "string", "required", "text"));
	return json_pack("{s:o}", "tools", tools);
}

static void echo_call(struct echo_buf *out, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *text =
		json_object_get(json_object_get(params, "arguments"), "text");

	if (name == NULL || strcmp(name, "echo") != 0) {
		echo_error(out, id, -32602, "unknown tool");
		return;
	}
	if (!json_is_string(text)) {
		echo_error(out, id, -32602, "echo needs a string `text`");
		return;
	}
	echo_reply(out, id,
		   json_pack("{s:[{s:s,s:O}]}", "content", "type", "text",
			     "text", text));
}

static void echo_handle_line(struct echo_buf *out, const char *line, size_t len)
{
	json_error_t err;
	json_t *msg, *id;
	const char *method;

	if (echo_fast_call(out, line, len) == 0)
		return;
	msg = json_loadb(line, len, 0, &err);

	if (msg == NULL) {
		echo_error(out, NULL, -32700, "parse error");
		return;
	}
	id = json_object_get(msg, "id");
	method = json_string_value(json_object_get(msg, "method"));
	if (method == NULL) {
		/* Answers to requests we never send, or junk: stay quiet. */
		if (id == NULL && json_is_object(msg))
			goto done;
		if (json_object_get(msg, "result") == NULL &&
		    json_object_get(msg, "error") == NULL)
			echo_error(out, id, -32600, "invalid request");
		goto done;
	}
	if (id == NULL)
		goto done; /* notifications need no answer */
	if (strcmp(method, "tools/call") == 0)
		echo_call(out, id, json_object_get(msg, "params"));
	else if (strcmp(method, "initialize") == 0)
		echo_reply(out, id,
			   echo_initialize(json_object_get(msg, "params")));
	else if (strcmp(method, "tools/list") == 0)
		echo_reply(out, id, echo_tools());
	else if (strcmp(method, "ping") == 0)
		echo_reply(out, id, json_object());
	else
		echo_error(out, id, -32601, "method not found");
done:
	json_decref(msg);
}

static int echo_flush(struct echo_buf *out)
{
	size_t off = 0;

	while (off < out->len) {
		ssize_t n = write(1, out->p + off, out->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	out->len = 0;
	return 0;
}

int main(int argc, char **argv)
{
	struct echo_buf in = {0}, out = {0};
	size_t scan = 0;

	if (argc == 3 && strcmp(argv[1], "--tools") == 0) {
		char *end;

		echo_ntools = strtol(argv[2], &end, 10);
		if (*end != '\0' || echo_ntools < 1 ||
		    echo_ntools > ECHO_MAX_TOOLS) {
			fprintf(stderr, "echo-server: --tools takes 1 to %d\n",
				ECHO_MAX_TOOLS);
			return 2;
		}
	} else if (argc != 1) {
		fputs("usage: echo-server [--tools N]\n", stderr);
		return 2;
	}

	for (;;) {
		size_t start = 0;
		ssize_t n;
		char *nl;

		echo_buf_reserve(&in, ECHO_READ_CHUNK);
		n = read(0, in.p + in.len, in.cap - in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		in.len += (size_t)n;
		while ((nl = memchr(in.p + scan, '\n', in.len - scan))) {
			size_t end = (size_t)(nl - in.p);

			if (end > start)
				echo_handle_line(&out, in.p + start,
						 end - start);
			start = end + 1;
			scan = start;
		}
		memmove(in.p, in.p + start, in.len - start);
		in.len -= start;
		scan = in.len;
		if (in.len > ECHO_MAX_LINE) {
			fputs("echo-server: line too long\n", stderr);
			return 1;
		}
		if (out.len > 0 && echo_flush(&out) < 0)
			return 1;
	}
	free(in.p);
	free(out.p);
	return 0;
}
