/*
 * Finding the runtime of a home: the lock that makes it the only one, and
 * the runtime file that says where it listens. The lock decides whether a
 * runtime runs; the file's pid only names it (a pid can be reused by any
 * program once its runtime died).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "home/info.h"
#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

#define RUNTIME_FILE_MAX (64 * 1024)
/* A client probing the lock holds it shared for microseconds; a runtime
 * starting meanwhile retries this long before it concludes another runtime
 * holds it. */
#define LOCK_TRIES 50
#define LOCK_RETRY_NS (10 * 1000 * 1000)

static long lock_read_pid(int fd)
{
	char text[32];
	ssize_t n = pread(fd, text, sizeof text - 1, 0);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	long pid = strtol(text, NULL, 10);
	return pid > 0 ? pid : 0;
}

int runtime_lock_take(const char *lock_file, long *holder)
{
	*holder = 0;
	/* O_CLOEXEC: a server must not inherit the lock and keep the home
	 * locked after the runtime is gone. */
	int fd = open(lock_file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	if (fd < 0)
		return -errno;
	for (int i = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; i++) {
		int e = errno;
		if (e != EWOULDBLOCK && e != EINTR) {
			close(fd);
			return -e;
		}
		if (i >= LOCK_TRIES) {
			*holder = lock_read_pid(fd);
			close(fd);
			return -EWOULDBLOCK;
		}
		struct timespec ts = {0, LOCK_RETRY_NS};
		nanosleep(&ts, NULL);
	}
	char text[32];
	int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n) {
		int e = errno ? errno : EIO;
		close(fd);
		return -e;
	}
	return fd;
}

int runtime_lock_probe(const char *lock_file, long *holder, int *fd_out)
{
	*holder = 0;
	if (fd_out)
		*fd_out = -1;
	int fd = open(lock_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* never locked: no runtime ever ran here */
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		*holder = lock_read_pid(fd);
		close(fd);
		return 1;
	}
	if (fd_out)
		*fd_out = fd;
	else
		close(fd);
	return 0;
}

static int info_parse(const char *file, struct runtime_info *info)
{
	char *text = NULL;
	int rc = fsutil_read_file(file, RUNTIME_FILE_MAX, &text, NULL);
	if (rc < 0)
		return rc;
	json_t *o = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_object(o)) {
		json_decref(o);
		return -EINVAL;
	}
	info->pid = (long)json_integer_value(json_object_get(o, "pid"));
	info->port = (int)json_integer_value(json_object_get(o, "port"));
	info->asked_port =
		(int)json_integer_value(json_object_get(o, "askedPort"));
	const char *url = json_string_value(json_object_get(o, "url"));
	const char *sock = json_string_value(json_object_get(o, "socket"));
	info->url = url ? xstrdup(url) : NULL;
	info->socket = sock ? xstrdup(sock) : NULL;
	json_decref(o);
	return info->pid > 0 && info->socket ? 0 : -EINVAL;
}

int runtime_info_read(const char *home, struct runtime_info *info)
{
	memset(info, 0, sizeof *info);
	struct paths p;
	paths_resolve(&p, home);
	char *err = NULL;
	int rc = paths_check(&p, &err);
	if (rc < 0) {
		paths_free(&p);
		if (rc == -ENOENT)
			return -ENOENT;
		info->error = err;
		return -EPERM;
	}
	long holder = 0;
	int fd = -1;
	int held = runtime_lock_probe(p.lock_file, &holder, &fd);
	rc = info_parse(p.runtime_file, info);
	if (fd >= 0)
		close(fd);
	paths_free(&p);
	/* Not locked but its socket answers: a runtime from before the
	 * lock (the binary was upgraded under it). What a dead runtime left
	 * never answers. */
	if (!held && rc == 0 && runtime_socket_answers(info->socket))
		return 0;
	if (!held)
		return rc == 0 ? -ESRCH : -ENOENT;
	if (rc < 0 || holder == 0 || info->pid != holder) {
		info->pid = holder;
		return -EAGAIN;
	}
	return 0;
}

void runtime_info_free(struct runtime_info *info)
{
	free(info->url);
	free(info->socket);
	free(info->error);
	memset(info, 0, sizeof *info);
}

bool runtime_socket_answers(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof addr.sun_path)
		return false;
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
	/* EAGAIN: its backlog is full, so something listens there. */
	bool answers = rc == 0 || errno == EAGAIN;
	close(fd);
	return answers;
}

int runtime_info_clear(const char *home)
{
	struct paths p;
	paths_resolve(&p, home);
	int rc = paths_check(&p, NULL);
	if (rc < 0) {
		paths_free(&p);
		return rc;
	}
	long holder;
	int fd;
	/* Held shared while we remove, so no runtime starts and writes its
	 * file in between. */
	if (runtime_lock_probe(p.lock_file, &holder, &fd) ||
	    runtime_socket_answers(p.socket_path)) {
		if (fd >= 0)
			close(fd);
		paths_free(&p);
		return -EBUSY;
	}
	unlink(p.runtime_file);
	unlink(p.socket_path);
	if (fd >= 0)
		close(fd);
	paths_free(&p);
	return 0;
}

void runtime_file_remove_own(const char *runtime_file)
{
	struct runtime_info info;
	memset(&info, 0, sizeof info);
	if (info_parse(runtime_file, &info) == 0 && info.pid == (long)getpid())
		unlink(runtime_file);
	runtime_info_free(&info);
}
