/* Resolution, creation and checks of mcpvisor's private directories. */
#include "util/paths.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/xmalloc.h"

static char *paths_xdg(const char *var, const char *fallback_rel)
{
	const char *v = getenv(var);
	if (v && v[0] == '/')
		return xasprintf("%s/mcpvisor", v);
	const char *home = getenv("HOME");
	if (fallback_rel && home && home[0] == '/')
		return xasprintf("%s/%s/mcpvisor", home, fallback_rel);
	return xasprintf("/tmp/mcpvisor-%u", (unsigned)getuid());
}

/* home as an absolute path, joined to the working folder when relative:
 * the runtime file records the socket's path, and a client in another
 * folder must reach it by that path. Caller frees. */
static char *paths_abs(const char *home)
{
	if (home[0] == '/')
		return xstrdup(home);
	char *cwd = getcwd(NULL, 0);
	if (cwd == NULL)
		return xstrdup(home); /* its folder is gone: as given */
	while (home[0] == '.' && home[1] == '/')
		home += 2 + strspn(home + 2, "/");
	char *abs =
		strcmp(home, ".") == 0 || home[0] == '\0'
			? xstrdup(cwd)
			: xasprintf("%s/%s", strcmp(cwd, "/") ? cwd : "", home);
	free(cwd);
	return abs;
}

void paths_resolve(struct paths *p, const char *home)
{
	if (home == NULL || home[0] == '\0')
		home = getenv("MCPVISOR_HOME");
	if (home && home[0]) {
		char *abs = paths_abs(home);
		p->state_dir = xasprintf("%s/state", abs);
		p->cache_dir = xasprintf("%s/cache", abs);
		p->runtime_dir = xasprintf("%s/run", abs);
		p->config_file = xasprintf("%s/mcp.json", abs);
		free(abs);
	} else {
		p->state_dir = paths_xdg("XDG_STATE_HOME", ".local/state");
		p->cache_dir = paths_xdg("XDG_CACHE_HOME", ".cache");
		const char *rt = getenv("XDG_RUNTIME_DIR");
		if (rt && rt[0] == '/')
			p->runtime_dir = xasprintf("%s/mcpvisor", rt);
		else
			p->runtime_dir = xasprintf("/tmp/mcpvisor-%u",
						   (unsigned)getuid());
		p->config_file = paths_xdg("XDG_CONFIG_HOME", ".config");
		char *dir = p->config_file;
		p->config_file = xasprintf("%s/mcp.json", dir);
		free(dir);
	}
	p->runtime_file = xasprintf("%s/runtime.json", p->runtime_dir);
	p->socket_path = xasprintf("%s/mcpvisor.sock", p->runtime_dir);
	p->lock_file = xasprintf("%s/runtime.lock", p->state_dir);
}

int paths_create(const struct paths *p, char **err)
{
	int rc;
	if ((rc = fsutil_private_dir(p->state_dir, true, err)) < 0)
		return rc;
	if ((rc = fsutil_private_dir(p->cache_dir, true, err)) < 0)
		return rc;
	return fsutil_private_dir(p->runtime_dir, true, err);
}

int paths_check(const struct paths *p, char **err)
{
	/* A client trusts runtime.json for where to send requests (tool
	 * arguments, secrets among them): only from a folder of ours. */
	int rc = fsutil_private_dir(p->runtime_dir, false, err);
	if (rc < 0)
		return rc;
	return fsutil_private_dir(p->state_dir, false, err);
}

void paths_free(struct paths *p)
{
	free(p->state_dir);
	free(p->cache_dir);
	free(p->runtime_dir);
	free(p->config_file);
	free(p->runtime_file);
	free(p->socket_path);
	free(p->lock_file);
	memset(p, 0, sizeof *p);
}
