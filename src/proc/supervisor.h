/*
 * The process supervisor: runs one server program for a transport and
 * ends it. It spawns the command through the exec step (parent-death
 * signal) in its own process group, with the runtime's environment, the
 * server's env laid over it and PROC_OWNER_ENV=token; keeps the recent
 * lines the program printed in a bounded ring; and ends it: stdin closed,
 * a grace to leave by itself, then the stop ladder (proc/stop.h) over its
 * group and the processes that left the group, found by the owner token.
 *
 * Its stdio is attached one of two ways:
 *   SUP_PIPES: messages. stdin is a write queue (SUP_MAX_QUEUED bytes),
 *     stdout is framed as newline-delimited JSON (jsonrpc/framer.c),
 *     stderr is log lines. For stdio MCP servers.
 *   SUP_LOGS: stdin is /dev/null; stdout and stderr are both log lines
 *     (on_log and the ring). For programs reached another way (a local
 *     HTTP server on a port, a container CLI).
 *
 * Decides no policy (no restarts, no backoff): it reports the exit.
 */
#ifndef MCPV_PROC_SUPERVISOR_H
#define MCPV_PROC_SUPERVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "config/config.h"
#include "jsonrpc/jsonrpc.h"
#include "proc/owner.h"
#include "proc/stop.h"

#define SUP_MAX_LINE JR_MAX_MESSAGE	   /* one JSON-RPC message */
#define SUP_LOG_LINES 50		   /* ring of recent log lines */
#define SUP_LOG_LINE_MAX 512		   /* longer log lines are cut */
#define SUP_MAX_QUEUED (64 * 1024 * 1024)  /* bytes waiting for stdin */
#define SUP_TOKEN_MAX PROC_OWNER_TOKEN_MAX /* longest owner token */

struct supervisor;

enum sup_mode {
	SUP_PIPES, /* stdin written, stdout framed into messages */
	SUP_LOGS,  /* stdin /dev/null, stdout a log like stderr */
};

struct sup_cbs {
	/* SUP_PIPES: one complete line of stdout (without the newline),
	 * valid UTF-8, within SUP_MAX_LINE, not blank. Not NUL-terminated. */
	void (*on_message)(void *ctx, const char *line, size_t len);
	/* SUP_PIPES: something on stdout that is not a message: an oversize
	 * line (it is skipped up to its newline), invalid UTF-8. The
	 * connection goes on. May be NULL. */
	void (*on_garbage)(void *ctx, const char *what);
	/* SUP_PIPES: an oversize line ended: its first and last bytes (see
	 * framer_on_overlong), so the owner can fail the request it
	 * answered. May be NULL. */
	void (*on_overlong)(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len);
	/* SUP_PIPES: sup_send may be called again after it returned
	 * -ENOBUFS (the queue went below half its limit). May be NULL. */
	void (*on_drain)(void *ctx);
	/* One line the program printed: stderr, and stdout too in SUP_LOGS
	 * (cut at SUP_LOG_LINE_MAX, not NUL-terminated, maybe not UTF-8).
	 * May be NULL. */
	void (*on_log)(void *ctx, const char *line, size_t len);
	/* The program exited, or (SUP_PIPES) its stdout closed: the
	 * connection is unusable from now on. Called once. exit_status -1
	 * when unknown (the stdout EOF case, or never reaped). The stop
	 * ladder then starts on its own (sup_stop is not needed, but
	 * allowed until on_closed). */
	void (*on_exit)(void *ctx, int64_t exit_status, int term_signal);
	/* After sup_stop (or after on_exit), once every handle is closed and
	 * the process group and every process with the owner token are gone
	 * or killed; the supervisor is freed right after this returns.
	 * Called once. */
	void (*on_closed)(void *ctx);
};

struct sup_spec {
	const char *command; /* looked up in the child's PATH without '/' */
	char *const *args;   /* argv[1..], NULL-terminated; may be NULL */
	/* "KEY=VALUE" strings laid over the runtime's environment (a key
	 * given here replaces the runtime's), NULL-terminated; may be NULL.
	 * See sup_env_from_config. */
	char *const *env;
	/* Owner token: the child gets PROC_OWNER_ENV=token (whatever the
	 * runtime or env said), and the ladder stops every process of our
	 * uid that carries it, also outside the group (a child that called
	 * setsid). NULL: no token; only the group is stopped. */
	const char *token;
	const char *cwd; /* NULL: inherit */
	enum sup_mode mode;
	uint64_t stop_grace_ms; /* 0: PROC_STOP_GRACE_MS */
};

/* Spawns the program. 0 or -errno: -ENOENT for a command that does not
 * exist, -EACCES, -EINVAL for a bad token; nothing is left running then
 * and no callback comes. */
int sup_spawn(uv_loop_t *loop, const struct sup_spec *spec,
	      const struct sup_cbs *cbs, void *ctx, struct supervisor **out);

/* SUP_PIPES: queues one message plus '\n'; a loop turn's messages are
 * written together before the loop next waits (one write). The bytes are
 * copied; raw CR/LF in data (whitespace in JSON) are sent as spaces.
 * -EPIPE when the
 * program is gone or stopping (always in SUP_LOGS); -ENOBUFS past
 * SUP_MAX_QUEUED unwritten bytes (on_drain follows). */
int sup_send(struct supervisor *c, const char *data, size_t len);

/* Starts the stop ladder; on_closed follows. Safe to call more than once
 * and after on_exit. No on_message/on_garbage after this; on_exit still
 * comes, once, before on_closed (-1 if the process was never reaped). */
void sup_stop(struct supervisor *c);

/* SUP_PIPES: closes the program's stdin (the first step of sup_stop)
 * and nothing more: a program that runs something elsewhere (a container
 * CLI) is told to end, and its owner stops that before the rest of the
 * ladder. sup_send fails from now on. */
void sup_close_stdin(struct supervisor *c);

/* SUP_PIPES: stops (on) or resumes reading stdout: its output then waits
 * in the pipe and the program blocks writing, which is how a server whose
 * clients read slowly is slowed down. Exit is still seen. */
void sup_pause(struct supervisor *c, bool on);

/* The leader's pid, also its process group id. */
pid_t sup_pid(const struct supervisor *c);
/* Start time of the process in clock ticks since boot (/proc/PID/stat field
 * 22), 0 when unknown: with the pid it identifies the process. */
uint64_t sup_start_time(const struct supervisor *c);
/* The owner token as spawned, "" when none. */
const char *sup_token(const struct supervisor *c);

/* The last n log lines joined with '\n' (invalid UTF-8 as '?'). Caller
 * frees; "" when none. */
char *sup_log_tail(const struct supervisor *c, int n);

/* A server's env (config pairs) as "KEY=VALUE" strings for sup_spec.env,
 * NULL-terminated; free with sup_env_free. */
char **sup_env_from_config(const struct config_kv *kv, size_t n);
void sup_env_free(char **env);

/* The binary that runs the exec step below (the runtime passes its own
 * executable). NULL (the default): the command is spawned directly, without
 * a parent-death signal. The string is copied. */
void sup_set_exec_shim(const char *path);

/* argv[1] == "__exec": the small exec step run in the child before the
 * server's command. argv: mcpvisor __exec PARENT_PID COMMAND [ARGS...].
 * Sets the parent-death signal (SIGKILL), checks the parent is still
 * PARENT_PID, then execs COMMAND. Returns only on failure (exit code 127
 * with a message on stderr). */
int sup_exec_main(int argc, char **argv);

#endif
