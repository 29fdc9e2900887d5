/*
 * `mcpvisor logs [-f] [-n N] [SERVER]`: the runtime's log file (a runtime
 * in the background writes STATE/runtime.log and rotates it to
 * runtime.log.1), read from the files, so it works with no runtime running.
 * SERVER keeps the lines of one server: what it printed on stderr (masked
 * by the runtime as it wrote them) and what happened to its instances. -f
 * follows the file, across rotations, until interrupted (inotify on the
 * state folder: no polling). Every line is printed escaped (util/escape.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/config.h"
#include "home/info.h"
#include "home/launch.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/paths.h"
#include "util/xmalloc.h"

#define LOGS_DEFAULT_LINES 50
#define LOGS_MAX_LINES 1000000
/* A longer line is cut: a log line is at most 2 KiB plus its prefix. */
#define LOGS_LINE_MAX 8192

static void logs_usage(FILE *f)
{
	fprintf(f,
		"usage: mcpvisor logs [-f] [-n N] [SERVER] [--config FILE] "
		"[--home DIR]\n"
		"\n"
		"Prints the last N lines (default %d) of the runtime's log "
		"file,\n"
		"STATE_DIR/runtime.log (and runtime.log.1 before it, the "
		"file it rotated\n"
		"away), which a runtime started in the background writes: "
		"its own lines and\n"
		"every line its servers print on stderr, secrets masked. "
		"SERVER keeps that\n"
		"server's lines (its stderr and its instances' changes); a "
		"name that is\n"
		"neither in the config (--config FILE, else the running "
		"runtime's, else the\n"
		"default one) nor in the log is an error that names the "
		"known ones.\n"
		"-f follows the file, across rotations, until interrupted. "
		"No runtime needs\n"
		"to run.\n",
		LOGS_DEFAULT_LINES);
}

/* The server a log line is about, from its message ("server NAME: ..." is
 * what it printed, "instance NAME: ..." what happened to it): *len bytes
 * at the returned pointer, or NULL. */
static const char *logs_line_server(const char *line, size_t *len)
{
	const char *m = strstr(line, " mcpvisor ");
	if (m == NULL)
		return NULL;
	m += strlen(" mcpvisor ");
	/* "LEVEL: message", or "debug FUNCTION: message". */
	const char *colon = strstr(m, ": ");
	if (colon == NULL)
		return NULL;
	m = colon + 2;
	const char *kinds[] = {"server ", "instance "};
	for (size_t i = 0; i < 2; i++) {
		size_t k = strlen(kinds[i]);
		if (strncmp(m, kinds[i], k) != 0)
			continue;
		const char *name = m + k;
		const char *end = strstr(name, ": ");
		if (end == NULL || end == name ||
		    memchr(name, ' ', (size_t)(end - name)))
			return NULL;
		*len = (size_t)(end - name);
		return name;
	}
	return NULL;
}

static bool logs_line_keeps(const char *line, const char *server)
{
	if (server == NULL)
		return true;
	size_t n;
	const char *name = logs_line_server(line, &n);
	return name && n == strlen(server) && strncmp(name, server, n) == 0;
}

/* The last n lines kept, oldest first, as a ring. */
struct logs_tail {
	char **lines;
	size_t n, next, count;
	json_t *seen; /* server names the log mentions */
};

static void logs_tail_add(struct logs_tail *t, const char *line,
			  const char *server)
{
	size_t len;
	const char *name = logs_line_server(line, &len);
	if (name) {
		char *copy = xstrndup(name, len);
		json_object_set_new(t->seen, copy, json_true());
		free(copy);
	}
	if (t->n == 0 || !logs_line_keeps(line, server))
		return;
	free(t->lines[t->next]);
	t->lines[t->next] = xstrdup(line);
	t->next = (t->next + 1) % t->n;
	if (t->count < t->n)
		t->count++;
}

static void logs_tail_read(struct logs_tail *t, FILE *f, const char *server)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t r;
	while ((r = getline(&line, &cap, f)) >= 0) {
		if (r > 0 && line[r - 1] == '\n')
			line[--r] = '\0';
		if (r > LOGS_LINE_MAX)
			line[LOGS_LINE_MAX] = '\0';
		logs_tail_add(t, line, server);
	}
	free(line);
}

static void logs_tail_read_path(struct logs_tail *t, const char *path,
				const char *server)
{
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return;
	logs_tail_read(t, f, server);
	fclose(f);
}

/* Through a duplicate of fd, which shares its offset: following goes on
 * exactly where the tail ended. */
