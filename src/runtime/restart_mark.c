/* The restart mark (runtime/restart_mark.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/restart_mark.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static char *mark_path(const char *home)
{
	struct paths p;
	paths_resolve(&p, home);
	char *path = xasprintf("%s/%s", p.state_dir, RESTART_MARK_NAME);
	paths_free(&p);
	return path;
}

int restart_mark_write(const char *home, long old_pid)
{
	char *path = mark_path(home);
	int fd = open(path,
		      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	free(path);
	if (fd < 0)
		return -errno;
	char text[32];
	int n = snprintf(text, sizeof text, "%ld\n", old_pid);
	int rc = write(fd, text, (size_t)n) == n ? 0 : -EIO;
	close(fd);
	return rc;
}

bool restart_mark_pending(const char *home, long *old_pid)
{
	char *path = mark_path(home);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return false;
	struct stat st;
	char text[32];
	ssize_t n = -1;
	bool fresh = fstat(fd, &st) == 0 &&
		     time(NULL) - st.st_mtime < RESTART_MARK_TTL_S;
	if (fresh)
		n = read(fd, text, sizeof text - 1);
	close(fd);
	if (!fresh)
		return false;
	text[n > 0 ? n : 0] = '\0';
	if (old_pid)
		*old_pid = strtol(text, NULL, 10);
	return true;
}

void restart_mark_clear(const char *home)
{
	char *path = mark_path(home);
	unlink(path);
	free(path);
}
