/*
 * The stdio transport behind the instance's transport seam: the instance
 * holds its connection as an opaque pointer and calls these; unit tests
 * put a fake in their place (instance_set_transport).
 */
#include "instance/instance_int.h"
#include "journal/journal.h"
#include "transport/supervisor.h"

static int instance_stdio_open(uv_loop_t *loop, const struct sup_spec *opts,
			       const struct sup_cbs *cbs, void *ctx,
			       void **conn)
{
	struct supervisor *c = NULL;
	int rc = sup_spawn(loop, opts, cbs, ctx, &c);
	*conn = c;
	if (rc < 0)
		return rc;
	return rc;
}

static int instance_stdio_send(void *conn, const char *msg, size_t len)
{
	return sup_send(conn, msg, len);
}

static void instance_stdio_stop(void *conn)
{
	sup_stop(conn);
}

static pid_t instance_stdio_pid(const void *conn)
{
	return sup_pid(conn);
}

static uint64_t instance_stdio_start_time(const void *conn)
{
	return sup_start_time(conn);
}

static char *instance_stdio_stderr_tail(const void *conn, int n)
{
	return sup_log_tail(conn, n);
}

static void instance_stdio_pause(void *conn, bool on)
{
	sup_pause(conn, on);
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
