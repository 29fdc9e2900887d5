/*
 * The ownership journal: the list of processes the runtime started, kept in
 * STATE_DIR/journal.json by atomic replace, and the reconciliation after a
 * crash that stops only what /proc proves is ours (pid + start time for a
 * leader, the owner token in the environment for the rest of its group).
 */
#include "journal/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/log.h"
#include "util/random.h"
#include "util/xmalloc.h"

#define JOURNAL_FORMAT 1
/* Keys are only for the log; bounding them keeps a full journal
 * (JOURNAL_MAX_ENTRIES of ~400 bytes at most) far below JOURNAL_MAX_BYTES. */
#define JOURNAL_KEY_MAX 128
/* How much of a key a log line shows. */
#define JOURNAL_KEY_LOG 60
/* /proc/PID/stat is a few hundred bytes; comm is at most 16. */
#define JOURNAL_STAT_MAX 4096
#define JOURNAL_ENVIRON_MAX (256 * 1024)
#define JOURNAL_POLL_MS 10
/* After SIGKILL a process goes at once unless stuck in the kernel. */
#define JOURNAL_KILL_WAIT_MS 1000

struct journal {
	char *path;
	struct journal_entry *entries;
	size_t n;
	size_t cap;
	/* The file held something we dropped (corrupt, invalid entries): the
	 * next reconcile rewrites it even when nothing valid was left. */
	bool dirty;
};

/* What /proc says about one process. */
struct journal_proc {
	pid_t pid;
	pid_t pgrp;
	char state;
	uint64_t start_time;
};

/* A process proven ours, to be stopped. */
struct journal_target {
	pid_t pid;
	uint64_t start_time;
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

static void journal_clear(struct journal *j)
{
	for (size_t i = 0; i < j->n; i++)
		journal_entry_clear(&j->entries[i]);
	j->n = 0;
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
		j->dirty = true;
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
		j->dirty = true;
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
	if (skipped) {
		log_warn("journal %s: skipped %zu invalid entries", j->path,
			 skipped);
		j->dirty = true;
	}
	json_decref(root);
	free(data);
	return 0;
corrupt:
	json_decref(root);
	free(data);
	j->dirty = true;
	return 0;
}

static int journal_write(struct journal *j)
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
	json_t *root = json_pack("{s:i, s:o}", "format", JOURNAL_FORMAT,
				 "entries", arr);
	char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		return -ENOMEM;
	int rc = fsutil_write_atomic(j->path, text, strlen(text), 0600);
	free(text);
	if (rc < 0)
		log_error("cannot write journal %s: %s", j->path,
			  strerror(-rc));
	else
		j->dirty = false;
	return rc;
}

int journal_open(const char *state_dir, struct journal **out)
{
	int rc = fsutil_mkdir_p(state_dir, 0700);
	if (rc < 0)
		return rc;
	struct journal *j = xcalloc(1, sizeof *j);
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
	journal_clear(j);
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
	return journal_write(j);
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
	return journal_write(j);
}

size_t journal_count(const struct journal *j)
{
	return j->n;
}

/* Reads /proc/PID/stat: -ENOENT once the pid is free. Fields are counted
 * after the last ')' since comm may hold spaces and parentheses. */
static int journal_proc_stat(pid_t pid, struct journal_proc *p)
{
	char path[64], buf[JOURNAL_STAT_MAX];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	ssize_t n;
	do {
		n = read(fd, buf, sizeof buf - 1);
	} while (n < 0 && errno == EINTR);
	int saved = errno;
	close(fd);
	if (n < 0)
		return saved == ESRCH ? -ENOENT : -saved;
	buf[n] = '\0';
	char *s = strrchr(buf, ')');
	if (!s)
		return -EINVAL;
	s++;
	/* s now starts at field 3 (after one space). */
	int field = 2;
	char *save = NULL;
	bool have_pgrp = false;
	p->pid = pid;
	for (char *tok = strtok_r(s, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save)) {
		field++;
		char *end;
		if (field == 3) {
			p->state = tok[0];
		} else if (field == 5) {
			long v = strtol(tok, &end, 10);
			if (*end || v < 0 || v > INT_MAX)
				return -EINVAL;
			p->pgrp = (pid_t)v;
			have_pgrp = true;
		} else if (field == 22) {
			errno = 0;
			unsigned long long v = strtoull(tok, &end, 10);
			if (*end || errno)
				return -EINVAL;
			p->start_time = v;
			return have_pgrp ? 0 : -EINVAL;
		}
	}
	return -EINVAL;
}

/* True when pid's environment holds exactly OWNER=token as one entry.
 * Unreadable (another user's process, or gone) means not ours. */
static bool journal_proc_has_token(pid_t pid, const char *token)
{
	char path[64], needle[sizeof JOURNAL_OWNER_ENV + JOURNAL_TOKEN_LEN + 1];
	snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
	int nlen = snprintf(needle, sizeof needle, "%s=%s", JOURNAL_OWNER_ENV,
			    token);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char *data = xmalloc(JOURNAL_ENVIRON_MAX);
	size_t len = 0;
	while (len < JOURNAL_ENVIRON_MAX) {
		ssize_t r = read(fd, data + len, JOURNAL_ENVIRON_MAX - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	bool found = false;
	/* Only NUL-terminated entries count: one cut off by the bound is
	 * not proof. */
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\0')
			continue;
		if (i - start == (size_t)nlen &&
		    memcmp(data + start, needle, (size_t)nlen) == 0) {
			found = true;
			break;
		}
		start = i + 1;
	}
	free(data);
	return found;
}

/* Every live process in /proc; a zombie ('Z', or 'X' on its way out) is
 * already dead and only waits for its parent. */
static int journal_proc_scan(struct journal_proc **out, size_t *count)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	struct journal_proc *procs = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);
		if (*end || v <= 0 || v > INT_MAX)
			continue;
		struct journal_proc p;
		if (journal_proc_stat((pid_t)v, &p) < 0 || p.state == 'Z' ||
		    p.state == 'X')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			procs = xrealloc(procs, cap * sizeof *procs);
		}
		procs[n++] = p;
	}
	closedir(d);
	*out = procs;
	*count = n;
	return 0;
}

