/*
 * Internal to src/journal: the journal's state, shared by the file and its
 * writer (journal.c) and the crash reconciliation (reconcile.c).
 */
#ifndef MCPV_JOURNAL_INT_H
#define MCPV_JOURNAL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "journal/journal.h"

/* How much of a key a log line shows. */
#define JOURNAL_KEY_LOG 60

/* A token written to the file before any process carries it. */
struct journal_reserved {
	char token[JOURNAL_TOKEN_LEN + 1];
	uint64_t seq; /* the first snapshot that holds it */
};

struct journal {
	char *path;
	struct journal_entry *entries;
	size_t n;
	size_t cap;
	struct journal_reserved *reserved;
	size_t nreserved;
	/* A change not yet written. */
	bool dirty;
	/* The file held something we dropped (corrupt, invalid entries): the
	 * next reconcile rewrites it even when nothing valid was left. */
	bool stale;

	/* Snapshots: seq counts those taken; durable_seq is the newest one
	 * known on disk. Only the writer thread and the sync path write the
	 * file, one at a time under write_lock, and never an older snapshot
	 * over a newer one (written_seq, under write_lock). */
	uint64_t seq;
	uint64_t durable_seq;
	pthread_mutex_t write_lock;
	uint64_t written_seq;

	/* Attached to a loop: changes are written by a prepare handle (it
	 * runs before the loop waits), at most once per loop turn, in the
	 * thread pool. */
	uv_loop_t *loop;
	uv_prepare_t prepare;
	bool attached;
	bool in_flight;
	struct journal_stats stats;
};

void journal_clear(struct journal *j);
/* Frees what one entry holds. */
void journal_entry_clear(struct journal_entry *e);
/* The container entries' part of journal_reconcile (containers.c): what
 * it could not settle is marked carried. */
void journal_reconcile_containers(struct journal *j, unsigned grace_ms,
				  struct journal_report *r);
/* Writes the current state at once, on this thread. 0 or -errno. */
int journal_write_now(struct journal *j);

#endif
