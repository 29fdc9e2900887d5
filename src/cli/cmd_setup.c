/* `mcpvisor setup HOST`: moves a host's MCP servers into mcpvisor's
 * config and leaves one relay entry in the host's file, after a backup of
 * both; --dry-run shows the diff, --undo restores the latest backup. What
 * moves where is config/hosts.c's; this file reads, shows and writes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/restart.h"
#include "cli/setup_backup.h"
#include "config/config.h"
#include "config/hosts.h"
#include "config/jsonc.h"
#include "config/secrets.h"
#include "home/info.h"
#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

extern char **environ;

static void setup_usage(FILE *f)
{
	fprintf(f,
		"usage: mcpvisor setup HOST [--file PATH] [--dry-run] "
		"[--home DIR]\n"
		"       mcpvisor setup HOST --undo [--file PATH] [--force] "
		"[--home DIR]\n"
		"\n"
		"Moves HOST's MCP servers into mcpvisor's config and puts "
		"one entry in\n"
		"their place, `mcpvisor relay`, after a timestamped backup "
		"of both files.\n"
		"HOST: %s (--file PATH: that\n"
		"host's shape in another file). A server mcpvisor's config "
		"already has\n"
		"under that name, or one it cannot represent, stays in "
		"HOST's file and is\n"
		"reported. The files are edited as text (JSONC: comments and "
		"trailing\n"
		"commas are kept, as is every byte setup does not change). "
		"--dry-run prints\n"
		"the diff of both files, secrets masked, and changes "
		"nothing. --undo\n"
		"restores the files of the latest setup of HOST (--file "
		"PATH: the latest\n"
		"that wrote PATH; --force: even when they changed since).\n",
		hosts_names());
}

struct setup_opts {
	const char *home;
	const char *file;
	bool dry_run, undo, force;
	const struct host_info *host;
};

/* One file as it is and as it will be. */
struct setup_file {
	const char *what; /* "host", "mcpvisor" */
	char *path;
	char *before; /* NULL: no such file */
	size_t before_len;
	mode_t mode;	 /* of the file as it is; new files 0600 */
	struct jsonc *j; /* before, read (NULL: no file) */
	json_t *doc;
	char *after;
};

static void setup_file_free(struct setup_file *f)
{
	free(f->path);
	jsonc_free(f->j);
	free(f->before);
	json_decref(f->doc);
	free(f->after);
}

/* Reads and parses f->path (plain JSON when strict, else JSONC); a
 * missing file is an empty object. 0 or a CLI code with the message
 * printed. */
static int setup_file_load(struct setup_file *f, size_t limit, bool strict)
{
	int rc = fsutil_read_user_file(f->path, limit, &f->before,
				       &f->before_len);
	if (rc == -ENOENT) {
		f->before = NULL;
		f->mode = 0600;
		f->doc = json_object();
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "mcpvisor setup: cannot read %s: %s\n", f->path,
			strerror(-rc));
		return CLI_FAILED;
	}
	struct stat st;
	f->mode = stat(f->path, &st) == 0 ? (st.st_mode & 0777) : 0600;
	struct jsonc_error e;
	if (jsonc_parse(f->before, f->before_len, strict ? JSONC_STRICT : 0,
			&f->j, &e) < 0) {
		/* The position and what is wrong only: the text may hold a
		 * secret. */
		fprintf(stderr,
			"mcpvisor setup: %s: line %d, column %d: %s; nothing "
			"changed\n",
			f->path, e.line, e.column, e.text);
		return CLI_USAGE;
	}
	if (!json_is_object(jsonc_root(f->j)->value)) {
		fprintf(stderr, "mcpvisor setup: %s: not a JSON object\n",
			f->path);
		return CLI_USAGE;
	}
	f->doc = json_incref(jsonc_root(f->j)->value);
	return 0;
}

/* An absolute path (cwd-joined when relative). Caller frees. */
static char *setup_abs(const char *p)
{
	if (p[0] == '/')
		return xstrdup(p);
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof cwd) == NULL)
		return xstrdup(p);
	return xasprintf("%s/%s", cwd, p);
}

