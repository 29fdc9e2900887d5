/*
 * Internal to src/transport: not for use outside that folder. The state of
 * one stdio connection, shared by the files that spawn and feed it
 * (stdio.c), stop it (ladder.c) and run its command (exec.c).
 */
#ifndef MCPV_TRANSPORT_STDIO_INT_H
#define MCPV_TRANSPORT_STDIO_INT_H

/* The kernel buffer asked for on the server's stdout and stderr. */
#define STDIO_PIPE_BYTES (1024 * 1024)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "transport/stdio.h"
#include "util/procfs.h"

#define STDIO_OUT_READ_BUF (64 * 1024)
#define STDIO_ERR_READ_BUF 4096

enum stdio_state {
	STDIO_RUNNING,	  /* serving */
	STDIO_STOP_STDIN, /* stdin closed, waiting for the group to leave */
	STDIO_STOP_TERM,  /* group sent SIGTERM, waiting */
	STDIO_STOP_KILL,  /* group sent SIGKILL, waiting */
	STDIO_CLOSING,	  /* handles closing; on_closed follows */
};

struct stdio_errline {
	size_t len;
	bool cut; /* bytes past STDIO_STDERR_LINE_MAX were dropped */
	char data[STDIO_STDERR_LINE_MAX];
};

struct stdio_conn {
	struct stdio_conn_cbs cbs;
	void *ctx;
	enum stdio_state state;
	pid_t pid; /* also the process group id */
	uint64_t start_time;
	uint64_t grace_ms;

	uv_process_t proc;
	uv_pipe_t in, out, err;
	uv_timer_t ladder_timer;
	uv_timer_t recheck_timer;
	uv_timer_t eof_timer;
	uv_signal_t sigchld;
	int open_handles;

	bool discard;	     /* spawn failed: free silently once closed */
	bool exited;	     /* libuv reaped the leader */
	bool reported;	     /* on_exit was called */
	bool out_done;	     /* stdout reached EOF or failed */
	bool err_done;	     /* stderr reached EOF or failed */
	bool out_paused;     /* its owner asked to stop reading stdout */
	bool group_gone;     /* kill(-pgid, 0) said ESRCH: never signal again */
	int64_t exit_status; /* from libuv, once exited */
	int term_signal;

	struct framer *framer;
	char out_buf[STDIO_OUT_READ_BUF];
	char err_buf[STDIO_ERR_READ_BUF];

	struct stdio_errline err_ring[STDIO_STDERR_LINES];
	int err_next;  /* slot the next line opens */
	int err_count; /* lines held, up to STDIO_STDERR_LINES */
	bool err_open; /* the newest line has not seen its '\n' yet */

	/* The owner token in the server's environment, by which the ladder
	 * finds its processes that left the group (proc.c). */
	char owner_name[32];
	char owner_token[65];
	struct procfs_owned *strays; /* found outside the group, to stop */
	size_t nstrays;
	/* The /proc search runs in the thread pool (it reads every
	 * process's stat line); while it does, it counts as an open handle. */
	uv_work_t scan_req;
	bool scanning;
	bool scan_again;       /* asked for while one was running */
	bool scan_after_group; /* the running one began after the group went */
	bool scan_clean;       /* one that began after the group went found
				  nothing, and nothing was found since */
	pid_t scan_ancestor;
	uid_t scan_uid;
	int scan_rc;
	struct procfs_owned *scan_found;
	size_t scan_nfound;
};

/* ---- ladder.c ---- */

/* Calls on_exit unless it was called already. */
void stdio_report_exit(struct stdio_conn *c, int64_t exit_status,
		       int term_signal);
/* Closes every handle; the conn is freed (after on_closed unless
 * c->discard) once the last close callback has run. */
void stdio_close_all(struct stdio_conn *c);
/* One open handle (or scan) fewer; the last frees the conn. */
void stdio_release(struct stdio_conn *c);
/* The signal of the ladder's current step, 0 before SIGTERM. */
int stdio_ladder_signal(const struct stdio_conn *c);
/* Re-evaluates a stop in progress, e.g. once the leader has been reaped. */
void stdio_ladder_check(struct stdio_conn *c);

/* ---- proc.c ---- */

/* Starts a search of /proc (in the thread pool) for processes of our uid
 * outside the group that carry the conn's owner token. When it is done they
 * join c->strays, get the signal of the ladder's current step, and the
 * ladder is checked again. No-op without an owner token. */
void stdio_strays_scan(struct stdio_conn *c);
/* Drops strays that are gone (reaping those that died as our children);
 * returns how many are left. */
size_t stdio_strays_prune(struct stdio_conn *c);
/* Signals each stray that is still the process found. */
void stdio_strays_signal(struct stdio_conn *c, int sig);
void stdio_strays_free(struct stdio_conn *c);

/* ---- exec.c ---- */

/* The exec shim's path, NULL when commands are spawned directly. */
const char *stdio_exec_shim(void);
/* The file execvp would run for cmd with the child's env and cwd, in *out
 * (caller frees). 0, -ENOENT, -EACCES, -ENAMETOOLONG or -EINVAL. */
int stdio_resolve_command(const char *cmd, char *const *env, const char *cwd,
			  char **out);
/* The argv to spawn: through the shim when one is set, else command and
 * args. Borrows every string; the caller frees only the array. */
char **stdio_build_argv(const char *command, const char *file,
			const char *parent, char *const *args);

#endif
