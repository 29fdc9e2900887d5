/*
 * Internal to the supervisor: not for use outside src/proc. The state of
 * one supervised process, shared by the files that spawn and feed it
 * (supervisor.c), end it (sup_stop.c, through the stop ladder of stop.h)
 * and run its command (exec.c).
 */
#ifndef MCPV_PROC_SUPERVISOR_INT_H
#define MCPV_PROC_SUPERVISOR_INT_H

/* The kernel buffer asked for on the server's stdout and stderr. */
#define SUP_PIPE_BYTES (1024 * 1024)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "proc/stop.h"
#include "proc/supervisor.h"
#include "util/buf.h"

#define SUP_OUT_READ_BUF (64 * 1024)
#define SUP_ERR_READ_BUF 4096
/* The storage that gathers a loop turn's messages for stdin is kept
 * between turns up to this size; a larger burst's is given back. */
#define SUP_GATHER_KEEP (64 * 1024)

enum sup_state {
	SUP_RUNNING,	/* serving */
	SUP_STOP_STDIN, /* stdin closed, waiting a grace for the leader */
	SUP_STOPPING,	/* the stop ladder runs */
	SUP_CLOSING,	/* handles closing; on_closed follows */
};

struct sup_line {
	size_t len;
	bool cut; /* bytes past SUP_LOG_LINE_MAX were dropped */
	char data[SUP_LOG_LINE_MAX];
};

/* The log streams: stderr always, stdout in SUP_LOGS. */
enum { SUP_ERR, SUP_OUT, SUP_NSTREAMS };

struct supervisor {
	struct sup_cbs cbs;
	void *ctx;
	enum sup_mode mode;
	enum sup_state state;
	pid_t pid; /* also the process group id */
	uint64_t start_time;
	uint64_t grace_ms;

	uv_process_t proc;
	uv_pipe_t in, out, err;
	uv_timer_t stdin_timer; /* the grace for stdin's EOF to end it */
	uv_timer_t eof_timer;
	/* Writes what sup_send gathered, once per loop turn, just before
	 * the loop waits (see sup_flush_stdin). */
	uv_prepare_t flush;
	int open_handles;
	struct proc_stop *stop; /* from SUP_STOPPING until closed */

	bool discard;	     /* spawn failed: free silently once closed */
	bool exited;	     /* libuv reaped the leader */
	bool reported;	     /* on_exit was called */
	bool out_done;	     /* stdout reached EOF or failed */
	bool err_done;	     /* stderr reached EOF or failed */
	bool out_paused;     /* its owner asked to stop reading stdout */
	bool want_drain;     /* a send got -ENOBUFS: on_drain is owed */
	int64_t exit_status; /* from libuv, once exited */
	int term_signal;

	/* Messages sent this loop turn, framed, not yet written: with
	 * in.write_queue_size, what counts against SUP_MAX_QUEUED. */
	struct buf gather;

	struct framer *framer;
	char out_buf[SUP_OUT_READ_BUF];
	char err_buf[SUP_ERR_READ_BUF];

	/* The ring of recent log lines, oldest first from err_next -
	 * err_count. A line enters when its first byte comes; until its
	 * '\n' it is its stream's open slot (-1: none). */
	struct sup_line err_ring[SUP_LOG_LINES];
	int err_next;  /* slot the next line opens */
	int err_count; /* lines held, up to SUP_LOG_LINES */
	int open_slot[SUP_NSTREAMS];

	/* The owner token in the server's environment, by which the ladder
	 * finds its processes that left the group. */
	char owner_token[SUP_TOKEN_MAX + 1];
};

/* ---- supervisor.c ---- */

/* Writes what was gathered for stdin now: what the pipe takes at once,
 * the rest queued behind any write already queued (never before it).
 * Called at the end of the turn and before stdin is closed on purpose, so
 * a message sent just before the close still goes. */
void sup_flush_stdin(struct supervisor *c);

/* ---- sup_stop.c ---- */

/* Calls on_exit unless it was called already. */
void sup_report_exit(struct supervisor *c, int64_t exit_status,
		     int term_signal);
/* Closes every handle; the conn is freed (after on_closed unless
 * c->discard) once the last close callback has run. */
void sup_close_all(struct supervisor *c);
/* libuv reaped the leader: a stop in progress moves on. */
void sup_leader_reaped(struct supervisor *c);

/* ---- exec.c ---- */

/* The exec shim's path, NULL when commands are spawned directly. */
const char *sup_exec_shim(void);
/* The runtime's environment with env laid over it and
 * PROC_OWNER_ENV=token (when token is set); free with sup_env_free. */
char **sup_build_env(char *const *env, const char *token);
/* The file execvp would run for cmd with the child's env and cwd, in *out
 * (caller frees). 0, -ENOENT, -EACCES, -ENAMETOOLONG or -EINVAL. */
int sup_resolve_command(const char *cmd, char *const *env, const char *cwd,
			char **out);
/* The argv to spawn: through the shim when one is set, else command and
 * args. Borrows every string; the caller frees only the array. */
char **sup_build_argv(const char *command, const char *file, const char *parent,
		      char *const *args);

#endif