/* The relay's command: "mcpvisor" when that name in PATH is this very
 * binary, else this binary's absolute path. Claude Desktop does not start
 * commands with the shell's PATH, so it always gets the path. */
static char *setup_relay_command(const struct host_info *h)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return xstrdup("mcpvisor");
	self[n] = '\0';
	struct stat me, st;
	if (strcmp(h->name, "claude-desktop") == 0 || stat(self, &me) < 0)
		return xstrdup(self);
	const char *path = getenv("PATH");
	char *dirs = xstrdup(path ? path : "");
	bool found = false;
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *full = xasprintf("%s/mcpvisor", d);
		/* The first in PATH is what a host would run. */
		if (stat(full, &st) == 0) {
			found = st.st_dev == me.st_dev &&
				st.st_ino == me.st_ino;
			free(full);
			break;
		}
		free(full);
	}
	free(dirs);
	return xstrdup(found ? "mcpvisor" : self);
}

/* The editor's ${env:NAME} of a moved entry (vars, names) and how they
 * are written now. */
static char *setup_relay_home(const struct setup_opts *o);

/* " --home DIR" (absolute) for the commands setup tells the user to run
 * when it ran on a home of its own (--home or MCPVISOR_HOME): without it
 * they would act on another home. "" else. */
static char *setup_home_arg(const struct setup_opts *o)
{
	char *home = setup_relay_home(o);
	char *arg = home ? xasprintf(" --home %s", home) : xstrdup("");
	free(home);
	return arg;
}

static void setup_print_vars(const struct setup_opts *o, const json_t *vars)
{
	size_t i;
	json_t *v;
	json_array_foreach(vars, i, v)
	{
		const char *n = json_string_value(v);
		printf("  %-20s ${env:%s} is written ${%s:-}: empty when not "
		       "set, as %s has it\n",
		       "", n, n, o->host->title);
	}
}

/* Prints what becomes of each entry, reasons masked. */
static void setup_print_plan(const struct setup_opts *o,
			     const struct hosts_plan *p,
			     const struct setup_file *host,
			     const struct setup_file *mine, struct secrets *sec)
{
	size_t i;
	json_t *it;
	json_array_foreach(p->items, i, it)
	{
		const char *name =
			json_string_value(json_object_get(it, "name"));
		const char *act =
			json_string_value(json_object_get(it, "action"));
		/* A config error quotes no value, but a reason is text
		 * about an entry that holds secrets: mask it anyway. */
		const char *raw = json_string_value(json_object_get(it, "why"));
		char *why = secrets_mask(sec, raw ? raw : "");
		bool off = json_is_true(json_object_get(it, "disabled"));
		if (strcmp(act, "moved") == 0) {
			printf("  %-20s moves to %s%s\n", name, mine->path,
			       off ? " (disabled, stays disabled)" : "");
			setup_print_vars(o, json_object_get(it, "vars"));
			if (json_is_true(json_object_get(it, "signIn"))) {
				char *h = setup_home_arg(o);
				printf("  %-20s signs in with OAuth (%s kept "
				       "its own sign-in): run `mcpvisor login "
				       "%s%s` once\n",
				       "", o->host->title, name, h);
				free(h);
			}
		} else if (strcmp(act, "same") == 0)
			printf("  %-20s already in %s (the same server): "
			       "removed from %s\n",
			       name, mine->path, o->host->title);
		else if (strcmp(act, "relay") == 0)
			printf("  %-20s already the mcpvisor relay\n", name);
		else if (strcmp(act, "repoint") == 0)
			printf("  %-20s %s: now the relay of this home\n", name,
			       why);
		else if (strcmp(act, "clash") == 0)
			printf("  %-20s kept in %s: name clash: %s\n", name,
			       host->path, why);
		else if (strcmp(act, "project") == 0)
			printf("  %-20s kept: %s\n", name, why);
		else
			printf("  %-20s kept in %s: mcpvisor cannot represent "
			       "it: %s\n",
			       name, host->path, why);
		free(why);
	}
	if (p->relay_added)
		printf("  %-20s adds `mcpvisor relay`\n", p->relay_name);
}

