/*
 * Opening the authorization URL for `mcpvisor login`: the program in
 * $BROWSER, else xdg-open where there is a display, else none. Always
 * exec'd with the URL as one argument, never through a shell, and only for
 * a URL that is https or http on loopback (a server could otherwise hand a
 * command or a file: URL to whatever opens it).
 */
#ifndef MCPV_AUTH_BROWSER_H
#define MCPV_AUTH_BROWSER_H

#include <uv.h>

#define BROWSER_MAX_WORDS 16

/* Starts the browser on url and does not wait for it (the loop reaps it;
 * it outlives the loop if it must). $BROWSER's first ':'-separated entry
 * is split at spaces into a program and its arguments; a "%s" argument is
 * replaced by the URL, else the URL is added last. 0 with *what the
 * program started (static or the environment's); -ENOENT when there is
 * none to start (no $BROWSER, no display for xdg-open), -EINVAL for a URL
 * that is refused, or the -errno of the start. */
int browser_open(uv_loop_t *loop, const char *url, const char **what);

#endif
