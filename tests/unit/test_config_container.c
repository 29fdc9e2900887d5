/* Container servers in a config: the `docker|podman run` command form, the
 * explicit "container" form, their errors, identity and check's view. */
#include "config/secrets.h"
#include "config_fixture.h"

static const struct server_config *cc_ok(struct config *cfg)
{
	const struct server_config *s = &cfg->servers[0];
	cr_assert_null(s->error, "unexpected error: %s", s->error);
	cr_assert_not_null(s->container);
	return s;
}

static void cc_fails(const char *json, const char *needle)
{
	struct config *cfg = cf_one(json);
	cf_assert_has(cfg->servers[0].error, needle);
	config_free(cfg);
}

Test(config_container, docker_run_is_a_container)
{
	struct config *cfg = cf_one(
		"{\"command\": \"docker\", \"args\": [\"run\", \"-i\", "
		"\"--rm\", \"-e\", \"TOKEN\", \"--memory=512m\", \"--cpus\", "
		"\"1\", \"mcp/github\", \"--flag\"]}");
	const struct server_config *s = cc_ok(cfg);
	cr_assert_eq(s->kind, SERVER_CONTAINER);
	cr_assert_str_eq(s->container->engine, "docker");
	cr_assert_eq(s->container->run_arg, 0);
	cr_assert(s->container->rm);
	cr_assert_null(s->container->name);
	cr_assert_str_eq(s->container->image, "mcp/github");
	config_free(cfg);
}

Test(config_container, podman_container_run_with_name_and_path)
{
	struct config *cfg =
		cf_one("{\"command\": \"/usr/bin/podman\", \"args\": "
		       "[\"container\", \"run\", \"-it\", \"--name=mine\", "
		       "\"-v\", \"/a:/b\", \"-eX=1\", \"img:1\"]}");
	const struct server_config *s = cc_ok(cfg);
	cr_assert_eq(s->kind, SERVER_CONTAINER);
	cr_assert_str_eq(s->container->engine, "/usr/bin/podman");
	cr_assert_eq(s->container->run_arg, 1);
	cr_assert_not(s->container->rm);
	cr_assert_str_eq(s->container->name, "mine");
	cr_assert_str_eq(s->container->image, "img:1");
	config_free(cfg);

	cfg = cf_one("{\"command\": \"podman\", \"args\": [\"run\", "
		     "\"--name\", \"n2\", \"--rm=false\", \"i\"]}");
	s = cc_ok(cfg);
	cr_assert_str_eq(s->container->name, "n2");
	cr_assert_not(s->container->rm);
	config_free(cfg);
}

Test(config_container, other_engine_commands_stay_stdio)
{
	static const char *const plain[] = {
		"{\"command\": \"docker\", \"args\": [\"mcp\", \"gateway\", "
		"\"run\"]}",
		"{\"command\": \"docker\", \"args\": [\"--context\", \"x\", "
		"\"run\", \"img\"]}",
		"{\"command\": \"mydocker\", \"args\": [\"run\", \"img\"]}",
		"{\"command\": \"/opt/docker-run\", \"args\": [\"run\", "
		"\"img\"]}",
		"{\"command\": \"npx\", \"args\": [\"run\"]}",
	};
	for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
		struct config *cfg = cf_one(plain[i]);
		cr_assert_null(cfg->servers[0].error);
		cr_assert_eq(cfg->servers[0].kind, SERVER_STDIO, "%s",
			     plain[i]);
		cr_assert_null(cfg->servers[0].container);
		config_free(cfg);
	}
}

Test(config_container, command_form_refusals)
{
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"-d\", "
		 "\"img\"]}",
		 "-d/--detach");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"-dit\", "
		 "\"img\"]}",
		 "-d/--detach");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", "
		 "\"--detach\", \"img\"]}",
		 "-d/--detach");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"-i\"]}",
		 "no image");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"--name\", "
		 "\"-bad\", \"img\"]}",
		 "--name");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"-l\", "
		 "\"mcpvisor.owner=x\", \"img\"]}",
		 "\"mcpvisor.\"");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", "
		 "\"--label=mcpvisor.key=x\", \"img\"]}",
		 "\"mcpvisor.\"");
}

