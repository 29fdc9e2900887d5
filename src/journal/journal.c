/*
 * The ownership journal: the owned resources (processes, containers) the
 * runtime started and the owner tokens reserved for the next ones, kept in
 * STATE_DIR/journal.json by atomic replace. Once attached to a loop, changes
 * are coalesced into one snapshot per loop turn, written and fsynced in the
 * thread pool.
 */
#include "journal/journal.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal/journal_int.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/random.h"
#include "util/xmalloc.h"

#define JOURNAL_FORMAT 1
/* Keys are only for the log; bounding them keeps a full journal
 * (JOURNAL_MAX_ENTRIES of ~400 bytes at most) far below JOURNAL_MAX_BYTES. */
#define JOURNAL_KEY_MAX 128

#define JOURNAL_ALNUM                                                          \
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

/* One snapshot on its way to disk. */
struct journal_job {
	uv_work_t req;
	struct journal *j;
	char *text;
	uint64_t seq;
	int rc;
};

static bool journal_token_valid(const char *t)
{
	size_t i;
	for (i = 0; t[i]; i++) {
		if (!((t[i] >= '0' && t[i] <= '9') ||
		      (t[i] >= 'a' && t[i] <= 'f')))
			return false;
	}
	return i == JOURNAL_TOKEN_LEN;
}

/* A copy of key fit for a log line and a JSON string: bounded, with control
 * characters and anything that is not UTF-8 replaced. */
static char *journal_key_clean(const char *key, size_t len)
{
	if (len > JOURNAL_KEY_MAX) {
		len = JOURNAL_KEY_MAX;
		/* Do not cut a UTF-8 sequence in half. */
		while (len > 0 && ((unsigned char)key[len] & 0xc0) == 0x80)
			len--;
	}
	char *s = xstrndup(key, len);
	for (size_t i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			s[i] = '?';
	}
	json_t *probe = json_string(s);
	if (!probe) {
		for (size_t i = 0; s[i]; i++) {
			if ((unsigned char)s[i] >= 0x80)
				s[i] = '?';
		}
	}
	json_decref(probe);
	return s;
}

void journal_entry_clear(struct journal_entry *e)
{
	free(e->key);
	free(e->engine);
	free(e->container_id);
	free(e->container_name);
	e->key = e->engine = e->container_id = e->container_name = NULL;
}

void journal_clear(struct journal *j)
{
	for (size_t i = 0; i < j->n; i++)
		journal_entry_clear(&j->entries[i]);
	j->n = 0;
	free(j->reserved);
	j->reserved = NULL;
	j->nreserved = 0;
}

static void journal_reserve_push(struct journal *j, const char *token)
{
	if (j->nreserved % 16 == 0)
		j->reserved = xrealloc(
			j->reserved, (j->nreserved + 16) * sizeof *j->reserved);
	struct journal_reserved *r = &j->reserved[j->nreserved++];
	memcpy(r->token, token, JOURNAL_TOKEN_LEN + 1);
	/* The next snapshot taken holds it. */
	r->seq = j->seq + 1;
}

static struct journal_entry *journal_append(struct journal *j)
{
	if (j->n == j->cap) {
		j->cap = j->cap ? j->cap * 2 : 8;
		j->entries = xrealloc(j->entries, j->cap * sizeof *j->entries);
	}
	struct journal_entry *e = &j->entries[j->n++];
	memset(e, 0, sizeof *e);
	return e;
}

