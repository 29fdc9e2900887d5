/*
 * A reader of JSONC, the JSON with comments and trailing commas that VS Code
 * and Zed write and read, that remembers where each value sits in the text
 * (so a file can be edited as text, every other byte kept), and gives the
 * values as jansson holds them. Errors say line, column and what is wrong,
 * never the text.
 */
#ifndef MCPV_JSONC_H
#define MCPV_JSONC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Objects and arrays nest at most this deep (the root is 1): far past any
 * host's settings (Claude Code's whole state in ~/.claude.json included),
 * and a bound on the reader's recursion. */
#define JSONC_MAX_DEPTH 256
/* Where no offset applies (a value with no ',' after it). */
#define JSONC_NONE ((size_t)-1)

enum jsonc_flags {
	/* Plain JSON only: no comments, trailing commas or byte order
	 * mark (mcpvisor's own config, read by jansson). */
	JSONC_STRICT = 1,
};

struct jsonc_error {
	int line, column; /* 1-based; the column counts characters */
	size_t offset;	  /* the byte the error is at */
	char text[96];	  /* what is wrong; quotes nothing of the text */
};

/* One value of the text. The tree is the reader's: read-only to others. */
struct jsonc_node {
	json_t *value;	   /* borrowed: lives as long as the tree */
	const char *name;  /* a member's name (decoded); NULL: item or root */
	size_t name_start; /* a member: its name's opening '"'; else start */
	size_t start, end; /* the value's bytes: [start, end) */
	size_t comma; /* the ',' after it in its container, or JSONC_NONE */
	const struct jsonc_node *parent; /* NULL for the root */
	struct jsonc_node **kids; /* an object's members or an array's items */
	size_t nkids;
};

struct jsonc;

/* Reads text (len bytes; it must outlive the result) as one JSONC value
 * (any kind). A name twice in one object is an error: which one a host
 * reads is not known. 0 with *out (jsonc_free), or -EINVAL with *err. */
int jsonc_parse(const char *text, size_t len, int flags, struct jsonc **out,
		struct jsonc_error *err);
void jsonc_free(struct jsonc *j);
const struct jsonc_node *jsonc_root(const struct jsonc *j);
/* The text it was read from. */
const char *jsonc_text(const struct jsonc *j, size_t *len);
/* Whether the text is plain JSON: no comment, trailing comma or byte
 * order mark (what JSONC_STRICT reads). */
bool jsonc_is_plain(const struct jsonc *j);
/* The member of obj named name, or NULL. */
const struct jsonc_node *jsonc_member(const struct jsonc_node *obj,
				      const char *name);

#endif