/* A name is shown in status, logs and check: one made from a ${VAR}
 * could show a secret, so it is refused, and its value is in no text. */
Test(config_container, a_name_from_a_variable_is_refused)
{
	setenv("CC_NAME_SECRET", "n1-s3cr3tvalue", 1);
	const char *forms[] = {
		"{\"command\": \"docker\", \"args\": [\"run\", \"-i\", "
		"\"--name\", \"n1${CC_NAME_SECRET}\", \"img\"]}",
		"{\"command\": \"docker\", \"args\": [\"run\", \"-i\", "
		"\"--name=${CC_NAME_SECRET}\", \"img\"]}",
	};
	for (size_t i = 0; i < 2; i++) {
		struct config *cfg = cf_one(forms[i]);
		const struct server_config *s = &cfg->servers[0];
		cf_assert_has(s->error, "not a ${VAR}");
		json_t *d = config_server_describe(s);
		char *text = json_dumps(d, JSON_COMPACT);
		cr_assert_null(strstr(text, "s3cr3tvalue"), "%s", text);
		free(text);
		json_decref(d);
		config_free(cfg);
	}
	unsetenv("CC_NAME_SECRET");
}

Test(config_container, explicit_http_form)
{
	setenv("CC_TOKEN", "tok-secret-1234", 1);
	struct config *cfg = cf_one(
		"{\"container\": {\"image\": \"mcp/x:2\", \"port\": 8080, "
		"\"args\": [\"--verbose\", \"${CC_TOKEN}\"], \"env\": "
		"{\"API_KEY\": \"${CC_TOKEN}\"}, \"volumes\": "
		"[\"data:/data\"], \"engine\": \"podman\"}, \"url\": "
		"\"http://127.0.0.1:{port}/mcp\"}");
	const struct server_config *s = cc_ok(cfg);
	cr_assert_eq(s->kind, SERVER_CONTAINER_HTTP);
	struct container_config *cc = s->container;
	cr_assert_str_eq(cc->image, "mcp/x:2");
	cr_assert_eq(cc->port, 8080);
	cr_assert_eq(cc->run_arg, -1);
	cr_assert(cc->rm);
	cr_assert_str_eq(cc->engine, "podman");
	cr_assert_eq(cc->nargs, 2);
	cr_assert_str_eq(cc->args[1], "tok-secret-1234");
	cr_assert_eq(cc->nvolumes, 1);
	cr_assert_eq(s->nenv, 1);
	cr_assert_str_eq(s->env[0].key, "API_KEY");
	/* check's view: env masked, args from ${VAR} as written. */
	char *d = cf_dump(config_server_describe(s));
	cf_assert_has(d, "\"transport\":\"container-http\"");
	cf_assert_has(d, "\"image\":\"mcp/x:2\"");
	cf_assert_has(d, "\"${CC_TOKEN}\"");
	cf_assert_lacks(d, "tok-secret-1234");
	free(d);
	char *fp = cf_dump(config_server_identity(s, true, "salt"));
	cf_assert_lacks(fp, "tok-secret-1234");
	cf_assert_has(fp, "\"image\":\"mcp/x:2\"");
	free(fp);
	config_free(cfg);
}

/* An image from ${VAR} is a secret as an arg from one is: check shows
 * its template, the identity a fingerprint, and the secrets of the server
 * (what status and logs are masked with) hold its value. */
