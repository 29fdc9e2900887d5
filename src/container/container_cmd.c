/*
 * The engine command line of a container server and the choice of engine
 * (container/container_cmd.h).
 */
#include "container/container_cmd.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/engine.h"
#include "ports/listener.h"
#include "util/random.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

static bool ctr_engine_ok(const char *e)
{
	const char *base = strrchr(e, '/');
	base = base ? base + 1 : e;
	return strcmp(base, "docker") == 0 || strcmp(base, "podman") == 0;
}

/* Whether an executable named prog is in PATH. */
static bool ctr_on_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (path == NULL || *path == '\0')
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		char *f = xasprintf("%.*s/%s", (int)n, n ? path : ".", prog);
		bool ok = access(f, X_OK) == 0;
		free(f);
		if (ok)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

char *container_engine_for(const struct server_config *s)
{
	if (s->container && s->container->engine)
		return xstrdup(s->container->engine);
	const char *env = getenv(CONTAINER_ENGINE_ENV);
	if (env && *env && ctr_engine_ok(env))
		return xstrdup(env);
	return xstrdup(ctr_on_path("docker") ? "docker" : "podman");
}

char *container_new_name(const char *server)
{
	char hex[2 * CONTAINER_NAME_HEX + 1];
	random_hex(hex, CONTAINER_NAME_HEX);
	return xasprintf(CONTAINER_NAME_PREFIX "%s-%s", server, hex);
}

struct ctr_argv {
	char **v;
	size_t n;
};

static void ctr_push(struct ctr_argv *a, char *owned)
{
	a->v = xrealloc(a->v, (a->n + 2) * sizeof *a->v);
	a->v[a->n++] = owned;
	a->v[a->n] = NULL;
}

static void ctr_push_labels(struct ctr_argv *a,
			    const struct container_cmd_in *in)
{
	ctr_push(a, xstrdup("--label"));
	ctr_push(a, xasprintf(ENGINE_LABEL_OWNER "=%s", in->token));
	ctr_push(a, xstrdup("--label"));
	ctr_push(a, xasprintf(ENGINE_LABEL_SERVER "=%s", in->s->name));
	if (in->key) {
		char hex[65];
		sha256_hex(in->key, strlen(in->key), hex);
		ctr_push(a, xstrdup("--label"));
		ctr_push(a, xasprintf(ENGINE_LABEL_KEY "=%s", hex));
	}
	if (in->cidfile) {
		ctr_push(a, xstrdup("--cidfile"));
		ctr_push(a, xstrdup(in->cidfile));
	}
}

char **container_args(const struct container_cmd_in *in)
{
	const struct server_config *s = in->s;
	const struct container_config *cc = s->container;
	struct ctr_argv a = {0};
	ctr_push(&a, NULL); /* so the result is never NULL */
	a.n = 0;
	if (cc->run_arg >= 0) {
		for (int i = 0; i <= cc->run_arg && i < (int)s->nargs; i++)
			ctr_push(&a, xstrdup(s->args[i]));
		ctr_push_labels(&a, in);
		if (cc->name == NULL) {
			ctr_push(&a, xstrdup("--name"));
			ctr_push(&a, xstrdup(in->name));
		}
		/* A run with a url: {port} is the port it is published on. */
		for (size_t i = (size_t)cc->run_arg + 1; i < s->nargs; i++)
			ctr_push(&a, in->host_port
					     ? listener_subst(s->args[i],
							      in->host_port)
					     : xstrdup(s->args[i]));
		return a.v;
	}
	ctr_push(&a, xstrdup("run"));
	ctr_push(&a, xstrdup("--rm"));
	if (cc->port == 0)
		ctr_push(&a, xstrdup("-i"));
	ctr_push(&a, xstrdup("--name"));
	ctr_push(&a, xstrdup(in->name));
	ctr_push_labels(&a, in);
	if (cc->port) {
		ctr_push(&a, xstrdup("-p"));
		ctr_push(&a,
			 xasprintf("127.0.0.1:%d:%d", in->host_port, cc->port));
	}
	for (size_t i = 0; i < s->nenv; i++) {
		ctr_push(&a, xstrdup("-e"));
		ctr_push(&a, xstrdup(s->env[i].key));
	}
	for (size_t i = 0; i < cc->nvolumes; i++) {
		ctr_push(&a, xstrdup("-v"));
		ctr_push(&a, xstrdup(cc->volumes[i]));
	}
	ctr_push(&a, xstrdup(cc->image));
	for (size_t i = 0; i < cc->nargs; i++)
		ctr_push(&a, xstrdup(cc->args[i]));
	return a.v;
}

void container_args_free(char **args)
{
	for (size_t i = 0; args && args[i]; i++)
		free(args[i]);
	free(args);
}