static bool journal_same_str(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* Whether x and e name the same container: the same engine (when e
 * says), and the same id when both have one, else the same name. A
 * container first known by the name it was given, then by its id, is one
 * entry; two ids under one name are two containers (the name was reused
 * after the first was removed). */
static bool journal_same_container(const struct journal_entry *x,
				   const struct journal_entry *e)
{
	bool same = x->container_id && e->container_id
			    ? strcmp(x->container_id, e->container_id) == 0
			    : journal_same_str(x->container_name,
					       e->container_name);
	return same && (!e->engine || journal_same_str(x->engine, e->engine));
}

/* Where what e names is already recorded: a process by its pid, a
 * container by its id, else its name. */
static ssize_t journal_find(const struct journal *j,
			    const struct journal_entry *e)
{
	for (size_t i = 0; i < j->n; i++) {
		const struct journal_entry *x = &j->entries[i];
		if (x->kind != e->kind)
			continue;
		if (e->kind == UPSTREAM_OWNED_PROCESS
			    ? x->pid == e->pid
			    : journal_same_container(x, e))
			return (ssize_t)i;
	}
	return -1;
}

/* Only what an engine's argv could take as is: a name or a path made of
 * these, so that the next release can run it without quoting. */
static bool journal_chars_in(const char *s, size_t max, const char *set,
			     bool alnum_first)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || strspn(s, set) != n)
		return false;
	return !alnum_first || strchr(JOURNAL_ALNUM, s[0]) != NULL;
}

static bool journal_container_valid(const char *engine, const char *id,
				    const char *name)
{
	if (!engine ||
	    !journal_chars_in(engine, JOURNAL_ENGINE_MAX, JOURNAL_ALNUM "/._+-",
			      false) ||
	    (!id && !name))
		return false;
	if (id && !journal_chars_in(id, JOURNAL_CONTAINER_ID_MAX,
				    "0123456789abcdef", false))
		return false;
	return !name || journal_chars_in(name, JOURNAL_CONTAINER_NAME_MAX,
					 JOURNAL_ALNUM "_.-", true);
}

static bool journal_pid_valid(json_int_t v)
{
	return v > 0 && v <= INT_MAX;
}

static const char *journal_kind_name(enum upstream_owned_kind k)
{
	return k == UPSTREAM_OWNED_CONTAINER ? "container" : "process";
}

/* A process entry's fields; false when any is missing or wrong. */
static bool journal_process_parse(json_t *o, struct journal_entry *e)
{
	json_t *pid = json_object_get(o, "pid");
	json_t *pgid = json_object_get(o, "pgid");
	json_t *st = json_object_get(o, "startTime");
	json_t *port = json_object_get(o, "port");
	if (!json_is_integer(pid) || !json_is_integer(pgid) ||
	    !json_is_integer(st) || (port && !json_is_integer(port)))
		return false;
	if (!journal_pid_valid(json_integer_value(pid)) ||
	    !journal_pid_valid(json_integer_value(pgid)) ||
	    json_integer_value(st) < 0 ||
	    (port && (json_integer_value(port) < 1 ||
		      json_integer_value(port) > 65535)))
		return false;
	e->pid = (pid_t)json_integer_value(pid);
	e->pgid = (pid_t)json_integer_value(pgid);
	e->start_time = (uint64_t)json_integer_value(st);
	e->port = port ? (int)json_integer_value(port) : 0;
	return true;
}

/* A container entry's fields, as journal_add_owned would take them. */
static bool journal_container_parse(json_t *o, struct journal_entry *e)
{
	json_t *engine = json_object_get(o, "engine");
	json_t *id = json_object_get(o, "id");
	json_t *name = json_object_get(o, "name");
	if (!json_is_string(engine) || (id && !json_is_string(id)) ||
	    (name && !json_is_string(name)) ||
	    !journal_container_valid(json_string_value(engine),
				     json_string_value(id),
				     json_string_value(name)))
		return false;
	e->engine = xstrdup(json_string_value(engine));
	e->container_id = id ? xstrdup(json_string_value(id)) : NULL;
	e->container_name = name ? xstrdup(json_string_value(name)) : NULL;
	return true;
}

/* Fills e from one JSON entry; false when any field is missing or wrong.
 * An entry without "kind" (written before containers) is a process. */