Test(config_container, an_image_from_a_variable_is_a_secret)
{
	setenv("CC_IMAGE", "registry.example/cc-secret-image:3", 1);
	struct config *cfg =
		cf_one("{\"container\": {\"image\": \"${CC_IMAGE}\"}}");
	const struct server_config *s = cc_ok(cfg);
	cr_assert_str_eq(s->container->image,
			 "registry.example/cc-secret-image:3", "what runs");
	char *d = cf_dump(config_server_describe(s));
	cf_assert_has(d, "\"image\":\"${CC_IMAGE}\"");
	cf_assert_lacks(d, "cc-secret");
	free(d);
	char *fp = cf_dump(config_server_identity(s, true, "salt"));
	cf_assert_lacks(fp, "cc-secret");
	free(fp);
	struct secrets *sec = secrets_new();
	secrets_add_server(sec, s);
	char *m = secrets_mask(
		sec, "Error: registry.example/cc-secret-image:3: image not "
		     "known");
	cf_assert_lacks(m, "cc-secret");
	free(m);
	secrets_free(sec);
	config_free(cfg);
	unsetenv("CC_IMAGE");
}

Test(config_container, explicit_stdio_form_and_default_engine)
{
	struct config *cfg = cf_one("{\"container\": {\"image\": \"img\"}}");
	const struct server_config *s = cc_ok(cfg);
	cr_assert_eq(s->kind, SERVER_CONTAINER);
	cr_assert_null(s->container->engine);
	cr_assert_eq(s->container->port, 0);
	char *d = cf_dump(config_server_describe(s));
	cf_assert_has(d, "\"transport\":\"container\"");
	free(d);
	config_free(cfg);
}

Test(config_container, explicit_form_refusals)
{
	cc_fails("{\"container\": {\"port\": 80}, \"url\": "
		 "\"http://127.0.0.1:{port}/\"}",
		 "container.image");
	cc_fails("{\"container\": {\"image\": \"i\", \"port\": 70000}, "
		 "\"url\": \"http://127.0.0.1:{port}/\"}",
		 "1 to 65535");
	cc_fails("{\"container\": {\"image\": \"i\", \"port\": 80}, \"url\": "
		 "\"http://127.0.0.1:9/\"}",
		 "{port}");
	cc_fails("{\"container\": {\"image\": \"i\", \"port\": 80}, \"url\": "
		 "\"http://example.com:{port}/\"}",
		 "loopback");
	cc_fails("{\"container\": {\"image\": \"i\", \"port\": 80}}",
		 "field \"url\": missing");
	cc_fails("{\"container\": {\"image\": \"i\"}, \"url\": "
		 "\"http://127.0.0.1:{port}/\"}",
		 "container.port");
	cc_fails("{\"container\": {\"image\": \"i\"}, \"command\": \"x\"}",
		 "not both");
	cc_fails("{\"container\": {\"image\": \"i\"}, \"env\": {\"A\": "
		 "\"b\"}}",
		 "goes inside");
	cc_fails("{\"container\": {\"image\": \"-x\"}}", "not an image");
	cc_fails("{\"container\": {\"image\": \"i\", \"engine\": "
		 "\"nerdctl\"}}",
		 "container.engine");
	cc_fails("{\"container\": {\"image\": \"i\", \"args\": "
		 "[\"{port}\"]}}",
		 "container.port");
	cc_fails("{\"container\": \"img\"}", "expected an object");
	cc_fails("{\"container\": {\"image\": \"i\", \"volumes\": [3]}}",
		 "container.volumes");
}

Test(config_container, identity_tells_containers_apart)
{
	struct config *a = cf_one("{\"container\": {\"image\": \"i1\"}}");
	struct config *b = cf_one("{\"container\": {\"image\": \"i2\"}}");
	char *ia = cf_dump(config_server_identity(&a->servers[0], true, "s"));
	char *ib = cf_dump(config_server_identity(&b->servers[0], true, "s"));
	cr_assert_str_neq(ia, ib);
	free(ia);
	free(ib);
	config_free(a);
	config_free(b);
	/* A plain stdio server's identity has no container field (its
	 * instance key and tool cache name stay what they were). */
	struct config *p = cf_one("{\"command\": \"x\"}");
	char *ip = cf_dump(config_server_identity(&p->servers[0], true, "s"));
	cf_assert_lacks(ip, "container");
	free(ip);
	config_free(p);
}

