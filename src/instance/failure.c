/*
 * What a server prints and what its failures leave behind: its stderr
 * logged under its name and kept as a tail, with every configured secret
 * value masked; the first stderr line for the error a failed start gives;
 * the last failure (reason, time, stderr) kept for status.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "config/secrets.h"
#include "instance/instance_int.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

char *instance_mask(const struct instance *inst, const char *s, size_t len)
{
	char *text = xstrndup(s, len);
	char *masked = secrets_mask(inst->secrets, text);
	free(text);
	return masked;
}

char *instance_stderr_now(const struct instance *inst)
{
	if (inst->up == NULL || inst->ops->log_tail == NULL)
		return xstrdup("");
	char *raw = inst->ops->log_tail(inst->up, INSTANCE_STDERR_TAIL);
	char *masked = instance_mask(inst, raw, strlen(raw));
	free(raw);
	return masked;
}

void instance_save_stderr(struct instance *inst)
{
	if (inst->up == NULL)
		return;
	free(inst->stderr_tail);
	inst->stderr_tail = instance_stderr_now(inst);
}

/* The first line of what the server printed, cut short: what a host
 * shows of a failed start is one sentence, and this is usually why. */
char *instance_first_line(const char *tail)
{
	if (tail == NULL || tail[0] == '\0')
		return NULL;
	size_t n = strcspn(tail, "\n");
	if (n > 200)
		n = 200;
	return xstrndup(tail, n);
}

/* The last failure of each server by name, outliving its instances: an
 * instance that failed is often freed at once (its only session ended),
 * and status must still say why. One record per server name ever failed,
 * so the table is as small as the config. */
struct failure_rec {
	struct failure_rec *next;
	char *server;
	json_t *failure;
};

static struct failure_rec *failures;

static void instance_failure_keep(const struct instance *inst)
{
	struct failure_rec *f = failures;
	while (f && strcmp(f->server, inst->name) != 0)
		f = f->next;
	if (f == NULL) {
		f = xcalloc(1, sizeof *f);
		f->server = xstrdup(inst->name);
		f->next = failures;
		failures = f;
	}
	json_decref(f->failure);
	f->failure = instance_last_failure(inst);
}

json_t *instance_failure_of(const char *server)
{
	for (struct failure_rec *f = failures; f; f = f->next)
		if (strcmp(f->server, server) == 0)
			return json_incref(f->failure);
	return NULL;
}

void instance_record_failure(struct instance *inst)
{
	free(inst->fail_reason);
	free(inst->fail_stderr);
	inst->fail_reason = xstrdup(inst->last_error ? inst->last_error
						     : "unknown failure");
	inst->fail_stderr = inst->stderr_tail && inst->stderr_tail[0]
				    ? xstrdup(inst->stderr_tail)
				    : NULL;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	inst->fail_at_ms =
		(uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
	instance_failure_keep(inst);
}

/* Every line a server prints on stderr goes to the log under its name,
 * with the configured secrets masked (a server may print its token); the
 * log escapes what it holds. */
void instance_stderr_cb(void *ctx, const char *line, size_t len)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	link->stderr_seen = true;
	char *masked = instance_mask(inst, line, len);
	log_info("server %s: %s", inst->name, masked);
	free(masked);
}

json_t *instance_last_failure(const struct instance *inst)
{
	if (inst->fail_reason == NULL)
		return NULL;
	json_t *o = json_pack("{s:s,s:I}", "reason", inst->fail_reason, "at",
			      (json_int_t)inst->fail_at_ms);
	if (inst->fail_stderr)
		json_object_set_new(o, "stderr",
				    json_string(inst->fail_stderr));
	return o;
}
