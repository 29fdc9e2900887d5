/*
 * libFuzzer harness for the JSONC reader and its text edits
 * (src/config/jsonc.c, jsonc_edit.c) and for setup's plan made on a
 * host file's text (src/config/hosts_edit.c). Beyond the sanitizers:
 *
 * - strict mode is jansson: what one reads the other reads alike (but
 *   for nesting past JSONC_MAX_DEPTH and a raw NUL, which jansson skips
 *   between tokens);
 * - JSONC is JSON once its comments and trailing commas are blanked out,
 *   by a lexer of the harness's own;
 * - every node's span lies in the text, in order, and reads back as its
 *   value; a comma recorded is a ',';
 * - edits (members dropped, set, added at the root and one level down)
 *   give a text that reads back as the same edits made on jansson's copy,
 *   plain JSON staying plain;
 * - setup's plan on the text as a VS Code or Cursor file succeeds
 *   whenever the plan does, keeps the bytes before and after the servers'
 *   object and each entry that stays; as mcpvisor's config too.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"
#include "config/jsonc.h"
#include "config/jsonc_edit.h"
#include "config/secrets.h"

#define FZ_MCPV "/fuzz/mcpvisor/mcp.json"

static void fz_fail(const char *what, const char *s, size_t len)
{
	fprintf(stderr, "fuzz_jsonc: FAIL: %s\ntext: %.*s\n", what,
		(int)(len > 2000 ? 2000 : len), s);
	abort();
}

static struct jsonc *fz_parse(const char *s, size_t len, int flags)
{
	struct jsonc *j = NULL;
	struct jsonc_error e;
	if (jsonc_parse(s, len, flags, &j, &e) < 0) {
		if (e.line < 1 || e.column < 1 || e.offset > len ||
		    e.text[0] == '\0')
			fz_fail("an error without its place or reason", s, len);
		return NULL;
	}
	return j;
}

/* Containers' nesting as the reader counts it (the root is 1). */
static int fz_depth(const json_t *v)
{
	int d = 0;
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
		{
			int e = fz_depth(x);
			d = e > d ? e : d;
		}
		return d + 1;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			int e = fz_depth(x);
			d = e > d ? e : d;
		}
		return d + 1;
	}
	return 0;
}

/* s with comments and trailing commas blanked out, a BOM dropped, as
 * plain JSON; NULL when a comment is not closed. Its own lexer: strings,
 * comments, and a comma that follows a value and comes before a closer. */
static char *fz_strip(const char *s, size_t len, size_t *olen)
{
	char *o = malloc(len + 1);
	memcpy(o, s, len);
	size_t i = 0;
	if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
		memset(o, ' ', 3);
		i = 3;
	}
	char prev = '[';	   /* the last significant byte */
	size_t comma = (size_t)-1; /* a comma that may be trailing */
	while (i < len) {
		char c = s[i];
		if (c == '"') {
			for (i++; i < len && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			i++;
			prev = '"';
			comma = (size_t)-1;
			continue;
		}
		if (c == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] != '\n' && s[i] != '\r')
				o[i++] = ' ';
			continue;
		}
		if (c == '/' && i + 1 < len && s[i + 1] == '*') {
			const char *end =
				memmem(s + i + 2, len - i - 2, "*/", 2);
			if (end == NULL) {
				free(o);
				return NULL;
			}
			size_t stop = (size_t)(end - s) + 2;
			while (i < stop)
				o[i++] = ' ';
			continue;
		}
		if (strchr(" \t\r\n", c)) {
			i++;
			continue;
		}
		if ((c == '}' || c == ']') && comma != (size_t)-1)
			o[comma] = ' ';
		comma = (size_t)-1;
		if (c == ',' && !strchr("[{,:", prev))
			comma = i;
		prev = c;
		i++;
	}
	o[len] = '\0';
	*olen = len;
	return o;
}

/* Each node's span: inside the text and its parent, in order, and read
 * back (as JSONC) its value. */
static void fz_check_spans(const char *s, size_t len,
			   const struct jsonc_node *n, int *budget)
{
	if (n->start > n->end || n->end > len || n->name_start > n->start)
		fz_fail("a span outside the text", s, len);
	if (n->comma != JSONC_NONE && (n->comma < n->end || s[n->comma] != ','))
		fz_fail("a comma that is none", s, len);
	if (n->name && s[n->name_start] != '"')
		fz_fail("a member's name does not start at a quote", s, len);
	if ((*budget)-- > 0) {
		struct jsonc *j = fz_parse(s + n->start, n->end - n->start, 0);
		if (j == NULL || !json_equal(jsonc_root(j)->value, n->value))
			fz_fail("a span does not read back as its value", s,
				len);
		jsonc_free(j);
	}
	size_t at = n->start;
	for (size_t i = 0; i < n->nkids; i++) {
		const struct jsonc_node *k = n->kids[i];
		if (k->parent != n || k->name_start < at || k->end > n->end)
			fz_fail("a member out of order or outside its parent",
				s, len);
		at = k->comma != JSONC_NONE ? k->comma + 1 : k->end;
		fz_check_spans(s, len, k, budget);
	}
}

