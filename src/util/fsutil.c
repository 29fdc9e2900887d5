/* mkdir -p, bounded reads and atomic replace (write, fsync, rename). */
#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xmalloc.h"

int fsutil_mkdir_p(const char *path, mode_t mode)
{
	char *p = xstrdup(path);
	int rc = 0;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		rc = -errno;
out:
	free(p);
	return rc;
}

int fsutil_read_file(const char *path, size_t limit, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 4096, n = 0;
	char *data = xmalloc(cap + 1);
	int rc = 0;
	for (;;) {
		if (n == cap) {
			if (cap >= limit + 1) {
				rc = -EFBIG;
				goto fail;
			}
			cap *= 2;
			data = xrealloc(data, cap + 1);
		}
		ssize_t r = read(fd, data + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > limit) {
			rc = -EFBIG;
			goto fail;
		}
	}
	close(fd);
	data[n] = '\0';
	*out = data;
	if (len)
		*len = n;
	return 0;
fail:
	close(fd);
	free(data);
	return rc;
}

int fsutil_write_atomic(const char *path, const void *data, size_t len,
			mode_t mode)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			close(fd);
			unlink(tmp);
			goto out;
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		rc = -errno;
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) < 0) {
		rc = -errno;
		unlink(tmp);
	}
out:
	free(tmp);
	return rc;
}
