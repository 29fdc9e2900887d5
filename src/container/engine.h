/*
 * A container engine's CLI (docker, podman, or a path ending in either),
 * run as short commands: the container transport's stop ladder and id
 * lookup, and the reconcile after a crash. Each command runs without a
 * shell, stdin /dev/null, in its own process group, bounded in time (the
 * group is killed at the deadline) and in output. Decides no policy: it
 * says what the engine said.
 */
#ifndef MCPV_CONTAINER_ENGINE_H
#define MCPV_CONTAINER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define ENGINE_OUT_MAX (256 * 1024)	    /* stdout kept; the rest dropped */
#define ENGINE_TIMEOUT_MS 30000		    /* a plain command (ps, inspect) */
#define ENGINE_LABEL_OWNER "mcpvisor.owner" /* owner token */
#define ENGINE_LABEL_SERVER "mcpvisor.server" /* server name */
#define ENGINE_LABEL_KEY "mcpvisor.key"	      /* hash of the instance key */

struct engine_result {
	/* The command's exit code; -1 when it did not run or did not end
	 * (err says which). */
	int exit_status;
	/* 0, or -errno: -ENOENT the engine is not installed, -ETIMEDOUT it
	 * did not end within its time (its group was killed). */
	int err;
	char *out; /* stdout, NUL-terminated (owned; "" when none) */
	/* The engine's own error line: the last non-blank stderr line
	 * ("Error: ...: image not known", "Cannot connect to the Docker
	 * daemon ..."), NUL-terminated, cut at 512 bytes; "" when none. */
	char *err_line;
};

typedef void (*engine_cb)(void *ctx, const struct engine_result *r);

/* Runs `engine args...` (args NULL-terminated) on loop; cb exactly once,
 * never from inside this call; r and its strings are valid during cb
 * only. 0, or -errno with no cb to come. */
int engine_run(uv_loop_t *loop, const char *engine, const char *const *args,
	       uint64_t timeout_ms, engine_cb cb, void *ctx);

/* The same, blocking, on a loop of its own (for the reconcile, which runs
 * before the runtime's loop). Fills *r (free with engine_result_clear);
 * returns r->err. */
int engine_run_sync(const char *engine, const char *const *args,
		    uint64_t timeout_ms, struct engine_result *r);
void engine_result_clear(struct engine_result *r);

/* Whether an error line says the container does not exist ("no such
 * container", "no container with name or ID"): it is gone. */
bool engine_says_gone(const char *err_line);

/* The engine's stop ladder for one container (id or name): `engine stop
 * -t STOP_SECS REF`, then `engine rm -f REF`. gone: the engine confirmed
 * it is removed or does not exist; else why is its error line (or what
 * failed). cb once, never from inside this call. 0 or -errno (no cb). */
typedef void (*engine_removed_cb)(void *ctx, bool gone, const char *why);
int engine_remove(uv_loop_t *loop, const char *engine, const char *ref,
		  unsigned stop_secs, engine_removed_cb cb, void *ctx);
/* The same, blocking. Returns true when gone; *why (caller frees, may be
 * NULL) says why not. */
bool engine_remove_sync(const char *engine, const char *ref, unsigned stop_secs,
			char **why);

/* A container carrying the ENGINE_LABEL_OWNER label. */
struct engine_container {
	char *id;     /* full id */
	char *name;   /* without a leading '/' */
	char *owner;  /* its ENGINE_LABEL_OWNER value */
	char *server; /* its ENGINE_LABEL_SERVER value, "" when none */
	bool running;
};

/* Every container (running or not) that carries an ENGINE_LABEL_OWNER
 * label, whatever its value (`ps -a --filter label=...`, then `inspect`
 * for the labels: one format that docker and podman both read). Blocking.
 * 0 (*out NULL when none) or -errno; *why (caller frees) is the engine's
 * error line on failure. */
int engine_list_owned_sync(const char *engine, uint64_t timeout_ms,
			   struct engine_container **out, size_t *n,
			   char **why);
void engine_containers_free(struct engine_container *c, size_t n);

#endif