/* Drops members whose name starts with 'd', sets those with 's', renames
 * and sets those with 'r', adds one, in obj; does the same to model. */
static void fz_edit_object(struct jsonc_edit *e, const struct jsonc_node *obj,
			   json_t *model, const json_t *v)
{
	for (size_t i = 0; i < obj->nkids; i++) {
		const struct jsonc_node *k = obj->kids[i];
		if (k->name[0] == 'd') {
			jsonc_edit_drop(e, k);
			json_object_del(model, k->name);
		} else if (k->name[0] == 's') {
			jsonc_edit_set(e, k, NULL, v);
			json_object_set(model, k->name, (json_t *)v);
		} else if (k->name[0] == 'r' && strlen(k->name) < 64) {
			char to[80];
			snprintf(to, sizeof to, "fz-%s", k->name);
			if (json_object_get(model, to))
				continue;
			jsonc_edit_set(e, k, to, v);
			json_object_del(model, k->name);
			json_object_set(model, to, (json_t *)v);
		}
	}
	if (json_object_get(model, "fz-added") == NULL) {
		jsonc_edit_add(e, obj, "fz-added", v);
		json_object_set(model, "fz-added", (json_t *)v);
	}
}

static void fz_check_edits(const char *s, size_t len, const struct jsonc *j,
			   bool strict)
{
	const struct jsonc_node *root = jsonc_root(j);
	if (!json_is_object(root->value))
		return;
	json_t *model = json_deep_copy(root->value);
	json_t *v = json_pack("{s:[s,i],s:{}}", "k", "x\"\\/é", 1, "o");
	struct jsonc_edit *e = jsonc_edit_new(j);
	/* One level down too: the first object member that stays. */
	for (size_t i = 0; i < root->nkids; i++) {
		const struct jsonc_node *k = root->kids[i];
		if (json_is_object(k->value) && !strchr("dsr", k->name[0])) {
			fz_edit_object(e, k, json_object_get(model, k->name),
				       v);
			break;
		}
	}
	fz_edit_object(e, root, model, v);
	char *out = NULL;
	size_t olen = 0;
	if (jsonc_edit_finish(e, &out, &olen) < 0)
		fz_fail("edits of separate members overlap", s, len);
	struct jsonc *back = fz_parse(out, olen, strict ? JSONC_STRICT : 0);
	if (back == NULL || !json_equal(jsonc_root(back)->value, model)) {
		fprintf(stderr, "edited: %.*s\n", (int)olen, out);
		fz_fail("the edited text is not the edited model", s, len);
	}
	jsonc_free(back);
	free(out);
	json_decref(model);
	json_decref(v);
}

/* setup's plan for host on the text: when it plans, the text edit
 * succeeds and keeps what is not the moved entries' byte for byte. */
static void fz_check_host(const char *s, size_t len, const struct jsonc *j,
			  const char *hostname)
{
	const struct host_info *h = hosts_find(hostname);
	const struct jsonc_node *root = jsonc_root(j);
	json_t *relay = hosts_relay_entry(h, "mcpvisor", "/fuzz/home");
	json_t *mine = json_pack("{s:{s:{s:s}}}", "mcpServers", "same",
				 "command", "/bin/same");
	struct hosts_plan p;
	char *err = NULL, *out = NULL;
	if (hosts_plan(h, root->value, mine, relay, FZ_MCPV, &p, &err) < 0) {
		free(err);
		goto out;
	}
	if (hosts_edit_host(h, &p, j, &out, &err) < 0) {
		fprintf(stderr, "fuzz_jsonc: %s: %s\n", hostname, err);
		fz_fail("setup's text edit failed where its plan did not", s,
			len);
	}
	const struct jsonc_node *srv = jsonc_member(root, h->servers_key);
	size_t olen = strlen(out);
	if (srv) {
		size_t tail = len - srv->end;
		if (olen < srv->start + 1 + tail ||
		    memcmp(out, s, srv->start + 1) != 0 ||
		    memcmp(out + olen - tail, s + srv->end, tail) != 0)
			fz_fail("setup changed bytes outside the servers", s,
				len);
	}
	const char *at = out;
	for (size_t i = 0; srv && i < srv->nkids; i++) {
		const struct jsonc_node *k = srv->kids[i];
		size_t kl = k->end - k->name_start;
		json_t *it;
		size_t n;
		bool goes = false;
		json_array_foreach(p.items, n, it)
		{
			const char *act = json_string_value(
				json_object_get(it, "action"));
			if (strcmp(json_string_value(
					   json_object_get(it, "name")),
				   k->name) == 0)
				goes = strcmp(act, "moved") == 0 ||
				       strcmp(act, "same") == 0 ||
				       strcmp(act, "repoint") == 0;
		}
		if (goes)
			continue;
		const char *hit = memmem(at, olen - (size_t)(at - out),
					 s + k->name_start, kl);
		if (hit == NULL)
			fz_fail("an entry that stays was not kept as it was", s,
				len);
		at = hit + kl;
	}
	free(out);
	hosts_plan_free(&p);
out:
	json_decref(relay);
	json_decref(mine);
}

