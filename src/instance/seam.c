/*
 * The stdio transport behind the instance's transport seam: the instance
 * holds its connection as an opaque pointer and calls these; unit tests
 * put a fake in their place (instance_set_transport).
 */
#include <string.h>

#include "instance/instance_int.h"
#include "journal/journal.h"
#include "transport/stdio.h"

static int instance_stdio_open(uv_loop_t *loop,
			       const struct stdio_spawn_opts *opts,
			       const struct stdio_conn_cbs *cbs, void *ctx,
			       void **conn)
{
	struct stdio_conn *c = NULL;
	int rc = stdio_conn_spawn(loop, opts, cbs, ctx, &c);
	*conn = c;
	if (rc < 0)
		return rc;
	/* Its processes that leave the group are stopped by the owner
	 * token every one of them inherits. */
	const char *prefix = JOURNAL_OWNER_ENV "=";
	for (char *const *e = opts->env; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, prefix, strlen(prefix)) == 0)
			stdio_conn_set_owner(c, JOURNAL_OWNER_ENV,
					     *e + strlen(prefix));
	}
	return rc;
}

static int instance_stdio_send(void *conn, const char *msg, size_t len)
{
	return stdio_conn_send(conn, msg, len);
}

static void instance_stdio_stop(void *conn)
{
	stdio_conn_stop(conn);
}

static pid_t instance_stdio_pid(const void *conn)
{
	return stdio_conn_pid(conn);
}

static uint64_t instance_stdio_start_time(const void *conn)
{
	return stdio_conn_start_time(conn);
}

static char *instance_stdio_stderr_tail(const void *conn, int n)
{
	return stdio_conn_stderr_tail(conn, n);
}

static void instance_stdio_pause(void *conn, bool on)
{
	stdio_conn_pause(conn, on);
}

const struct instance_transport instance_stdio_transport = {
	.pause = instance_stdio_pause,
	.open = instance_stdio_open,
	.send = instance_stdio_send,
	.stop = instance_stdio_stop,
	.pid = instance_stdio_pid,
	.start_time = instance_stdio_start_time,
	.stderr_tail = instance_stdio_stderr_tail,
};

void instance_set_transport(struct instance *inst,
			    const struct instance_transport *tp)
{
	inst->tp = tp;
}