static bool journal_entry_parse(json_t *o, struct journal_entry *e)
{
	if (!json_is_object(o))
		return false;
	json_t *kind = json_object_get(o, "kind");
	json_t *tok = json_object_get(o, "token");
	json_t *key = json_object_get(o, "key");
	if ((kind && !json_is_string(kind)) || !json_is_string(tok) ||
	    !json_is_string(key))
		return false;
	const char *t = json_string_value(tok);
	if (json_string_length(tok) != JOURNAL_TOKEN_LEN ||
	    !journal_token_valid(t))
		return false;
	const char *k = kind ? json_string_value(kind) : "process";
	if (strcmp(k, "process") == 0) {
		e->kind = UPSTREAM_OWNED_PROCESS;
		if (!journal_process_parse(o, e))
			return false;
	} else if (strcmp(k, "container") == 0) {
		e->kind = UPSTREAM_OWNED_CONTAINER;
		if (!journal_container_parse(o, e))
			return false;
	} else {
		return false;
	}
	/* No embedded NUL: the decoder rejects \u0000 by default. */
	memcpy(e->token, t, JOURNAL_TOKEN_LEN + 1);
	e->key = journal_key_clean(json_string_value(key),
				   json_string_length(key));
	return true;
}

/* Reads the file; anything unreadable as a journal is dropped with a
 * warning, since the worst outcome of an empty journal is a leftover
 * process, never a wrong one signalled. */
static int journal_load(struct journal *j)
{
	char *data = NULL;
	size_t len = 0;
	json_t *root = NULL;
	int rc = fsutil_read_file(j->path, JOURNAL_MAX_BYTES, &data, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc == -EFBIG) {
		log_warn("journal %s is over %d bytes; treated as empty",
			 j->path, JOURNAL_MAX_BYTES);
		j->stale = true;
		return 0;
	}
	if (rc < 0)
		return rc;
	json_error_t err;
	root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &err);
	json_t *entries = NULL;
	if (!root) {
		log_warn(
			"journal %s is corrupt (line %d: %s); treated as empty",
			j->path, err.line, err.text);
		goto corrupt;
	}
	json_t *fmt = json_object_get(root, "format");
	entries = json_object_get(root, "entries");
	if (!json_is_object(root) || !json_is_integer(fmt) ||
	    json_integer_value(fmt) != JOURNAL_FORMAT ||
	    !json_is_array(entries)) {
		log_warn("journal %s has an unknown layout; treated as empty",
			 j->path);
		goto corrupt;
	}
	size_t n = json_array_size(entries);
	if (n > JOURNAL_MAX_ENTRIES) {
		log_warn("journal %s has %zu entries; reading the first %d",
			 j->path, n, JOURNAL_MAX_ENTRIES);
		n = JOURNAL_MAX_ENTRIES;
		j->stale = true;
	}
	size_t skipped = 0;
	for (size_t i = 0; i < n; i++) {
		struct journal_entry tmp;
		memset(&tmp, 0, sizeof tmp);
		if (!journal_entry_parse(json_array_get(entries, i), &tmp)) {
			skipped++;
			continue;
		}
		if (journal_find(j, &tmp) >= 0) {
			journal_entry_clear(&tmp);
			skipped++;
			continue;
		}
		*journal_append(j) = tmp;
	}
	json_t *reserved = json_object_get(root, "reserved");
	for (size_t i = 0;
	     json_is_array(reserved) && i < json_array_size(reserved) &&
	     i < JOURNAL_MAX_ENTRIES;
	     i++) {
		json_t *t = json_array_get(reserved, i);
		if (json_is_string(t) &&
		    json_string_length(t) == JOURNAL_TOKEN_LEN &&
		    journal_token_valid(json_string_value(t))) {
			journal_reserve_push(j, json_string_value(t));
			/* Read from the file: on disk already. */
			j->reserved[j->nreserved - 1].seq = 0;
		} else
			skipped++;
	}
	if (skipped) {
		log_warn("journal %s: skipped %zu invalid entries", j->path,
			 skipped);
		j->stale = true;
	}
	json_decref(root);
	free(data);
	return 0;
corrupt:
	json_decref(root);
	free(data);
	j->stale = true;
	return 0;
}

/* One entry as the file holds it; "kind" first, which readers before
 * containers ignore (they read processes as ever, and skip containers as
 * invalid rather than misread them). */
