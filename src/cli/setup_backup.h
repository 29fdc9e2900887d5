/*
 * The backups of `mcpvisor setup`: each run's files as they were, kept in
 * the state directory (private, 0700) with a manifest, and the undo that
 * puts the latest back. Files are written atomically at their place.
 */
#ifndef MCPV_SETUP_BACKUP_H
#define MCPV_SETUP_BACKUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where under STATE_DIR the runs' backups live, one folder per run. */
#define BACKUP_DIR_NAME "setup-backups"

struct backup_file {
	const char *path;   /* absolute */
	const char *before; /* its bytes now; NULL: there is no such file */
	size_t before_len;
	mode_t mode;	   /* of the file written (and restored) */
	const char *after; /* what setup writes */
	/* mcpvisor's config: the servers this run adds, by name (NULL for
	 * the host's file). When the config changed since (another host's
	 * setup, an edit), undo takes back only these. */
	const json_t *moved;
};

/* Writes STATE_DIR/setup-backups/HOST-YYYYMMDDTHHMMSSZ/ with the files'
 * bytes and a manifest (paths, modes, and the SHA-256 of what setup is
 * about to write, so undo notices a later edit). *where (to free) names
 * the folder. 0, or -errno with *err (to free). */
int backup_write(const char *state_dir, const char *host,
		 const struct backup_file *files, size_t n, char **where,
		 char **err);
/* Writes f->after at f->path (temporary file + rename, mode f->mode),
 * making its folder (0700) when missing. 0, or -errno with *err. */
int backup_put(const struct backup_file *f, char **err);
/* Restores the latest run's files of host (file non-NULL: the latest run
 * whose host file was file, an absolute path) and marks that run undone,
 * so another undo goes one further back. A file unchanged since setup
 * wrote it gets its bytes back. mcpvisor's config changed since (another
 * host's setup moved servers in) loses only the servers this run added,
 * those still as they were. A host file changed since is refused, unless
 * force. Prints what it did; returns a CLI code. */
int backup_undo(const char *state_dir, const char *host, const char *file,
		bool force);

#endif