/* The text as mcpvisor's config, a server moved into it. */
static void fz_check_mcpv(const char *s, size_t len, const struct jsonc *j)
{
	const struct host_info *h = hosts_find("cursor");
	json_t *host = json_pack("{s:{s:{s:s,s:[s]}}}", "mcpServers",
				 "fz-moved", "command", "/bin/fz", "args", "a");
	json_t *relay = hosts_relay_entry(h, "mcpvisor", NULL);
	struct hosts_plan p;
	char *err = NULL, *out = NULL;
	if (hosts_plan(h, host, jsonc_root(j)->value, relay, FZ_MCPV, &p,
		       &err) == 0) {
		if (hosts_edit_mcpv(&p, j, NULL, &out, &err) < 0) {
			fprintf(stderr, "fuzz_jsonc: mcpv: %s\n", err);
			fz_fail("mcpvisor's config edit failed where the "
				"plan did not",
				s, len);
		}
		free(out);
		hosts_plan_free(&p);
	}
	free(err);
	json_decref(host);
	json_decref(relay);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	bool nul = memchr(s, '\0', size) != NULL;
	struct jsonc *strict = fz_parse(s, size, JSONC_STRICT);
	struct jsonc *lax = fz_parse(s, size, 0);

	/* Strict is jansson. */
	json_t *jv = json_loadb(s, size,
				JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	if (strict && !(jv && json_equal(jv, jsonc_root(strict)->value)))
		fz_fail("strict read what jansson reads otherwise or not", s,
			size);
	if (!strict && jv && !nul && fz_depth(jv) <= JSONC_MAX_DEPTH)
		fz_fail("strict refused what jansson reads", s, size);
	json_decref(jv);
	if (strict && !(lax && json_equal(jsonc_root(strict)->value,
					  jsonc_root(lax)->value)))
		fz_fail("JSONC read plain JSON otherwise", s, size);

	/* JSONC is JSON once comments and trailing commas are out. */
	size_t slen = 0;
	char *stripped = nul ? NULL : fz_strip(s, size, &slen);
	json_t *sv =
		stripped ? json_loadb(stripped, slen,
				      JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
				      NULL)
			 : NULL;
	if (lax && !(sv && json_equal(sv, jsonc_root(lax)->value)))
		fz_fail("JSONC read otherwise than its JSON", s, size);
	if (!lax && sv && fz_depth(sv) <= JSONC_MAX_DEPTH)
		fz_fail("JSONC refused what reads as JSON without comments", s,
			size);
	json_decref(sv);
	free(stripped);

	if (lax && jsonc_is_plain(lax) != (strict != NULL))
		fz_fail("plain, or not, otherwise than strict reads it", s,
			size);
	if (lax) {
		int budget = 64;
		fz_check_spans(s, size, jsonc_root(lax), &budget);
		fz_check_edits(s, size, lax, strict != NULL);
		if (json_is_object(jsonc_root(lax)->value)) {
			fz_check_host(s, size, lax, "vscode");
			fz_check_host(s, size, lax, "cursor");
			/* For the sanitizers: a masked value may stand
			 * anywhere in the text (true, say), so the masked
			 * text need not read. */
			struct secrets *sec = secrets_new();
			free(hosts_mask_text(s, size, sec));
			secrets_free(sec);
		}
	}
	if (strict && json_is_object(jsonc_root(strict)->value))
		fz_check_mcpv(s, size, strict);
	jsonc_free(strict);
	jsonc_free(lax);
	return 0;
}
