/*
 * Internal to src/proc: not for use outside that folder. The state of
 * one supervised process, shared by the files that spawn and feed it
 * (supervisor.c), stop it (ladder.c), find its strays (strays.c) and run its
 * command (exec.c).
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

#include "proc/procfs.h"
#include "proc/snap.h"
#include "proc/supervisor.h"

#define SUP_OUT_READ_BUF (64 * 1024)
#define SUP_ERR_READ_BUF 4096

enum sup_state {
	SUP_RUNNING,	/* serving */
	SUP_STOP_STDIN, /* stdin closed, waiting for the group to leave */
	SUP_STOP_TERM,	/* group sent SIGTERM, waiting */
	SUP_STOP_KILL,	/* group sent SIGKILL, waiting */
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
	bool want_drain;     /* a send got -ENOBUFS: on_drain is owed */
	int64_t exit_status; /* from libuv, once exited */
	int term_signal;

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
	 * finds its processes that left the group (strays.c). */
	char owner_token[SUP_TOKEN_MAX + 1];
	struct proc_owned *strays; /* found outside the group, to stop */
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
	struct proc_owned *scan_found;
	size_t scan_nfound;
};

/* ---- ladder.c ---- */

/* Calls on_exit unless it was called already. */
void sup_report_exit(struct supervisor *c, int64_t exit_status,
		     int term_signal);
/* Closes every handle; the conn is freed (after on_closed unless
 * c->discard) once the last close callback has run. */
void sup_close_all(struct supervisor *c);
/* One open handle (or scan) fewer; the last frees the conn. */
void sup_release(struct supervisor *c);
/* The signal of the ladder's current step, 0 before SIGTERM. */
int sup_ladder_signal(const struct supervisor *c);
/* Re-evaluates a stop in progress, e.g. once the leader has been reaped. */
void sup_ladder_check(struct supervisor *c);

/* ---- strays.c ---- */

/* Starts a search of /proc (in the thread pool) for processes of our uid
 * outside the group that carry the conn's owner token. When it is done they
 * join c->strays, get the signal of the ladder's current step, and the
 * ladder is checked again. No-op without an owner token. */
void sup_strays_scan(struct supervisor *c);
/* Drops strays that are gone (reaping those that died as our children);
 * returns how many are left. */
size_t sup_strays_prune(struct supervisor *c);
/* Signals each stray that is still the process found. */
void sup_strays_signal(struct supervisor *c, int sig);
void sup_strays_free(struct supervisor *c);

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