/* The servers that need a sign-in in mcpvisor, last, as commands. */
static void setup_print_logins(const struct setup_opts *o,
			       const struct hosts_plan *p)
{
	size_t i;
	json_t *it;
	bool first = true;
	json_array_foreach(p->items, i, it)
	{
		if (!json_is_true(json_object_get(it, "signIn")))
			continue;
		if (first)
			printf("sign in to what %s had signed in to:\n",
			       o->host->title);
		first = false;
		char *h = setup_home_arg(o);
		printf("  mcpvisor login %s%s\n",
		       json_string_value(json_object_get(it, "name")), h);
		free(h);
	}
}

/* A runtime of this home serves its config as it was: have it read the
 * new one now (as `mcpvisor reload`), so the host finds the moved servers
 * when it comes back. */
static int setup_reload(const char *home)
{
	struct runtime_info info;
	int rc = runtime_info_read(home, &info);
	long pid = info.pid;
	runtime_info_free(&info);
	if (rc != 0)
		return CLI_OK;
	printf("the runtime of this home runs (pid %ld): reloading its "
	       "config\n",
	       pid);
	fflush(stdout);
	return stop_control_send(home, "/control/reload");
}

/* diff -u of two texts, through temporary files that hold only masked
 * text. Returns 0 when diff ran. */
static int setup_diff(const char *label, const char *a, const char *b)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = xasprintf("%s/mcpvisor-setup-XXXXXX",
			      tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		free(dir);
		return -errno;
	}
	char *fa = xasprintf("%s/a", dir), *fb = xasprintf("%s/b", dir);
	char *la = xasprintf("a%s", label), *lb = xasprintf("b%s", label);
	int rc = fsutil_write_atomic(fa, a, strlen(a), 0600);
	if (rc == 0)
		rc = fsutil_write_atomic(fb, b, strlen(b), 0600);
	if (rc == 0) {
		char *argv[] = {"diff", "-u", "--label", la,  "--label",
				lb,	fa,   fb,	 NULL};
		pid_t pid;
		fflush(stdout);
		rc = -posix_spawnp(&pid, "diff", NULL, NULL, argv, environ);
		int st;
		if (rc == 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) > 1)
			rc = -EIO;
	}
	unlink(fa);
	unlink(fb);
	rmdir(dir);
	free(fa);
	free(fb);
	free(la);
	free(lb);
	free(dir);
	return rc;
}

/* Shows one file's change as diff -u of its bytes as they are and as
 * they will be, masked. */
static void setup_show(const struct setup_file *f, struct secrets *sec)
{
	char *sb = f->before ? hosts_mask_text(f->before, f->before_len, sec)
			     : xstrdup("");
	char *sa = hosts_mask_text(f->after, strlen(f->after), sec);
	printf("\n%s (%s)%s:\n", f->path, f->what,
	       f->before ? "" : ", a new file");
	if (setup_diff(f->path, sb, sa) < 0)
		printf("(diff could not run; the new file:)\n%s", sa);
	fflush(stdout);
	free(sb);
	free(sa);
}

