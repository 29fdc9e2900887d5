/*
 * Small file helpers: mkdir -p, private directories, whole-file reads with
 * a limit, atomic replace. mcpvisor's own files live only in directories
 * proven private (ours, 0700), and are opened without following symlinks,
 * so another local user can neither read them nor redirect a write.
 */
#ifndef MCPV_FSUTIL_H
#define MCPV_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

int fsutil_mkdir_p(const char *path, mode_t mode);
/* Proves path a private directory: a directory (a symlink only when it and
 * its target are ours), owned by the effective uid; a mode open to others
 * is narrowed to 0700 (it is ours). With create, makes it (and parents)
 * 0700 first. Returns 0, -ENOENT (not there, create false), or -EPERM /
 * -ENOTDIR / -errno with *err (when err is not NULL) a message naming the
 * directory, its owner and mode, to free. */
int fsutil_private_dir(const char *path, bool create, char **err);
/* Reads one of mcpvisor's own files: a regular file, never through a
 * symlink (ELOOP). At most limit bytes; -EFBIG when larger. *out is
 * NUL-terminated. */
int fsutil_read_file(const char *path, size_t limit, char **out, size_t *len);
/* The same for a file the user names (a config): follows symlinks, since
 * configs are often links into a dotfiles folder or /dev/fd/N. */
int fsutil_read_user_file(const char *path, size_t limit, char **out,
			  size_t *len);
/* Writes a new temporary file beside path (random name, O_CREAT|O_EXCL,
 * so nothing planted there is followed or reused), fsyncs it and renames it
 * over path (which replaces a symlink at path instead of following it).
 * mode applies to the file. */
int fsutil_write_atomic(const char *path, const void *data, size_t len,
			mode_t mode);

#endif