static void logs_tail_read_fd(struct logs_tail *t, int fd, const char *server)
{
	int d = fd < 0 ? -1 : dup(fd);
	FILE *f = d < 0 ? NULL : fdopen(d, "r");
	if (f == NULL) {
		if (d >= 0)
			close(d);
		return;
	}
	logs_tail_read(t, f, server);
	fclose(f);
}

/* One line of the log to stdout, escaped: a runtime writes its lines
 * escaped, but the file may hold what else wrote there (an older runtime,
 * a sanitizer), and a terminal shows what it is sent. */
static void logs_print_line(const char *line)
{
	struct buf b;
	buf_init(&b);
	escape_append(&b, line, strlen(line), 0);
	buf_puts(&b, "\n");
	fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
}

static void logs_tail_print(struct logs_tail *t)
{
	size_t start = (t->next + t->n - t->count) % (t->n ? t->n : 1);
	for (size_t i = 0; i < t->count; i++)
		logs_print_line(t->lines[(start + i) % t->n]);
	fflush(stdout);
}

/* The runtime file of home while a runtime runs (its "config", and "log"
 * when it writes the log file), or NULL. */
static json_t *logs_runtime_file(const char *home, const struct paths *p,
				 long *pid)
{
	struct runtime_info info;
	int rc = runtime_info_read(home, &info);
	*pid = info.pid;
	runtime_info_free(&info);
	if (rc != 0)
		return NULL;
	return json_load_file(p->runtime_file, 0, NULL);
}

/* SERVER must be one the config names or the log mentions: a typo would
 * otherwise print nothing, which looks like a quiet server. */
static int logs_check_server(const char *server, const char *config_path,
			     json_t *seen)
{
	if (json_object_get(seen, server))
		return 0;
	struct config *cfg = config_load_file(config_path);
	for (size_t i = 0; i < cfg->nservers; i++)
		if (strcmp(cfg->servers[i].name, server) == 0) {
			config_free(cfg);
			return 0;
		}
	for (size_t i = 0; i < cfg->nservers; i++)
		json_object_set_new(seen, cfg->servers[i].name, json_true());
	config_free(cfg);
	struct buf b;
	buf_init(&b);
	buf_append(&b, "", 0);
	const char *k;
	json_t *v;
	json_object_foreach(seen, k, v)
	{
		(void)v;
		if (b.len)
			buf_puts(&b, ", ");
		escape_append(&b, k, strlen(k), 0);
	}
	fprintf(stderr,
		"mcpvisor logs: no server \"%s\" in %s or in the log; known: "
		"%s\n",
		server, config_path, b.len ? b.data : "(none)");
	buf_free(&b);
	return CLI_USAGE;
}

/* Follows path: what is appended, printed line by line, and on rotation
 * (a new file at path) the rest of the old one, then the new one from its
 * start. Runs until interrupted. */
struct logs_follow {
	const char *path;
	const char *server;
	int fd;
	struct buf part; /* a line not yet ended */
};

static void logs_follow_drain(struct logs_follow *lf)
{
	char chunk[65536];
	ssize_t r;
	while ((r = read(lf->fd, chunk, sizeof chunk)) > 0) {
		buf_append(&lf->part, chunk, (size_t)r);
		char *start = lf->part.data, *nl;
		while ((nl = memchr(start, '\n',
				    lf->part.len -
					    (size_t)(start - lf->part.data)))) {
			*nl = '\0';
			if (logs_line_keeps(start, lf->server))
				logs_print_line(start);
			start = nl + 1;
		}
		size_t used = (size_t)(start - lf->part.data);
		memmove(lf->part.data, start, lf->part.len - used);
		lf->part.len -= used;
		if (lf->part.len > LOGS_LINE_MAX)
			lf->part.len = 0; /* a runaway line is dropped */
	}
	fflush(stdout);
}

/* Rotated or replaced: the file at path is another one (or none yet). */
static bool logs_follow_moved(const struct logs_follow *lf)
{
	struct stat a, b;
	if (lf->fd < 0)
		return true;
	if (stat(lf->path, &b) < 0 || fstat(lf->fd, &a) < 0)
		return false; /* none yet: stay on the old one */
	return a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
	       b.st_size < lseek(lf->fd, 0, SEEK_CUR);
}

/* The state folder watched for the log's writes and rotations. */
static int logs_watch(const char *dir)
{
	int ifd = inotify_init1(IN_CLOEXEC);
	if (ifd < 0 ||
	    inotify_add_watch(ifd, dir,
			      IN_MODIFY | IN_CREATE | IN_MOVED_TO |
				      IN_MOVED_FROM | IN_DELETE) < 0) {
		fprintf(stderr, "mcpvisor logs: cannot watch %s: %s\n", dir,
			strerror(errno));
		if (ifd >= 0)
			close(ifd);
		return -1;
	}
	return ifd;
}