/* Still the process we proved ours, and not yet dead? */
static bool journal_target_alive(const struct journal_target *t)
{
	struct journal_proc p;
	return journal_proc_stat(t->pid, &p) == 0 && p.state != 'Z' &&
	       p.state != 'X' && p.start_time == t->start_time;
}

/* Signals t only if it is still the same process. With a pidfd the check
 * and the signal refer to one process, so a pid reused in between is never
 * hit; kill() after the check is the fallback where pidfds are missing. Returns
 * true when the signal was delivered. */
static bool journal_target_signal(const struct journal_target *t, int sig)
{
	int fd = pidfd_open(t->pid, 0);
	/* ENOSYS, or EPERM from a seccomp filter that predates pidfds. */
	if (fd < 0 && errno != ENOSYS && errno != EPERM)
		return false;
	bool sent = false;
	if (journal_target_alive(t)) {
		if (fd >= 0)
			sent = pidfd_send_signal(fd, sig, NULL, 0) == 0;
		else
			sent = kill(t->pid, sig) == 0;
	}
	if (fd >= 0)
		close(fd);
	return sent;
}

static void journal_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Polls until every target is gone or about limit_ms passed; counts
 * iterations rather than reading a clock, which tests may have frozen. */
static size_t journal_await_gone(const struct journal_target *t, size_t n,
				 unsigned limit_ms)
{
	unsigned waited = 0;
	for (;;) {
		size_t alive = 0;
		for (size_t i = 0; i < n; i++)
			alive += journal_target_alive(&t[i]);
		if (alive == 0 || waited >= limit_ms)
			return alive;
		journal_sleep_ms(JOURNAL_POLL_MS);
		waited += JOURNAL_POLL_MS;
	}
}

static void journal_target_push(struct journal_target **t, size_t *n,
				size_t *cap, const struct journal_proc *p)
{
	for (size_t i = 0; i < *n; i++) {
		if ((*t)[i].pid == p->pid)
			return;
	}
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*t = xrealloc(*t, *cap * sizeof **t);
	}
	(*t)[(*n)++] = (struct journal_target){p->pid, p->start_time};
}

int journal_reconcile(struct journal *j, unsigned grace_ms,
		      struct journal_report *report)
{
	struct journal_report r = {0};
	r.entries = (unsigned)j->n;
	if (j->n == 0 && !j->dirty) {
		if (report)
			*report = r;
		return 0;
	}
	struct journal_proc *procs = NULL;
	size_t nprocs = 0;
	int rc = journal_proc_scan(&procs, &nprocs);
	if (rc < 0) {
		/* Without /proc nothing can be proved ours: keep the
		 * journal for a later try rather than forget it. */
		log_error("cannot scan /proc: %s", strerror(-rc));
		return rc;
	}
	struct journal_target *targets = NULL;
	size_t ntargets = 0, cap = 0;
	pid_t self = getpid();
	for (size_t i = 0; i < j->n; i++) {
		const struct journal_entry *e = &j->entries[i];
		size_t before = ntargets;
		for (size_t k = 0; k < nprocs; k++) {
			const struct journal_proc *p = &procs[k];
			bool leader = p->pid == e->pid;
			if (!leader && p->pgrp != e->pgid)
				continue;
			bool ours = p->pid != self &&
				    (leader ? p->start_time == e->start_time
					    : journal_proc_has_token(p->pid,
								     e->token));
			if (!ours && leader) {
				log_info("pid %ld now belongs to another "
					 "process; left alone",
					 (long)p->pid);
				r.left_alone++;
				continue;
			}
			if (!ours) {
				log_info("pid %ld in group %ld lacks the owner "
					 "token; left alone",
					 (long)p->pid, (long)e->pgid);
				r.left_alone++;
				continue;
			}
			journal_target_push(&targets, &ntargets, &cap, p);
		}
		if (ntargets == before)
			r.gone++;
		else
			log_info("stopping %zu leftover process(es) of pid %ld "
				 "(%.*s)",
				 ntargets - before, (long)e->pid,
				 JOURNAL_KEY_LOG, e->key);
	}
	free(procs);

	for (size_t i = 0; i < ntargets; i++)
		r.stopped += journal_target_signal(&targets[i], SIGTERM);
	if (journal_await_gone(targets, ntargets, grace_ms) > 0) {
		for (size_t i = 0; i < ntargets; i++) {
			if (journal_target_signal(&targets[i], SIGKILL))
				log_info("pid %ld outlived SIGTERM; killed",
					 (long)targets[i].pid);
		}
		size_t left = journal_await_gone(targets, ntargets,
						 JOURNAL_KILL_WAIT_MS);
		if (left)
			log_warn("%zu process(es) still alive after SIGKILL",
				 left);
	}
	free(targets);

	log_info("journal reconciled: %u entries, %u stopped, %u left alone, "
		 "%u gone",
		 r.entries, r.stopped, r.left_alone, r.gone);
	journal_clear(j);
	rc = journal_write(j);
	if (report)
		*report = r;
	return rc;
}
