/*
 * Trust in spaces: a space's .mcp.json names commands to run, and anyone
 * who can write a folder can write one. Its servers run only after the
 * user allowed that file (`mcpvisor allow`), as direnv does: the store
 * keeps each allowed folder's real path and the SHA-256 of the file's
 * content, so a changed file needs allowing again.
 */
#ifndef MCPV_TRUST_H
#define MCPV_TRUST_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "config/config.h"

#define TRUST_FILE "trust.json"
#define TRUST_MAX_FILE (4 * 1024 * 1024)

/* The state directory whose store the runtime reads (set once at start;
 * unset: no space is trusted). Copies dir. */
void trust_set_state_dir(const char *dir);
void trust_clear_state_dir(void);

/* Loads file, a space's config, through the store of state_dir (NULL:
 * the runtime's): read once, hashed and parsed from the same bytes. When
 * it is not allowed, every server in it gets untrusted (the command that
 * allows it) and an error saying so, and those that would override a
 * server of global are left out, so the user's own servers keep working.
 * Never NULL. */
struct config *trust_load_space(const char *state_dir, const char *file,
				const struct config *global);

/*
 * The same in two halves, so the disk is read off the loop: what
 * trust_space_read gathers (blocking: a thread-pool thread runs it) and
 * what trust_space_config makes of it (on the loop, no disk).
 */
struct trust_space {
	int refs;   /* loop-side references (trust_space_unref frees) */
	int err;    /* 0; -ENOENT: no file (no space config); else -errno */
	char *msg;  /* err other than -ENOENT: why it was not read */
	char *file; /* the space's .mcp.json */
	char *text; /* its bytes, NUL-terminated */
	size_t len;
	char hash[65]; /* SHA-256 of text, hex */
	char *folder;  /* DIR's real path (NULL: unresolvable) */
	char *allowed; /* the store's hash for folder (NULL: not allowed) */
	bool have_id;  /* the file's identity below is known */
	bool racy;     /* changed just before it was read: not reused */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	unsigned reads; /* 1 when text was read from disk, 0 when reused */
};

/* Called (from the reading thread) just before a space's file is opened
 * for reading; tests count reads or make them slow. NULL: nothing. */
extern void (*trust_space_read_hook)(const char *file);

/* Reads file, a space's .mcp.json (following a link, as a user's config may be
 * one) and the store of state_dir (NULL: the runtime's). The file is opened
 * with O_NONBLOCK and refused unless regular, so a FIFO or device put
 * there cannot hold the thread; its bytes are reused from prev (may be
 * NULL) when its identity (device, inode, size, mtime and ctime with
 * nanoseconds) is unchanged and it had not changed just before that read. Safe
 * off the loop: touches no shared state but the store path. Never NULL; refs
 * is 1. */
struct trust_space *trust_space_read(const char *state_dir, const char *file,
				     const struct trust_space *prev);
void trust_space_ref(struct trust_space *ts);
void trust_space_unref(struct trust_space *ts);
/* The config ts stands for, as trust_load_space makes it: NULL when there
 * is no file; with fatal set when it could not be read or parsed. */
struct config *trust_space_config(const struct trust_space *ts,
				  const struct config *global);

/* When name (a tool or prompt name as clients see it) belongs to an
 * untrusted server among srv, the error to answer with; else NULL. */
const char *trust_refusal(const struct server_config *const *srv, size_t n,
			  const char *name);

/* Records dir's .mcp.json as allowed (folder's real path, content hash),
 * or forgets it. *msg says what was done or why not (caller frees).
 * 0 or -errno. */
int trust_allow(const char *state_dir, const char *dir, char **msg);
int trust_revoke(const char *state_dir, const char *dir, char **msg);

#endif
