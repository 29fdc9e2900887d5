/*
 * The reloader (reload.h): the content of the running config, the
 * watches, and the error shown in status while the file on disk is not
 * what runs.
 */
#include "runtime/reload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/hub.h"
#include "session/spaces.h"
#include "trust/trust.h"
#include "util/filewatch.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct reloader {
	struct hub *hub;
	char *path;
	/* The content last loaded or tried: a change that comes back to it
	 * (a save without edits, a touch) is no reload, and a broken file
	 * saved again is reported once. */
	struct reload_seen seen;
	struct filewatch *config_watch;
	struct filewatch *trust_watch;
};

void reload_seen_clear(struct reload_seen *seen)
{
	free(seen->text);
	seen->text = NULL;
	seen->len = 0;
}

struct config *reload_read(const char *path, struct reload_seen *seen)
{
	char *text = NULL;
	size_t len = 0;
	reload_seen_clear(seen);
	if (fsutil_read_user_file(path, CONFIG_MAX_FILE_BYTES, &text, &len) < 0)
		/* Read again for the message config gives each failure. */
		return config_load_file(path);
	struct config *cfg = config_parse(text, len, path);
	seen->text = text;
	seen->len = len;
	return cfg;
}

/* Loads path; with only_if_changed, content as last seen is left alone
 * (1). 0 applied, -EINVAL not loadable. */
static int reloader_load(struct reloader *r, bool only_if_changed, char **msg)
{
	struct reload_seen seen = {0};
	struct config *cfg = reload_read(r->path, &seen);
	if (only_if_changed && seen.text && r->seen.text &&
	    seen.len == r->seen.len &&
	    memcmp(seen.text, r->seen.text, seen.len) == 0) {
		reload_seen_clear(&seen);
		config_free(cfg);
		*msg = xasprintf("%s: written, content unchanged: nothing to "
				 "do",
				 r->path);
		return 1;
	}
	/* Unreadable is no text here: the same bytes coming back are a
	 * change then, and their load clears the error. */
	reload_seen_clear(&r->seen);
	r->seen = seen;
	if (cfg->fatal) {
		*msg = xasprintf("config not reloaded: %s; the previous config "
				 "keeps running",
				 cfg->fatal);
		hub_set_reload_error(r->hub, cfg->fatal);
		config_free(cfg);
		return -EINVAL;
	}
	for (size_t i = 0; i < cfg->nservers; i++)
		if (cfg->servers[i].error)
			log_error("%s", cfg->servers[i].error);
	size_t n = cfg->nservers;
	hub_set_reload_error(r->hub, NULL);
	unsigned closed = hub_reload(r->hub, cfg);
	*msg = xasprintf("reloaded %s: %zu server(s), %u instance(s) closed",
			 r->path, n, closed);
	return 0;
}

int reloader_apply(struct reloader *r, char **msg)
{
	int rc = reloader_load(r, false, msg);
	if (rc < 0)
		log_error("%s", *msg);
	return rc;
}

static void reloader_config_cb(void *arg, const char *path, unsigned events,
			       uint64_t span_ms)
{
	struct reloader *r = arg;
	log_info("%s: %u change event(s) in %llu ms: loading it", path, events,
		 (unsigned long long)span_ms);
	char *msg = NULL;
	int rc = reloader_load(r, true, &msg);
	if (rc < 0)
		log_error("%s", msg);
	else if (rc > 0)
		log_info("%s", msg);
	free(msg);
}

static void reloader_trust_cb(void *arg, const char *path, unsigned events,
			      uint64_t span_ms)
{
	struct reloader *r = arg;
	(void)events;
	(void)span_ms;
	log_info("%s changed: reading the spaces again", path);
	spaces_recheck(hub_spaces(r->hub));
}

struct reloader *reloader_new(uv_loop_t *loop, struct hub *hub,
			      const char *config_path, const char *state_dir,
			      struct reload_seen *seen, bool watch)
{
	struct reloader *r = xcalloc(1, sizeof *r);
	r->hub = hub;
	r->path = xstrdup(config_path);
	r->seen = *seen;
	*seen = (struct reload_seen){0};
	if (!watch)
		return r;
	r->config_watch =
		filewatch_new(loop, config_path, reloader_config_cb, r);
	char *trust = xasprintf("%s/%s", state_dir, TRUST_FILE);
	r->trust_watch = filewatch_new(loop, trust, reloader_trust_cb, r);
	free(trust);
	spaces_watch(hub_spaces(hub), hub_space_loaded, hub);
	return r;
}

void reloader_free(struct reloader *r)
{
	if (r == NULL)
		return;
	filewatch_free(r->config_watch);
	filewatch_free(r->trust_watch);
	reload_seen_clear(&r->seen);
	free(r->path);
	free(r);
}
