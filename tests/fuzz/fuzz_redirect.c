/*
 * libFuzzer harness for the redirect's query (src/auth/form.c), what
 * anyone on the machine can send to the sign-in's loopback listener or
 * paste at `mcpvisor login --no-browser`: the input is taken as the flow
 * takes a pasted redirect (what follows '?', up to '#' or a line end)
 * and as the listener does (the whole input). Beyond the sanitizers: a
 * refused query leaves the result untouched; an accepted one keeps
 * FORM_MAX_PARAMS, has names that are not empty, each once, and no NUL;
 * written out again with form_add it reads back to the same pairs.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/form.h"
#include "util/buf.h"

static void fr_fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	abort();
}

static void fr_query(const char *s, size_t len)
{
	struct form_query q = {(void *)1, 4242};
	int rc = form_parse(s, len, &q);
	if (rc < 0) {
		if (rc != -EINVAL && rc != -E2BIG)
			fr_fail("an error other than -EINVAL/-E2BIG");
		if (q.params != (void *)1 || q.nparams != 4242)
			fr_fail("a refused query changed the result");
		if (len > FORM_MAX_QUERY && rc != -E2BIG)
			fr_fail("over FORM_MAX_QUERY but not -E2BIG");
		return;
	}
	if (len > FORM_MAX_QUERY)
		fr_fail("accepted past FORM_MAX_QUERY");
	if (q.nparams > FORM_MAX_PARAMS)
		fr_fail("past FORM_MAX_PARAMS");
	struct buf out;
	buf_init(&out);
	for (size_t i = 0; i < q.nparams; i++) {
		const struct form_param *p = &q.params[i];
		if (p->name[0] == '\0')
			fr_fail("an empty name");
		if (form_get(&q, p->name) != p->value)
			fr_fail("a name twice");
		form_add(&out, p->name, p->value);
	}
	struct form_query q2;
	if (form_parse(out.len ? out.data : "", out.len, &q2) == 0) {
		if (q2.nparams != q.nparams)
			fr_fail("its own writing reads to other pairs");
		for (size_t i = 0; i < q.nparams; i++)
			if (strcmp(q2.params[i].name, q.params[i].name) != 0 ||
			    strcmp(q2.params[i].value, q.params[i].value) != 0)
				fr_fail("its own writing reads differently");
		form_query_clear(&q2);
	} else if (out.len <= FORM_MAX_QUERY) {
		fr_fail("its own writing is refused");
	}
	buf_free(&out);
	form_query_clear(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The listener: the request target's query, whole. */
	fr_query((const char *)data, size);
	/* A pasted redirect URL: as auth_flow_redirect cuts it. */
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	const char *q = strchr(s, '?');
	q = q ? q + 1 : s;
	fr_query(q, strcspn(q, "#\r\n"));
	free(s);
	return 0;
}
