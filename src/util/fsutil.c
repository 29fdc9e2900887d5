/* mkdir -p, private directories, bounded reads and atomic replace (write
 * a fresh temporary, fsync, rename). */
#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/random.h"
#include "util/xmalloc.h"

/* Tries of a fresh random temporary name before giving up: a collision
 * means someone plants names there, and we never reuse what we find. */
#define FSUTIL_TMP_TRIES 16

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

static char *fsutil_owner_name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);
	if (pw && pw->pw_name)
		return xasprintf("uid %u (%s)", (unsigned)uid, pw->pw_name);
	return xasprintf("uid %u", (unsigned)uid);
}

static int fsutil_refuse(const char *path, const struct stat *st,
			 const char *what, int rc, char **err)
{
	if (err) {
		char *owner = fsutil_owner_name(st->st_uid);
		char *me = fsutil_owner_name(geteuid());
		*err = xasprintf("%s %s (owner %s, mode %04o), not a private "
				 "directory of %s: another user could "
				 "redirect or read mcpvisor's files there; "
				 "remove it, or choose another home "
				 "(--home, MCPVISOR_HOME, XDG_RUNTIME_DIR)",
				 path, what, owner,
				 (unsigned)(st->st_mode & 07777), me);
		free(owner);
		free(me);
	}
	return rc;
}

int fsutil_private_dir(const char *path, bool create, char **err)
{
	if (err)
		*err = NULL;
	if (create) {
		int rc = fsutil_mkdir_p(path, 0700);
		if (rc < 0) {
			if (err)
				*err = xasprintf("cannot create %s: %s", path,
						 strerror(-rc));
			return rc;
		}
	}
	struct stat st;
	if (lstat(path, &st) < 0) {
		int e = errno;
		if (e != ENOENT && err)
			*err = xasprintf("cannot use %s: %s", path,
					 strerror(e));
		return -e;
	}
	uid_t me = geteuid();
	if (S_ISLNK(st.st_mode)) {
		/* Only a link we made ourselves: one that another user owns
		 * can be pointed elsewhere after we checked it. */
		if (st.st_uid != me)
			return fsutil_refuse(path, &st,
					     "is a symlink of another "
					     "user",
					     -EPERM, err);
		if (stat(path, &st) < 0) {
			int e = errno;
			if (err)
				*err = xasprintf("cannot use %s: %s", path,
						 strerror(e));
			return -e;
		}
	}
	if (!S_ISDIR(st.st_mode))
		return fsutil_refuse(path, &st, "is not a directory", -ENOTDIR,
				     err);
	if (st.st_uid != me)
		return fsutil_refuse(path, &st, "belongs to another user",
				     -EPERM, err);
	/* Ours but open to others (an old umask, a hand-made folder):
	 * narrow it, since nobody else may have anything in it. */
	if ((st.st_mode & 077) != 0 && chmod(path, 0700) < 0) {
		int e = errno;
		if (err)
			*err = xasprintf("%s is open to other users (mode "
					 "%04o) and cannot be made private: "
					 "%s",
					 path, (unsigned)(st.st_mode & 07777),
					 strerror(e));
		return -e;
	}
	return 0;
}

static int fsutil_read_fd(int fd, size_t limit, char **out, size_t *len)
{
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

int fsutil_read_file(const char *path, size_t limit, char **out, size_t *len)
{
	/* O_NONBLOCK: a FIFO planted in place of the file must not hang the
	 * open; it is refused as not regular below. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fsutil_read_fd(fd, limit, out, len);
}

int fsutil_read_user_file(const char *path, size_t limit, char **out,
			  size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return fsutil_read_fd(fd, limit, out, len);
}

static int fsutil_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int fsutil_write_atomic(const char *path, const void *data, size_t len,
			mode_t mode)
{
	char *tmp = NULL;
	int fd = -1;
	for (int i = 0; i < FSUTIL_TMP_TRIES && fd < 0; i++) {
		char rnd[17];
		random_hex(rnd, 8);
		free(tmp);
		tmp = xasprintf("%s.tmp.%s", path, rnd);
		/* O_EXCL: a name someone planted (a symlink to a victim's
		 * file) fails instead of being written through. */
		fd = open(tmp,
			  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	int rc = 0;
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = fsutil_write_all(fd, data, len)) < 0 || fsync(fd) < 0) {
		if (rc == 0)
			rc = -errno;
		close(fd);
		unlink(tmp);
		goto out;
	}
	if (close(fd) < 0) {
		rc = -errno;
		unlink(tmp);
		goto out;
	}
	/* rename replaces whatever is at path, a symlink included, without
	 * following it. */
	if (rename(tmp, path) < 0) {
		rc = -errno;
		unlink(tmp);
	}
out:
	free(tmp);
	return rc;
}
