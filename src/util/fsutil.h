/* Small file helpers: mkdir -p, whole-file read with a limit, atomic write. */
#ifndef MCPV_FSUTIL_H
#define MCPV_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

int fsutil_mkdir_p(const char *path, mode_t mode);
/* Reads at most limit bytes; -EFBIG when larger. *out is NUL-terminated. */
int fsutil_read_file(const char *path, size_t limit, char **out, size_t *len);
/* Write to path.tmp, fsync, rename over path; mode applies to the file. */
int fsutil_write_atomic(const char *path, const void *data, size_t len,
			mode_t mode);

#endif
