/*
 * A fake container engine for unit tests: a shell script in a temp dir
 * that logs its argv (one command a line) and answers each command from
 * files the test writes there: CMD.out (stdout), CMD.err (stderr),
 * CMD.rc (exit code), CMD.hang (sleeps, with a grandchild in its group),
 * CMD.linger (exits, leaving a child that holds its output open),
 * CMD.sleep (sleeps that many seconds first),
 * CMD.stdin (copies stdin to stdout). CMD is the subcommand ("ps",
 * "inspect" for `container inspect`, "stop", "rm"); CMD.REF files answer
 * for one container (REF the last argument) only; all.* answers every
 * command (an engine whose daemon is down).
 */
#ifndef MCPV_TESTS_ENGINE_FIXTURE_H
#define MCPV_TESTS_ENGINE_FIXTURE_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/xmalloc.h"

struct fake_engine {
	char dir[PATH_MAX];
	char path[PATH_MAX + 16];
};

#define FAKE_ENGINE_DOWN                                                       \
	"Cannot connect to the Docker daemon at "                              \
	"unix:///var/run/docker.sock. Is the docker daemon running?"

static const char fake_engine_script[] =
	"#!/bin/sh\n"
	"D='%s'\n"
	"c=$1\n"
	"[ \"$c\" = container ] && c=$2\n"
	"last=\n"
	"for a in \"$@\"; do last=$a; done\n"
	"{ for a in \"$@\"; do printf '%%s|' \"$a\"; done; echo; } "
	">>\"$D/argv.log\"\n"
	"b=$c\n"
	"for x in rc err out hang; do\n"
	"  [ -e \"$D/$c.$last.$x\" ] && b=$c.$last\n"
	"done\n"
	"[ -e \"$D/all.rc\" ] && b=all\n"
	"[ -e \"$D/$b.err\" ] && cat \"$D/$b.err\" >&2\n"
	"[ -e \"$D/$b.out\" ] && cat \"$D/$b.out\"\n"
	"[ -e \"$D/$b.stdin\" ] && cat\n"
	"[ -e \"$D/$b.sleep\" ] && sleep \"$(cat \"$D/$b.sleep\")\"\n"
	"if [ -e \"$D/$b.linger\" ]; then\n"
	"  sh -c 'echo $$ >\"$1/linger.tmp\"; "
	"mv \"$1/linger.tmp\" \"$1/linger.pid\"; exec sleep 30' "
	"sh \"$D\" &\n"
	"  while [ ! -e \"$D/linger.pid\" ]; do sleep 0.01; done\n"
	"fi\n"
	"if [ -e \"$D/$b.hang\" ]; then\n"
	"  sh -c 'echo $$ >\"$1/grandchild.tmp\"; "
	"mv \"$1/grandchild.tmp\" \"$1/grandchild.pid\"; exec sleep 60' "
	"sh \"$D\" &\n"
	"  while [ ! -e \"$D/grandchild.pid\" ]; do sleep 0.01; done\n"
	"  echo $$ >\"$D/leader.tmp\"; mv \"$D/leader.tmp\" \"$D/leader.pid\"\n"
	"  sleep 60\n"
	"fi\n"
	"[ -e \"$D/$b.rc\" ] && exit \"$(cat \"$D/$b.rc\")\"\n"
	"exit 0\n";

static inline void fake_engine_put(const struct fake_engine *f,
				   const char *file, const char *text)
{
	char *p = xasprintf("%s/%s", f->dir, file);
	FILE *fp = fopen(p, "w");
	cr_assert_not_null(fp, "cannot write %s", p);
	fputs(text, fp);
	fclose(fp);
	free(p);
}

static inline void fake_engine_del(const struct fake_engine *f,
				   const char *file)
{
	char *p = xasprintf("%s/%s", f->dir, file);
	unlink(p);
	free(p);
}

static inline void fake_engine_init(struct fake_engine *f)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/mcpv-fake-engine-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof f->path, "%s/podman", f->dir);
	char *text = xasprintf(fake_engine_script, f->dir);
	fake_engine_put(f, "podman", text);
	free(text);
	cr_assert_eq(chmod(f->path, 0700), 0);
}

/* What the engine was run with: "arg|arg|...|\n" per command ("" when
 * it never ran; caller frees). */
static inline char *fake_engine_log(const struct fake_engine *f)
{
	char *p = xasprintf("%s/argv.log", f->dir);
	char *data = NULL;
	size_t len = 0;
	if (fsutil_read_file(p, 1 << 20, &data, &len) < 0)
		data = xstrdup("");
	free(p);
	return data;
}

/* A pid the fake wrote (leader.pid, grandchild.pid), 0 when none. */
static inline pid_t fake_engine_pid(const struct fake_engine *f,
				    const char *file)
{
	char *p = xasprintf("%s/%s", f->dir, file);
	FILE *fp = fopen(p, "r");
	free(p);
	int pid = 0;
	if (fp) {
		if (fscanf(fp, "%d", &pid) != 1)
			pid = 0;
		fclose(fp);
	}
	return (pid_t)pid;
}

/* The real podman, for the tests that use it: false when it is not
 * installed (the caller skips). Makes sure of a test image of one empty
 * file (containers are created from it, never started: no runtime
 * needed) and of a CONTAINERS_CONF that suits this machine (runc, lower
 * ulimits) when none is set. */
#define REAL_ENGINE_IMAGE "localhost/mcpv-engine-unit:1"

static inline bool real_engine_ready(const struct fake_engine *f)
{
	if (access("/usr/bin/podman", X_OK) != 0 &&
	    access("/usr/local/bin/podman", X_OK) != 0)
		return false;
	if (!getenv("CONTAINERS_CONF")) {
		fake_engine_put(f, "containers.conf",
				"[engine]\nruntime = \"runc\"\n[containers]\n"
				"default_ulimits = [\"nofile=20000:20000\", "
				"\"nproc=4096:4096\"]\n");
		char *conf = xasprintf("%s/containers.conf", f->dir);
		setenv("CONTAINERS_CONF", conf, 1);
		free(conf);
	}
	if (system("podman image exists " REAL_ENGINE_IMAGE) != 0) {
		char *cmd = xasprintf(
			"cd '%s' && : >empty && tar cf img.tar "
			"empty && podman import -q img.tar " REAL_ENGINE_IMAGE
			" >/dev/null",
			f->dir);
		int rc = system(cmd);
		free(cmd);
		cr_assert_eq(rc, 0, "podman import failed");
	}
	return true;
}

static inline void fake_engine_cleanup(struct fake_engine *f)
{
	char *cmd = xasprintf("rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", f->dir);
	free(cmd);
}

#endif
