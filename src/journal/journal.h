/*
 * The ownership journal: every process the runtime starts (pid, start time,
 * process group, owner token, instance key), kept in a file in the state
 * directory with atomic replace, and the reconciliation that the next
 * `serve` runs after a crash: it stops what it owns and still runs, and
 * never signals anything it did not start.
 */
#ifndef MCPV_JOURNAL_H
#define MCPV_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JOURNAL_FILE "journal.json"
#define JOURNAL_MAX_BYTES (4 * 1024 * 1024)
#define JOURNAL_MAX_ENTRIES 4096
/* The environment variable every spawned server gets: a random token per
 * spawn, inherited by its children, so that a grandchild can be proved to
 * be ours after its parent is gone. */
#define JOURNAL_OWNER_ENV "MCPVISOR_OWNER"
#define JOURNAL_TOKEN_LEN 32

struct journal;

struct journal_entry {
	pid_t pid;
	pid_t pgid;
	uint64_t start_time; /* /proc/PID/stat field 22 */
	char token[JOURNAL_TOKEN_LEN + 1];
	char *key; /* instance key, for the log */
};

/* Opens (creating if needed) the journal in state_dir. Entries already in
 * the file are kept (until journal_reconcile). Returns 0 or -errno. */
int journal_open(const char *state_dir, struct journal **out);
void journal_free(struct journal *j);

/* A fresh random owner token (JOURNAL_TOKEN_LEN hex chars). */
void journal_new_token(char out[JOURNAL_TOKEN_LEN + 1]);

/* Records a started process and rewrites the file atomically. */
int journal_add(struct journal *j, pid_t pid, pid_t pgid, uint64_t start_time,
		const char *token, const char *key);
/* Forgets a process once it and its group are gone; rewrites the file. */
int journal_remove(struct journal *j, pid_t pid);
size_t journal_count(const struct journal *j);

struct journal_report {
	unsigned entries;    /* entries found in the file */
	unsigned stopped;    /* processes signalled (leaders + members) */
	unsigned left_alone; /* pids alive but not ours (start time or
				token differs) */
	unsigned gone;	     /* entries whose processes were all gone */
};

/* After a crash: for each entry left in the file, stop what is provably
 * ours and still alive, group and all: the leader when its pid's start time
 * matches, and every process of its group whose environment holds its
 * owner token. SIGTERM, then SIGKILL after grace_ms for what outlives it
 * (blocking; this runs before the loop starts). Nothing else is ever
 * signalled. Empties the journal afterwards. */
int journal_reconcile(struct journal *j, unsigned grace_ms,
		      struct journal_report *report);

#endif