/* Takes fd (the log as opened before the tail was read; -1: none yet)
 * and ifd. */
static int logs_follow(int ifd, int fd, const char *path, const char *server)
{
	struct logs_follow lf = {.path = path, .server = server, .fd = fd};
	buf_init(&lf.part);
	for (;;) {
		if (lf.fd >= 0)
			logs_follow_drain(&lf);
		if (logs_follow_moved(&lf)) {
			int nfd = open(path, O_RDONLY | O_CLOEXEC);
			if (nfd >= 0) {
				if (lf.fd >= 0) {
					logs_follow_drain(&lf);
					close(lf.fd);
				}
				lf.part.len = 0;
				lf.fd = nfd;
				continue; /* the new file from its start */
			}
		}
		/* The watch was added before the first read: a line
		 * written since is an event waiting here. */
		char ev[4096];
		ssize_t r = read(ifd, ev, sizeof ev);
		if (r < 0 && errno != EINTR)
			break;
	}
	buf_free(&lf.part);
	if (lf.fd >= 0)
		close(lf.fd);
	close(ifd);
	return CLI_FAILED;
}

int cmd_logs(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"follow", no_argument, NULL, 'f'},
		{"lines", required_argument, NULL, 'n'},
		{"config", required_argument, NULL, 'c'},
		{"home", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *home = NULL, *config = NULL;
	bool follow = false;
	long lines = LOGS_DEFAULT_LINES;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "fn:c:H:h", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'f':
			follow = true;
			break;
		case 'n': {
			char *end;
			lines = strtol(optarg, &end, 10);
			if (*end || *optarg == '\0' || lines < 0 ||
			    lines > LOGS_MAX_LINES) {
				fprintf(stderr, "mcpvisor logs: -n takes 0 to "
						"1000000\n");
				return CLI_USAGE;
			}
			break;
		}
		case 'c':
			config = optarg;
			break;
		case 'H':
			home = optarg;
			break;
		case 'h':
			logs_usage(stdout);
			return CLI_OK;
		default:
			logs_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "mcpvisor logs: unexpected argument \"%s\"\n\n",
			argv[optind + 1]);
		logs_usage(stderr);
		return CLI_USAGE;
	}
	const char *server = optind < argc ? argv[optind] : NULL;
	struct paths p;
	paths_resolve(&p, home);
	char *path = xasprintf("%s/%s", p.state_dir, LAUNCH_LOG_NAME);
	char *prev = xasprintf("%s.1", path);
	long pid = 0;
	json_t *rf = logs_runtime_file(home, &p, &pid);
	const char *rconf = json_string_value(json_object_get(rf, "config"));
	int rc = CLI_OK;

	/* Watching first, then opening: nothing written meanwhile is
	 * missed. */
	int ifd = follow ? logs_watch(p.state_dir) : -1;
	if (follow && ifd < 0)
		rc = CLI_FAILED;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct logs_tail t = {.n = (size_t)lines, .seen = json_object()};
	t.lines = xcalloc(t.n + 1, sizeof *t.lines);
	logs_tail_read_path(&t, prev, server);
	logs_tail_read_fd(&t, fd, server);
	if (server && rc == CLI_OK)
		rc = logs_check_server(server,
				       config  ? config
				       : rconf ? rconf
					       : p.config_file,
				       t.seen);
	if (rc == CLI_OK) {
		if (rf && json_object_get(rf, "log") == NULL)
			fprintf(stderr,
				"mcpvisor logs: note: the running runtime "
				"(pid %ld) was started in the foreground: its "
				"log goes to its terminal, not to %s\n",
				pid, path);
		else if (access(path, F_OK) < 0 && access(prev, F_OK) < 0)
			fprintf(stderr,
				"mcpvisor logs: no log yet at %s (a runtime "
				"started in the background, by `mcpvisor "
				"restart` or a relay, writes it)\n",
				path);
		logs_tail_print(&t);
	}
	for (size_t i = 0; i < t.n; i++)
		free(t.lines[i]);
	free(t.lines);
	json_decref(t.seen);
	json_decref(rf);
	if (rc == CLI_OK && follow) {
		rc = logs_follow(ifd, fd, path, server);
	} else {
		if (ifd >= 0)
			close(ifd);
		if (fd >= 0)
			close(fd);
	}
	free(prev);
	free(path);
	paths_free(&p);
	return rc;
}
