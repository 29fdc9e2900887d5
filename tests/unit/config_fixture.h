/*
 * What the config unit tests share: one server parsed from its JSON, and
 * assertions on the text a view gives.
 */
#ifndef MCPV_TESTS_CONFIG_FIXTURE_H
#define MCPV_TESTS_CONFIG_FIXTURE_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "util/xmalloc.h"

/* A config of one server named "s" in a file called t.json. */
static inline struct config *cf_one(const char *server_json)
{
	char *text = xasprintf("{\"mcpServers\": {\"s\": %s}}", server_json);
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	free(text);
	cr_assert_null(cfg->fatal, "unexpected fatal: %s", cfg->fatal);
	cr_assert_eq(cfg->nservers, 1);
	return cfg;
}

static inline void cf_assert_has(const char *hay, const char *needle)
{
	cr_assert_not_null(hay, "expected text containing [%s], got NULL",
			   needle);
	cr_assert_not_null(strstr(hay, needle), "[%s] does not contain [%s]",
			   hay, needle);
}

static inline void cf_assert_lacks(const char *hay, const char *needle)
{
	if (hay)
		cr_assert_null(strstr(hay, needle), "[%s] contains [%s]", hay,
			       needle);
}

/* j as compact sorted text; j is released. */
static inline char *cf_dump(json_t *j)
{
	char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	cr_assert_not_null(s);
	json_decref(j);
	return s;
}

#endif
