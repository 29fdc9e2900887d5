/* Starting the user's browser on a sign-in URL, without a shell. */
#include "auth/browser.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth/urls.h"
#include "util/xmalloc.h"

static void browser_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	uv_close((uv_handle_t *)p, (uv_close_cb)free);
}

int browser_open(uv_loop_t *loop, const char *url, const char **what)
{
	static char entry[1024];
	char *argv[BROWSER_MAX_WORDS + 2];
	size_t n = 0;
	*what = NULL;
	if (!urls_secure(url) || url[0] == '-')
		return -EINVAL;
	const char *env = getenv("BROWSER");
	if (env && env[0]) {
		size_t len = strcspn(env, ":");
		if (len >= sizeof entry)
			return -E2BIG;
		memcpy(entry, env, len);
		entry[len] = '\0';
		bool placed = false;
		for (char *save = NULL, *w = strtok_r(entry, " \t", &save); w;
		     w = strtok_r(NULL, " \t", &save)) {
			if (n == BROWSER_MAX_WORDS)
				return -E2BIG;
			if (strcmp(w, "%s") == 0) {
				argv[n++] = (char *)url;
				placed = true;
			} else {
				argv[n++] = w;
			}
		}
		if (n == 0)
			return -ENOENT;
		if (!placed)
			argv[n++] = (char *)url;
	} else {
		/* xdg-open without a display falls back to text browsers
		 * that would take over this terminal. */
		if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
			return -ENOENT;
		argv[n++] = "xdg-open";
		argv[n++] = (char *)url;
	}
	argv[n] = NULL;
	uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
					 {.flags = UV_IGNORE},
					 {.flags = UV_IGNORE}};
	uv_process_options_t o = {
		.exit_cb = browser_exit_cb,
		.file = argv[0],
		.args = argv,
		.flags = UV_PROCESS_DETACHED,
		.stdio_count = 3,
		.stdio = stdio,
	};
	uv_process_t *p = xcalloc(1, sizeof *p);
	int rc = uv_spawn(loop, p, &o);
	if (rc < 0) {
		uv_close((uv_handle_t *)p, (uv_close_cb)free);
		return rc;
	}
	uv_unref((uv_handle_t *)p);
	*what = argv[0] == (char *)url ? "the browser" : argv[0];
	return 0;
}
