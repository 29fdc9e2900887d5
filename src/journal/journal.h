/*
 * The ownership journal: everything the runtime starts and must stop, as
 * typed owned resources (transport/upstream.h): a process (pid, start
 * time, process group, owner token, the loopback port it serves on) or a
 * container (engine, id, name, owner token as its label), each with its
 * instance key; kept in a file in the state directory with atomic replace,
 * and the reconciliation that the next `serve` runs after a crash: it
 * stops what it owns and still runs, and never signals anything it did not
 * start: processes by /proc, containers through their engine, by the owner
 * token in their label. A container entry whose engine cannot answer is
 * kept and written back for the next start.
 *
 * Order of writes: owner tokens are written to the file (reserved) before
 * any process gets one, so whatever a server starts carries a token that is
 * already on disk, however soon the runtime dies. The entry naming the
 * leader's pid is written after spawn, in the next loop turn; the leader
 * itself cannot outlive the runtime (parent-death signal) and is also
 * found by its token. So writes can be batched and leave the loop. A
 * container outlives the runtime and is found through its engine, so the
 * first container entry naming an engine is written before its CLI runs
 * (journal_add_owned); later ones are found by their reserved token on an
 * engine the file already names.
 */
#ifndef MCPV_JOURNAL_H
#define MCPV_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "transport/upstream.h"

#define JOURNAL_FILE "journal.json"
#define JOURNAL_MAX_BYTES (4 * 1024 * 1024)
#define JOURNAL_MAX_ENTRIES 4096
/* The length of an owner token (proc/owner.h) as the journal hands out. */
#define JOURNAL_TOKEN_LEN 32

/* Bounds of a container's fields: with the key's, a full journal of
 * containers at every bound is about 3.1 MB, under JOURNAL_MAX_BYTES
 * (test_journal_owned checks it). */
#define JOURNAL_ENGINE_MAX 200	       /* engine as run: a name or a path */
#define JOURNAL_CONTAINER_ID_MAX 64    /* hex, as podman and docker give */
#define JOURNAL_CONTAINER_NAME_MAX 128 /* [A-Za-z0-9][A-Za-z0-9_.-]* */

struct journal_entry {
	enum upstream_owned_kind kind;
	/* UPSTREAM_OWNED_PROCESS */
	pid_t pid;
	pid_t pgid;
	uint64_t start_time; /* /proc/PID/stat field 22 */
	int port;	     /* loopback port it serves on, 0: none */
	/* UPSTREAM_OWNED_CONTAINER */
	char *engine;
	char *container_id;   /* NULL when only the name is known */
	char *container_name; /* NULL when only the id is known */
	char token[JOURNAL_TOKEN_LEN + 1];
	char *key; /* instance key, for the log */
	/* Read from the file and kept by a reconcile that cannot act on
	 * it (a container): not this runtime's to see gone. */
	bool carried;
	/* The first snapshot that holds it (0: read from the file). */
	uint64_t seq;
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

/* Records something started (o is copied; key is the instance's public
 * key, for the log); the file follows (see journal_attach), but a new
 * container whose engine no entry on disk names yet is written at once,
 * on this thread: it outlives the runtime, and the next start must know
 * which engine to ask (its token is a reserved one). A process is known by
 * its pid, a container by its engine and id (else its name): adding one
 * already there replaces it (keeping an id or name the new record lacks).
 * 0, -EINVAL (a field missing, out of range or not of its form), -ENOSPC
 * (JOURNAL_MAX_ENTRIES). */
int journal_add_owned(struct journal *j, const struct upstream_owned *o,
		      const char *key);
/* Forgets it once it is gone (a process and its group; a container
 * removed): by pid, or by container id, else name (on o's engine when o
 * names one). 0 or -ENOENT. */
int journal_remove_owned(struct journal *j, const struct upstream_owned *o);
/* The entries this runtime must still see gone: every entry but those a
 * reconcile kept without settling them (a container whose engine was
 * missing or failed). */
size_t journal_count(const struct journal *j);
/* Those entries named for a person ("container mcpv-x-1a2b (podman),
 * process 123"), comma-separated; NULL when none. Caller frees. */
char *journal_left_text(const struct journal *j);

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
	unsigned gone;	     /* entries whose processes were all gone, or
				whose container no longer exists */
	unsigned kept;	     /* container entries kept for the next start:
				their engine was missing or failed, or
				their container could not be removed */
	unsigned containers_stopped;	/* stopped and removed */
	unsigned containers_left_alone; /* our label, another token */
};

/* After a crash: for each entry left in the file, stop what is provably
 * ours and still alive: the leader when its pid's start time matches, and
 * every process of our uid, in its group or not (setsid), whose environment
 * holds its owner token or a reserved one. SIGTERM, then SIGKILL after
 * grace_ms for what outlives it (blocking; this runs before the loop
 * starts). Nothing else is ever signalled. Then, for each engine that
 * container entries name: every container carrying the ENGINE_LABEL_OWNER
 * label whose value is an entry's token or a reserved one is stopped
 * (stop -t, grace_ms rounded up to seconds) and removed; no other
 * container is named to the engine. When the engine is missing, fails or
 * cannot remove one, the entries concerned are kept (and logged with the
 * engine's error line); every engine command is bounded in time. Empties
 * the journal of everything else afterwards.
 */
int journal_reconcile(struct journal *j, unsigned grace_ms,
		      struct journal_report *report);

#endif
