/*
 * The ownership journal: the list of processes the runtime started and the
 * owner tokens reserved for the next ones, kept in STATE_DIR/journal.json
 * by atomic replace. Once attached to a loop, changes are coalesced into
 * one snapshot per loop turn, written and fsynced in the thread pool.
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

static void journal_entry_clear(struct journal_entry *e)
{
	free(e->key);
	e->key = NULL;
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

static ssize_t journal_find(const struct journal *j, pid_t pid)
{
	for (size_t i = 0; i < j->n; i++) {
		if (j->entries[i].pid == pid)
			return (ssize_t)i;
	}
	return -1;
}

static bool journal_pid_valid(json_int_t v)
{
	return v > 0 && v <= INT_MAX;
}

/* Fills e from one JSON entry; false when any field is missing or wrong. */
static bool journal_entry_parse(json_t *o, struct journal_entry *e)
{
	if (!json_is_object(o))
		return false;
	json_t *pid = json_object_get(o, "pid");
	json_t *pgid = json_object_get(o, "pgid");
	json_t *st = json_object_get(o, "startTime");
	json_t *tok = json_object_get(o, "token");
	json_t *key = json_object_get(o, "key");
	if (!json_is_integer(pid) || !json_is_integer(pgid) ||
	    !json_is_integer(st) || !json_is_string(tok) ||
	    !json_is_string(key))
		return false;
	if (!journal_pid_valid(json_integer_value(pid)) ||
	    !journal_pid_valid(json_integer_value(pgid)) ||
	    json_integer_value(st) < 0)
		return false;
	const char *t = json_string_value(tok);
	if (json_string_length(tok) != JOURNAL_TOKEN_LEN ||
	    !journal_token_valid(t))
		return false;
	/* No embedded NUL: the decoder rejects \u0000 by default. */
	const char *k = json_string_value(key);
	size_t klen = json_string_length(key);
	e->pid = (pid_t)json_integer_value(pid);
	e->pgid = (pid_t)json_integer_value(pgid);
	e->start_time = (uint64_t)json_integer_value(st);
	memcpy(e->token, t, JOURNAL_TOKEN_LEN + 1);
	e->key = journal_key_clean(k, klen);
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
		if (journal_find(j, tmp.pid) >= 0) {
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

/* The file's text for the current state; the snapshot gets the next seq. */
static char *journal_snapshot(struct journal *j, uint64_t *seq)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < j->n; i++) {
		const struct journal_entry *e = &j->entries[i];
		json_array_append_new(
			arr, json_pack("{s:I, s:I, s:I, s:s, s:s}", "pid",
				       (json_int_t)e->pid, "pgid",
				       (json_int_t)e->pgid, "startTime",
				       (json_int_t)e->start_time, "token",
				       e->token, "key", e->key));
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

int journal_add(struct journal *j, pid_t pid, pid_t pgid, uint64_t start_time,
		const char *token, const char *key)
{
	if (pid <= 0 || pgid <= 0 || start_time > INT64_MAX || !token ||
	    !journal_token_valid(token))
		return -EINVAL;
	if (!key)
		key = "";
	/* The pid can only be back if its earlier process is gone. */
	ssize_t at = journal_find(j, pid);
	struct journal_entry *e;
	if (at >= 0) {
		e = &j->entries[at];
		journal_entry_clear(e);
	} else {
		if (j->n >= JOURNAL_MAX_ENTRIES)
			return -ENOSPC;
		e = journal_append(j);
	}
	e->pid = pid;
	e->pgid = pgid;
	e->start_time = start_time;
	memcpy(e->token, token, JOURNAL_TOKEN_LEN + 1);
	e->key = journal_key_clean(key, strlen(key));
	return journal_changed(j);
}

int journal_remove(struct journal *j, pid_t pid)
{
	ssize_t at = journal_find(j, pid);
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
	return j->n;
}