Test(config_container, a_run_with_a_url_is_an_http_container)
{
	struct config *cfg = cf_one(
		"{\"command\": \"docker\", \"args\": [\"run\", \"--rm\", "
		"\"-p\", \"127.0.0.1:{port}:8080/tcp\", \"img\", "
		"\"--port\", \"8080\"], \"url\": "
		"\"http://127.0.0.1:{port}/mcp\", \"type\": \"http\"}");
	const struct server_config *s = cc_ok(cfg);
	cr_assert_eq(s->kind, SERVER_CONTAINER_HTTP);
	cr_assert_eq(s->http_type, HTTP_TYPE_STREAMABLE);
	cr_assert_eq(s->container->port, 8080);
	cr_assert_eq(s->container->run_arg, 0);
	cr_assert_str_eq(s->container->image, "img");
	cr_assert_eq(cfg->nwarnings, 0, "no -i needed: %s",
		     cfg->nwarnings ? cfg->warnings[0] : "");
	config_free(cfg);
	/* Published on every address, twice, or not at all: refused. */
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"-p\", "
		 "\"{port}:80\", \"img\"], \"url\": "
		 "\"http://127.0.0.1:{port}/\"}",
		 "on loopback");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"-p\", "
		 "\"127.0.0.1:{port}:80\", \"-p\", \"127.0.0.1:{port}:81\", "
		 "\"img\"], \"url\": \"http://127.0.0.1:{port}/\"}",
		 "once");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"img\"], "
		 "\"url\": \"http://127.0.0.1:{port}/\"}",
		 "once");
	cc_fails("{\"command\": \"docker\", \"args\": [\"run\", \"-p\", "
		 "\"127.0.0.1:{port}:80\", \"img\"], \"url\": "
		 "\"http://example.com:{port}/\"}",
		 "loopback");
	cc_fails("{\"container\": {\"image\": \"i\", \"port\": 80}, \"url\": "
		 "\"http://[::1]:{port}/\"}",
		 "127.0.0.1 only");
}

Test(config_container, a_run_without_i_warns)
{
	struct config *cfg = cf_one("{\"command\": \"docker\", \"args\": "
				    "[\"run\", \"--rm\", \"img\"]}");
	cr_assert_null(cfg->servers[0].error);
	cr_assert_eq(cfg->servers[0].kind, SERVER_CONTAINER);
	cr_assert_eq(cfg->nwarnings, 1);
	cf_assert_has(cfg->warnings[0], "without -i");
	config_free(cfg);
	static const char *const fine[] = {
		"{\"command\": \"docker\", \"args\": [\"run\", \"-i\", "
		"\"i\"]}",
		"{\"command\": \"docker\", \"args\": [\"run\", "
		"\"--interactive\", \"i\"]}",
		"{\"command\": \"docker\", \"args\": [\"run\", \"-ie\", "
		"\"A=1\", \"i\"]}",
	};
	for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
		cfg = cf_one(fine[i]);
		cr_assert_eq(cfg->nwarnings, 0, "%s: %s", fine[i],
			     cfg->nwarnings ? cfg->warnings[0] : "");
		config_free(cfg);
	}
}

Test(config_container, a_run_with_t_warns)
{
	struct config *cfg = cf_one("{\"command\": \"docker\", \"args\": "
				    "[\"run\", \"-it\", \"img\"]}");
	cr_assert_null(cfg->servers[0].error);
	cr_assert_eq(cfg->nwarnings, 1);
	cf_assert_has(cfg->warnings[0], "with -t");
	config_free(cfg);
}
