/*
 * What a server prints and what its failures leave behind: its stderr
 * logged under its name and kept as a tail, with every configured secret
 * value masked; the caps on how much of its noise (stderr, warnings about
 * what it sends) reaches the log; the first stderr line for the error a
 * failed start gives; the last failure (reason, time, stderr, and when a
 * start went well since) kept for status.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "config/secrets.h"
#include "instance/instance_int.h"
#include "util/buf.h"
#include "util/clock.h"
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
	/* When a start of the server went well after that failure (wall
	 * clock, ms since the epoch); 0: not since. */
	uint64_t recovered_at;
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
	f->recovered_at = 0;
}

/* Wall clock ms: what status shows as a time of day, not a deadline. */
static uint64_t instance_wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

json_t *instance_failure_of(const char *server)
{
	for (struct failure_rec *f = failures; f; f = f->next) {
		if (strcmp(f->server, server) != 0)
			continue;
		json_t *o = json_deep_copy(f->failure);
		if (f->recovered_at)
			json_object_set_new(
				o, "recoveredAt",
				json_integer((json_int_t)f->recovered_at));
		return o;
	}
	return NULL;
}

void instance_record_ready(const struct instance *inst)
{
	for (struct failure_rec *f = failures; f; f = f->next)
		if (strcmp(f->server, inst->name) == 0 && !f->recovered_at)
			f->recovered_at = instance_wall_ms();
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
	inst->fail_at_ms = instance_wall_ms();
	instance_failure_keep(inst);
}

/* ---- the caps on a server's noise in the log ---- */

static void instance_noise_timer_cb(uv_timer_t *t)
{
	instance_noise_flush(t->data);
}

void instance_noise_flush(struct instance *inst)
{
	unsigned warns = ratelimit_flush(&inst->warn_limit);
	unsigned lines = ratelimit_flush(&inst->stderr_limit);
	if (warns)
		log_warn("instance %s: %u more like this suppressed (at most "
			 "%d of its warnings are logged per %d s)",
			 inst->name, warns, INSTANCE_WARN_BURST,
			 INSTANCE_WARN_WINDOW_MS / 1000);
	if (lines)
		log_info(
			"server %s: %u more like this suppressed (at most "
			"%d of its stderr lines are logged per %d s; `mcpvisor "
			"status -v` shows its last ones)",
			inst->name, lines, INSTANCE_STDERR_BURST,
			INSTANCE_STDERR_WINDOW_MS / 1000);
}

/* Whether one more line under cap r may be written now. A line that
 * opens a new window says first what the last one held back; the first
 * line held back in a window arms the timer that tells at its end. */
static bool instance_noise_take(struct instance *inst, struct ratelimit *r)
{
	uint64_t now = clock_now_ms();
	unsigned before = 0;
	bool ok = ratelimit_take(r, now, &before);
	if (before) {
		r->held += before; /* told now, with the other cap's */
		instance_noise_flush(inst);
	}
	if (!ok && r->held == 1 && !inst->freeing &&
	    !uv_is_active((uv_handle_t *)&inst->noise_timer))
		uv_timer_start(&inst->noise_timer, instance_noise_timer_cb,
			       ratelimit_window_left_ms(r, now), 0);
	return ok;
}

void instance_warn(struct instance *inst, const char *fmt, ...)
{
	if (!instance_noise_take(inst, &inst->warn_limit))
		return;
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	log_warn("instance %s: %s", inst->name, text);
}

/* Every line a server prints on stderr goes to the log under its name
 * (within the cap), with the configured secrets masked (a server may
 * print its token); the log escapes what it holds. The tail for status
 * is the transport's, whatever the cap let through. */
void instance_stderr_cb(void *ctx, const char *line, size_t len)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	link->stderr_seen = true;
	if (!instance_noise_take(inst, &inst->stderr_limit))
		return;
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