static json_t *journal_entry_json(const struct journal_entry *e)
{
	json_t *o = json_pack("{s:s}", "kind", journal_kind_name(e->kind));
	if (e->kind == UPSTREAM_OWNED_PROCESS) {
		json_object_set_new(o, "pid", json_integer(e->pid));
		json_object_set_new(o, "pgid", json_integer(e->pgid));
		json_object_set_new(o, "startTime",
				    json_integer((json_int_t)e->start_time));
		if (e->port > 0)
			json_object_set_new(o, "port", json_integer(e->port));
	} else {
		json_object_set_new(o, "engine", json_string(e->engine));
		if (e->container_id)
			json_object_set_new(o, "id",
					    json_string(e->container_id));
		if (e->container_name)
			json_object_set_new(o, "name",
					    json_string(e->container_name));
	}
	json_object_set_new(o, "token", json_string(e->token));
	json_object_set_new(o, "key", json_string(e->key));
	return o;
}

/* The file's text for the current state; the snapshot gets the next seq. */
static char *journal_snapshot(struct journal *j, uint64_t *seq)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < j->n; i++) {
		json_array_append_new(arr, journal_entry_json(&j->entries[i]));
	}
	json_t *res = json_array();
	for (size_t i = 0; i < j->nreserved; i++)
		json_array_append_new(res, json_string(j->reserved[i].token));
	json_t *root = json_pack("{s:i, s:o, s:o}", "format", JOURNAL_FORMAT,
				 "entries", arr, "reserved", res);
	char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (text == NULL)
		return NULL;
	*seq = ++j->seq;
	j->dirty = false;
	j->stale = false;
	return text;
}

/* Writes one snapshot, on whatever thread; never an older one over a newer
 * one. */
static int journal_put(struct journal *j, const char *text, uint64_t seq)
{
	int rc = 0;
	pthread_mutex_lock(&j->write_lock);
	if (seq > j->written_seq) {
		rc = fsutil_write_atomic(j->path, text, strlen(text), 0600);
		if (rc == 0)
			j->written_seq = seq;
	}
	pthread_mutex_unlock(&j->write_lock);
	return rc;
}

static void journal_written(struct journal *j, uint64_t seq, int rc)
{
	j->stats.writes++;
	if (rc < 0) {
		log_error("cannot write journal %s: %s", j->path,
			  strerror(-rc));
		/* Try again with the next change. */
		j->dirty = true;
		return;
	}
	if (seq > j->durable_seq)
		j->durable_seq = seq;
}

int journal_write_now(struct journal *j)
{
	uint64_t seq;
	char *text = journal_snapshot(j, &seq);
	if (text == NULL)
		return -ENOMEM;
	int rc = journal_put(j, text, seq);
	free(text);
	j->stats.sync_writes++;
	journal_written(j, seq, rc);
	return rc;
}

static void journal_work_cb(uv_work_t *req)
{
	struct journal_job *job = req->data;
	job->rc = journal_put(job->j, job->text, job->seq);
}

static void journal_arm(struct journal *j);

static void journal_after_work_cb(uv_work_t *req, int status)
{
	struct journal_job *job = req->data;
	struct journal *j = job->j;
	j->in_flight = false;
	journal_written(j, job->seq, status < 0 ? status : job->rc);
	free(job->text);
	free(job);
	if (j->dirty)
		journal_arm(j);
}

/* Before the loop next waits for events: one snapshot of every change
 * made since the last. */
static void journal_prepare_cb(uv_prepare_t *h)
{
	struct journal *j = h->data;
	uv_prepare_stop(h);
	/* One write at a time; what changes meanwhile goes in the next. */
	if (!j->dirty || j->in_flight)
		return;
	struct journal_job *job = xcalloc(1, sizeof *job);
	job->j = j;
	job->text = journal_snapshot(j, &job->seq);
	if (job->text == NULL) {
		free(job);
		j->dirty = true;
		return;
	}
	job->req.data = job;
	j->in_flight = true;
	int rc = uv_queue_work(j->loop, &job->req, journal_work_cb,
			       journal_after_work_cb);
	if (rc < 0) {
		j->in_flight = false;
		log_warn("journal: cannot queue a write (%s); writing now",
			 uv_strerror(rc));
		int wrc = journal_put(j, job->text, job->seq);
		j->stats.sync_writes++;
		journal_written(j, job->seq, wrc);
		free(job->text);
		free(job);
	}
}

