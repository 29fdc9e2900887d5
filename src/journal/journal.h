/*
 * The ownership journal: every process the runtime starts (pid, start time,
 * process group, owner token, instance key), kept in a file in the state
 * directory with atomic replace, and the reconciliation that the next
 * `serve` runs after a crash: it stops what it owns and still runs, and
 * never signals anything it did not start.
 *
 * Order of writes: owner tokens are written to the file (reserved) before
 * any process gets one, so whatever a server starts carries a token that is
 * already on disk, however soon the runtime dies. The entry naming the
 * leader's pid is written after spawn, in the next loop turn; the leader
 * itself cannot outlive the runtime (parent-death signal) and is also
 * found by its token. So writes can be batched and leave the loop.
 */
#ifndef MCPV_JOURNAL_H
#define MCPV_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#define JOURNAL_FILE "journal.json"
#define JOURNAL_MAX_BYTES (4 * 1024 * 1024)
#define JOURNAL_MAX_ENTRIES 4096
/* The environment variable every spawned server gets: a random token per
 * spawn, inherited by its children, so that a grandchild can be proved to
 * be ours after its parent is gone. */
#define JOURNAL_OWNER_ENV "MCPVISOR_OWNER"
#define JOURNAL_TOKEN_LEN 32

struct journal_entry {
	pid_t pid;
	pid_t pgid;
	uint64_t start_time; /* /proc/PID/stat field 22 */
	char token[JOURNAL_TOKEN_LEN + 1];
	char *key; /* instance key, for the log */
};

/* Tokens kept written ahead: refilled (off the loop) when fewer than
 * JOURNAL_RESERVE_LOW are left. */
#define JOURNAL_RESERVE 64
#define JOURNAL_RESERVE_LOW 32

struct journal;

/* Opens (creating if needed) the journal in state_dir. Entries already in
 * the file are kept (until journal_reconcile). Returns 0 or -errno. */
int journal_open(const char *state_dir, struct journal **out);
/* Writes what is pending (on this thread) and frees. Detach first. */
void journal_free(struct journal *j);

/* From now on changes are written off the loop: one snapshot per loop turn
 * at most, written and fsynced in the thread pool. Until then (and in tools
 * without a loop) every change is written at once. Also fills the reserve
 * of tokens. */
void journal_attach(struct journal *j, uv_loop_t *loop);
/* Closes the loop handle (before the loop is closed); a write in flight
 * still completes in the loop. Later changes are written at once. */
void journal_detach(struct journal *j);

/* A fresh random owner token (JOURNAL_TOKEN_LEN hex chars). */
void journal_new_token(char out[JOURNAL_TOKEN_LEN + 1]);

/* An owner token for a process about to start, already on disk: taken from
 * the reserve, or, when none written is left, after a write on this thread.
 * j NULL: a fresh random token (no journal). */
void journal_take_token(struct journal *j, char out[JOURNAL_TOKEN_LEN + 1]);

/* Records a started process; the file follows (see journal_attach). */
int journal_add(struct journal *j, pid_t pid, pid_t pgid, uint64_t start_time,
		const char *token, const char *key);
/* Forgets a process once it and its group are gone. */
int journal_remove(struct journal *j, pid_t pid);
size_t journal_count(const struct journal *j);

struct journal_stats {
	unsigned changes;     /* adds, removes, reserve refills */
	unsigned writes;      /* files written (each with one fsync) */
	unsigned sync_writes; /* of those, written on the caller's thread */
};
struct journal_stats journal_stats(const struct journal *j);

struct journal_report {
	unsigned entries;    /* entries found in the file */
	unsigned stopped;    /* processes signalled (leaders + members) */
	unsigned left_alone; /* pids alive but not ours (start time or
				token differs) */
	unsigned gone;	     /* entries whose processes were all gone */
};

/* After a crash: for each entry left in the file, stop what is provably
 * ours and still alive: the leader when its pid's start time matches, and
 * every process of our uid, in its group or not (setsid), whose environment
 * holds its owner token or a reserved one. SIGTERM, then SIGKILL after
 * grace_ms for what outlives it (blocking; this runs before the loop
 * starts). Nothing else is ever signalled. Empties the journal afterwards.
 */
int journal_reconcile(struct journal *j, unsigned grace_ms,
		      struct journal_report *report);

#endif
