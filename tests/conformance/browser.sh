#!/bin/sh
# The browser of `mcpvisor login` in the conformance runs ($BROWSER): it
# fetches the authorization URL and follows the redirects, as a user who
# approves at once would, so the authorization server's 302 reaches login's
# loopback listener. The URL comes as one argument, never through a shell.
# Then it stays a second, as a browser stays open after the page: login
# ends while its browser still runs (login must let it go without a leak).
# Its pid goes to $CONF_BROWSER_PIDS, for the driver to end it by pid (login
# starts it detached); curl is bounded on its own.
[ -n "${CONF_BROWSER_PIDS:-}" ] && echo $$ >>"$CONF_BROWSER_PIDS"
curl -sS -L --max-redirs 5 --max-time 15 -o /dev/null -- "$1"
exec sleep 1