/* Marks a change: written at the end of this loop turn when attached,
 * at once otherwise. */
static int journal_changed(struct journal *j)
{
	j->dirty = true;
	j->stats.changes++;
	if (j->attached) {
		journal_arm(j);
		return 0;
	}
	return journal_write_now(j);
}

static void journal_arm(struct journal *j)
{
	if (j->attached && !j->in_flight)
		uv_prepare_start(&j->prepare, journal_prepare_cb);
}

/* Tops the reserve up to JOURNAL_RESERVE once it runs low. */
static void journal_refill(struct journal *j)
{
	if (j->nreserved >= JOURNAL_RESERVE_LOW)
		return;
	while (j->nreserved < JOURNAL_RESERVE) {
		char t[JOURNAL_TOKEN_LEN + 1];
		journal_new_token(t);
		journal_reserve_push(j, t);
	}
	journal_changed(j);
}

void journal_attach(struct journal *j, uv_loop_t *loop)
{
	if (j == NULL || j->attached)
		return;
	j->loop = loop;
	uv_prepare_init(loop, &j->prepare);
	j->prepare.data = j;
	j->attached = true;
	journal_refill(j);
}

void journal_detach(struct journal *j)
{
	if (j == NULL || !j->attached)
		return;
	j->attached = false;
	uv_close((uv_handle_t *)&j->prepare, NULL);
}

void journal_take_token(struct journal *j, char out[JOURNAL_TOKEN_LEN + 1])
{
	if (j == NULL) {
		journal_new_token(out);
		return;
	}
	/* Only a token in a snapshot known on disk will do. */
	if (j->nreserved == 0 || j->reserved[0].seq > j->durable_seq) {
		if (j->nreserved == 0) {
			char t[JOURNAL_TOKEN_LEN + 1];
			journal_new_token(t);
			journal_reserve_push(j, t);
		}
		log_debug("journal: no token written ahead; writing now");
		journal_write_now(j);
	}
	memcpy(out, j->reserved[0].token, JOURNAL_TOKEN_LEN + 1);
	memmove(&j->reserved[0], &j->reserved[1],
		(j->nreserved - 1) * sizeof *j->reserved);
	j->nreserved--;
	/* Written with the entry that follows in this turn. */
	j->dirty = true;
	if (j->attached)
		journal_refill(j);
}

struct journal_stats journal_stats(const struct journal *j)
{
	return j->stats;
}

int journal_open(const char *state_dir, struct journal **out)
{
	int rc = fsutil_mkdir_p(state_dir, 0700);
	if (rc < 0)
		return rc;
	struct journal *j = xcalloc(1, sizeof *j);
	pthread_mutex_init(&j->write_lock, NULL);
	j->path = xasprintf("%s/%s", state_dir, JOURNAL_FILE);
	rc = journal_load(j);
	if (rc < 0)
		goto fail;
	*out = j;
	return 0;
fail:
	journal_free(j);
	return rc;
}

void journal_free(struct journal *j)
{
	if (!j)
		return;
	/* A clean end: tokens never handed out need no finding, and the
	 * next start need not scan /proc for them. */
	if (j->nreserved > 0) {
		free(j->reserved);
		j->reserved = NULL;
		j->nreserved = 0;
		j->dirty = true;
	}
	if (j->dirty && !j->in_flight)
		journal_write_now(j);
	journal_clear(j);
	pthread_mutex_destroy(&j->write_lock);
	free(j->entries);
	free(j->path);
	free(j);
}

void journal_new_token(char out[JOURNAL_TOKEN_LEN + 1])
{
	random_hex(out, JOURNAL_TOKEN_LEN / 2);
}

/* o as an entry (not yet in the journal: its strings are o's), false
 * when a field is missing or not of its form. */
