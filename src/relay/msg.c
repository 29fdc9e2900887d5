/* The relay's own messages (relay/msg.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "relay/msg.h"
#include "util/buf.h"
#include "util/xmalloc.h"

char *relay_msg_splice(const char *text, size_t len,
		       const struct jsonscan_span *sp, const char *with,
		       size_t *out_len)
{
	return relay_msg_splice_in(text, len, sp, with, NULL, 0, out_len);
}

char *relay_msg_splice_in(const char *text, size_t len,
			  const struct jsonscan_span *sp, const char *with,
			  char *buf, size_t cap, size_t *out_len)
{
	size_t wl = strlen(with);
	*out_len = len - sp->len + wl;
	char *s = *out_len < cap ? buf : xmalloc(*out_len + 1);
	memcpy(s, text, sp->off);
	memcpy(s + sp->off, with, wl);
	memcpy(s + sp->off + wl, text + sp->off + sp->len,
	       len - sp->off - sp->len);
	s[*out_len] = '\0';
	return s;
}

char *relay_msg_error(const char *id, int code, const char *text,
		      size_t *out_len)
{
	json_t *m = jr_error(NULL, code, text, NULL);
	char *s = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	*out_len = strlen(s);
	if (id == NULL)
		return s;
	/* The builder wrote "id":null: the host's id goes there as it was
	 * sent (a string keeps its escapes). */
	const char *p = strstr(s, "\"id\":null");
	struct jsonscan_span sp = {.off = (size_t)(p - s) + 5, .len = 4};
	char *out = relay_msg_splice(s, *out_len, &sp, id, out_len);
	free(s);
	return out;
}

void relay_msg_id(char *out, int64_t id)
{
	buf_fmt_u64(out, id < 0 ? 0 : (unsigned long long)id);
}
