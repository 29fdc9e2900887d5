/*
 * One stdio MCP server process: spawn it in its own process group (with a
 * parent-death signal set before it runs the server's command), frame its
 * stdout as newline-delimited JSON within a named line limit, keep its
 * stderr in a bounded ring of recent lines, and stop it with the ladder:
 * close stdin, wait, SIGTERM the group, wait, SIGKILL the group, reap all.
 * Decides no policy (no restarts, no backoff).
 */
#ifndef MCPV_TRANSPORT_STDIO_H
#define MCPV_TRANSPORT_STDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#define STDIO_MAX_LINE (16 * 1024 * 1024)   /* one JSON-RPC message */
#define STDIO_STDERR_LINES 50		    /* ring of recent stderr lines */
#define STDIO_STDERR_LINE_MAX 512	    /* longer stderr lines are cut */
#define STDIO_STOP_GRACE_MS 2000	    /* default wait per ladder step */
#define STDIO_MAX_QUEUED (64 * 1024 * 1024) /* bytes waiting for stdin */

struct stdio_conn;

struct stdio_conn_cbs {
	/* One complete line of stdout (without the newline), valid UTF-8,
	 * within STDIO_MAX_LINE, not blank. Not NUL-terminated. */
	void (*on_message)(void *ctx, const char *line, size_t len);
	/* Something on stdout that is not a message: an oversize line (it is
	 * skipped up to its newline), invalid UTF-8. The connection goes on. */
	void (*on_garbage)(void *ctx, const char *what);
	/* An oversize line ended: its first and last bytes (see
	 * framer_on_overlong), so the owner can fail the request it
	 * answered. May be NULL. */
	void (*on_overlong)(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len);
	/* One line of stderr as it came (cut at STDIO_STDERR_LINE_MAX, not
	 * NUL-terminated, maybe not UTF-8). May be NULL. */
	void (*on_stderr)(void *ctx, const char *line, size_t len);
	/* The server process exited or its stdout closed: the connection is
	 * unusable from now on. Called once. exit_status -1 when unknown.
	 * The stop ladder then starts on its own (stdio_conn_stop is not
	 * needed, but allowed until on_closed). */
	void (*on_exit)(void *ctx, int64_t exit_status, int term_signal);
	/* After stdio_conn_stop (or after on_exit), once every handle is
	 * closed and the process group is gone or killed; the conn is freed
	 * right after this returns. Called once. */
	void (*on_closed)(void *ctx);
};

struct stdio_spawn_opts {
	const char *command;	/* looked up in PATH when it has no '/' */
	char *const *args;	/* argv[1..], NULL-terminated; may be NULL */
	char *const *env;	/* full environment, NULL-terminated; NULL:
				   inherit */
	const char *cwd;	/* NULL: inherit */
	uint64_t stop_grace_ms; /* 0: STDIO_STOP_GRACE_MS */
};

/* Spawns the server. Returns 0 or -errno (e.g. -ENOENT for a command that
 * does not exist; nothing is left running then). */
int stdio_conn_spawn(uv_loop_t *loop, const struct stdio_spawn_opts *opts,
		     const struct stdio_conn_cbs *cbs, void *ctx,
		     struct stdio_conn **out);

/* Queues one message plus '\n'. The bytes are copied; raw CR/LF in data
 * (whitespace in JSON) are sent as spaces. -EPIPE when the server is gone
 * or stopping; -ENOBUFS past STDIO_MAX_QUEUED unwritten bytes. */
int stdio_conn_send(struct stdio_conn *c, const char *data, size_t len);

/* Starts the stop ladder; on_closed follows. Safe to call more than once
 * and after on_exit. No on_message/on_garbage after this; on_exit still
 * comes, once, before on_closed (-1 if the process was never reaped). */
void stdio_conn_stop(struct stdio_conn *c);

/* Stops (on) or resumes reading the server's stdout: its output then
 * waits in the pipe and the server blocks writing, which is how a server
 * whose clients read slowly is slowed down. Exit is still seen (by the
 * process, not by EOF). */
void stdio_conn_pause(struct stdio_conn *c, bool on);

pid_t stdio_conn_pid(const struct stdio_conn *c);
/* Start time of the process in clock ticks since boot (/proc/PID/stat field
 * 22), 0 when unknown: with the pid it identifies the process. */
uint64_t stdio_conn_start_time(const struct stdio_conn *c);

/* The variable (name=token) that every process of this server inherits:
 * the stop ladder also stops processes of our uid that carry it outside
 * the process group (a child that called setsid). Without it only the
 * group is stopped. Copied; 0 or -EINVAL. */
int stdio_conn_set_owner(struct stdio_conn *c, const char *name,
			 const char *token);

/* The last n lines of stderr joined with '\n'. Caller frees. */
char *stdio_conn_stderr_tail(const struct stdio_conn *c, int n);

/* The binary that runs the exec step below (the runtime passes its own
 * executable). NULL (the default): the command is spawned directly, without
 * a parent-death signal. The string is copied. */
void stdio_set_exec_shim(const char *path);

/* argv[1] == "__exec": the small exec step run in the child before the
 * server's command. argv: mcpvisor __exec PARENT_PID COMMAND [ARGS...].
 * Sets the parent-death signal (SIGKILL), checks the parent is still
 * PARENT_PID, then execs COMMAND. Returns only on failure (exit code 127
 * with a message on stderr). */
int stdio_exec_main(int argc, char **argv);

/* Reads /proc/PID/stat field 22; 0 when the process does not exist. */
uint64_t proc_start_time(pid_t pid);

#endif