static bool journal_owned_entry(const struct upstream_owned *o,
				struct journal_entry *e)
{
	memset(e, 0, sizeof *e);
	e->kind = o->kind;
	if (o->kind == UPSTREAM_OWNED_PROCESS) {
		e->pid = o->pid;
		e->pgid = o->pgid;
		e->start_time = o->start_time;
		e->port = o->port;
		return o->pid > 0 && o->pgid > 0 &&
		       o->start_time <= INT64_MAX && o->port >= 0 &&
		       o->port <= 65535;
	}
	if (o->kind != UPSTREAM_OWNED_CONTAINER)
		return false;
	e->engine = (char *)o->engine;
	e->container_id = (char *)o->container_id;
	e->container_name = (char *)o->container_name;
	return journal_container_valid(o->engine, o->container_id,
				       o->container_name);
}

/* Whether a file on disk already names e's engine in another container
 * entry: the next start asks that engine anyway. */
static bool journal_engine_on_disk(const struct journal *j,
				   const struct journal_entry *e)
{
	for (size_t i = 0; i < j->n; i++) {
		const struct journal_entry *x = &j->entries[i];
		if (x != e && x->kind == UPSTREAM_OWNED_CONTAINER &&
		    x->seq <= j->durable_seq &&
		    journal_same_str(x->engine, e->engine))
			return true;
	}
	return false;
}

int journal_add_owned(struct journal *j, const struct upstream_owned *o,
		      const char *key)
{
	struct journal_entry want;
	if (!o || !journal_owned_entry(o, &want) || !o->token ||
	    !journal_token_valid(o->token))
		return -EINVAL;
	if (!key)
		key = "";
	/* A pid can only be back if its earlier process is gone; a
	 * container's id or name is unique on its engine. */
	ssize_t at = journal_find(j, &want);
	struct journal_entry *e;
	char *had_id = NULL, *had_name = NULL;
	if (at >= 0) {
		/* What the new record lacks (the id of a container now
		 * named only) stays known. */
		e = &j->entries[at];
		if (!want.container_id && e->container_id)
			had_id = xstrdup(e->container_id);
		if (!want.container_name && e->container_name)
			had_name = xstrdup(e->container_name);
		journal_entry_clear(e);
	} else {
		if (j->n >= JOURNAL_MAX_ENTRIES)
			return -ENOSPC;
		e = journal_append(j);
	}
	uint64_t seq = at >= 0 ? e->seq : j->seq + 1;
	*e = want;
	e->seq = seq;
	e->engine = want.engine ? xstrdup(want.engine) : NULL;
	e->container_id =
		want.container_id ? xstrdup(want.container_id) : had_id;
	e->container_name =
		want.container_name ? xstrdup(want.container_name) : had_name;
	memcpy(e->token, o->token, JOURNAL_TOKEN_LEN + 1);
	e->key = journal_key_clean(key, strlen(key));
	if (at < 0 && o->kind == UPSTREAM_OWNED_CONTAINER && j->attached &&
	    !journal_engine_on_disk(j, e)) {
		/* The engine may create it as soon as its CLI runs, in this
		 * very turn, and a container outlives the runtime: the next
		 * start must know which engine to ask (its token is a
		 * reserved one, on disk already) before there is anything
		 * to find. */
		j->stats.changes++;
		return journal_write_now(j);
	}
	return journal_changed(j);
}

int journal_remove_owned(struct journal *j, const struct upstream_owned *o)
{
	struct journal_entry want = {.kind = o->kind,
				     .pid = o->pid,
				     .engine = (char *)o->engine,
				     .container_id = (char *)o->container_id,
				     .container_name =
					     (char *)o->container_name};
	ssize_t at = journal_find(j, &want);
	if (at < 0)
		return -ENOENT;
	journal_entry_clear(&j->entries[at]);
	memmove(&j->entries[at], &j->entries[at + 1],
		(j->n - (size_t)at - 1) * sizeof *j->entries);
	j->n--;
	return journal_changed(j);
}

size_t journal_count(const struct journal *j)
{
	size_t n = 0;
	for (size_t i = 0; i < j->n; i++)
		n += !j->entries[i].carried;
	return n;
}