static int setup_parse(int argc, char **argv, struct setup_opts *o)
{
	static const struct option longopts[] = {
		{"home", required_argument, NULL, 'H'},
		{"file", required_argument, NULL, 'F'},
		{"dry-run", no_argument, NULL, 'n'},
		{"undo", no_argument, NULL, 'u'},
		{"force", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "H:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H':
			o->home = optarg;
			break;
		case 'F':
			o->file = optarg;
			break;
		case 'n':
			o->dry_run = true;
			break;
		case 'u':
			o->undo = true;
			break;
		case 'f':
			o->force = true;
			break;
		case 'h':
			setup_usage(stdout);
			return CLI_OK;
		default:
			setup_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (argc - optind != 1) {
		setup_usage(stderr);
		return CLI_USAGE;
	}
	o->host = hosts_find(argv[optind]);
	if (o->host == NULL) {
		fprintf(stderr,
			"mcpvisor setup: unknown host \"%s\" (known: %s)\n",
			argv[optind], hosts_names());
		return CLI_USAGE;
	}
	if (o->undo && o->dry_run) {
		fprintf(stderr, "mcpvisor setup: --undo takes no --dry-run\n");
		return CLI_USAGE;
	}
	return -1;
}

/* A file setup writes, taken (p) at its real place: a symlink (a
 * dotfiles link) is written through, at its target, and stays a link. */
static char *setup_real_path(char *p)
{
	char real[PATH_MAX];
	if (realpath(p, real)) {
		free(p);
		return xstrdup(real);
	}
	/* A dangling link names a file the user keeps elsewhere: writing a
	 * new file in its place would hide that. */
	struct stat st;
	if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
		fprintf(stderr,
			"mcpvisor setup: %s is a symlink to a file that is "
			"not there; nothing changed\n",
			p);
		free(p);
		return NULL;
	}
	return p;
}

/* The host's file: --file, else its documented place, at its real place. */
static char *setup_host_path(const struct setup_opts *o)
{
	char *p = o->file ? setup_abs(o->file) : hosts_default_path(o->host);
	return p ? setup_real_path(p) : NULL;
}

/* The home the relay must use: the one setup wrote the config of. */
static char *setup_relay_home(const struct setup_opts *o)
{
	const char *home = o->home;
	if (home == NULL || home[0] == '\0')
		home = getenv("MCPVISOR_HOME");
	return home && home[0] ? setup_abs(home) : NULL;
}

/* A host that rewrites its file while it runs (Claude Code does) must not
 * lose its write to ours: the file must still be what was read. */
static int setup_unchanged(const struct setup_file *f)
{
	char *now = NULL;
	size_t len = 0;
	int rc = fsutil_read_user_file(f->path, HOSTS_MAX_FILE_BYTES, &now,
				       &len);
	bool same = f->before ? rc == 0 && len == f->before_len &&
					memcmp(now, f->before, len) == 0
			      : rc == -ENOENT;
	free(now);
	if (same)
		return 0;
	fprintf(stderr,
		"mcpvisor setup: %s changed while setup ran (another program "
		"wrote it: quit the host first); nothing changed\n",
		f->path);
	return CLI_FAILED;
}

static int setup_run(const struct setup_opts *o, struct paths *pt)
{
	struct setup_file host = {.what = o->host->title};
	struct setup_file mine = {.what = "mcpvisor's config"};
	struct hosts_plan plan = {0};
	struct secrets *sec = secrets_new();
	char *err = NULL, *cmd = NULL, *rhome = NULL;
	json_t *relay = NULL;
	int rc;
	if (o->file == NULL && getenv("HOME") == NULL) {
		fprintf(stderr, "mcpvisor setup: HOME is not set; name the "
				"file with --file PATH\n");
		rc = CLI_USAGE;
		goto out;
	}
	host.path = setup_host_path(o);
	if (host.path == NULL) {
		rc = CLI_USAGE;
		goto out;
	}
	mine.path = setup_real_path(setup_abs(pt->config_file));
	if (mine.path == NULL) {
		rc = CLI_USAGE;
		goto out;
	}
	struct stat a, b;
	if (stat(host.path, &a) == 0 && stat(mine.path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		fprintf(stderr,
			"mcpvisor setup: %s is mcpvisor's own config; name "
			"the host's file\n",
			host.path);
		rc = CLI_USAGE;
		goto out;
	}
	if ((rc = setup_file_load(&host, HOSTS_MAX_FILE_BYTES, false)) ||
	    (rc = setup_file_load(&mine, CONFIG_MAX_FILE_BYTES, true)))
		goto out;
	cmd = setup_relay_command(o->host);
	rhome = setup_relay_home(o);
	relay = hosts_relay_entry(o->host, cmd, rhome);
	if (hosts_plan(o->host, host.doc, mine.doc, relay, mine.path, &plan,
		       &err) < 0) {
		fprintf(stderr, "mcpvisor setup: %s: %s; nothing changed\n",
			host.path, err);
		rc = CLI_USAGE;
		goto out;
	}
	printf("%s: %s\n", o->host->title, host.path);
	/* Every secret of both files is known before anything is shown. */
	json_decref(hosts_mask(host.doc, sec));
	json_decref(hosts_mask(mine.doc, sec));
	setup_print_plan(o, &plan, &host, &mine, sec);
	if (!plan.changed) {
		printf("nothing to do: %s already goes through mcpvisor "
		       "(%s)\n",
		       o->host->title, host.path);
		rc = CLI_OK;
		goto out;
	}
	/* A new mcpvisor config is laid out as the host's file is. */
	if (hosts_edit_host(o->host, &plan, host.j, &host.after, &err) < 0 ||
	    hosts_edit_mcpv(&plan, mine.j, host.before, &mine.after, &err) <
		    0) {
		fprintf(stderr, "mcpvisor setup: %s: %s; nothing changed\n",
			host.after ? mine.path : host.path, err);
		rc = CLI_FAILED;
		goto out;
	}
	if (o->dry_run) {
		setup_show(&mine, sec);
		setup_show(&host, sec);
		printf("\n(dry run: nothing changed)\n");
		rc = CLI_OK;
		goto out;
	}
	struct backup_file files[2] = {
		{mine.path, mine.before, mine.before_len, 0600, mine.after,
		 plan.moved},
		{host.path, host.before, host.before_len, host.mode, host.after,
		 NULL},
	};
	char *where = NULL;
	if ((rc = setup_unchanged(&host)) != 0 ||
	    (rc = setup_unchanged(&mine)) != 0)
		goto out;
	if ((rc = backup_write(pt->state_dir, o->host->name, files, 2, &where,
			       &err)) < 0) {
		fprintf(stderr, "mcpvisor setup: %s; nothing changed\n", err);
		rc = CLI_FAILED;
		goto out;
	}
	/* mcpvisor's config first: a failure between the two leaves the
	 * servers in both files, never in neither. */
	if ((rc = backup_put(&files[0], &err)) < 0 ||
	    (rc = backup_put(&files[1], &err)) < 0) {
		fprintf(stderr, "mcpvisor setup: %s (backup in %s)\n", err,
			where);
		free(where);
		rc = CLI_FAILED;
		goto out;
	}
	char *h = setup_home_arg(o);
	printf("done; backup of both files in %s (undo: mcpvisor setup %s "
	       "--undo%s)\n",
	       where, o->host->name, h);
	free(h);
	printf("restart %s to use it\n", o->host->title);
	setup_print_logins(o, &plan);
	free(where);
	rc = setup_reload(o->home);
out:
	setup_file_free(&host);
	setup_file_free(&mine);
	hosts_plan_free(&plan);
	secrets_free(sec);
	json_decref(relay);
	free(err);
	free(cmd);
	free(rhome);
	return rc;
}

int cmd_setup(int argc, char **argv)
{
	struct setup_opts o = {0};
	int rc = setup_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct paths pt;
	paths_resolve(&pt, o.home);
	if (o.undo) {
		/* The backups name files by their real path, as setup wrote
		 * them; a link that now dangles is named as it is. */
		char real[PATH_MAX];
		char *file = o.file ? setup_abs(o.file) : NULL;
		if (file && realpath(file, real)) {
			free(file);
			file = xstrdup(real);
		}
		rc = backup_undo(pt.state_dir, o.host->name, file, o.force);
		free(file);
		if (rc == CLI_OK)
			rc = setup_reload(o.home);
	} else
		rc = setup_run(&o, &pt);
	paths_free(&pt);
	return rc;
}
