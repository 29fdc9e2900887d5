/* The engine command line of a container server: what mcpvisor adds (labels,
 * --name, the loopback publish, -e KEY without values) and that nothing the
 * user wrote changes; and the choice of engine. */
#include <stdlib.h>
#include <string.h>

#include "config_fixture.h"
#include "container/container_cmd.h"
#include "util/sha256.h"

static char *cmd_join(char **v)
{
	char *out = xstrdup("");
	for (size_t i = 0; v[i]; i++) {
		char *next = xasprintf("%s%s%s", out, i ? " " : "", v[i]);
		free(out);
		out = next;
	}
	return out;
}

static char *cmd_of(const char *json, const char *name, int port)
{
	struct config *cfg = cf_one(json);
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	struct container_cmd_in in = {
		.s = &cfg->servers[0],
		.name = name,
		.token = "tok123",
		.key = "the-key",
		.host_port = port,
	};
	char **args = container_args(&in);
	char *s = cmd_join(args);
	container_args_free(args);
	config_free(cfg);
	return s;
}

Test(container_cmd, command_form_gets_labels_and_a_name_after_run)
{
	char hash[65];
	sha256_hex("the-key", 7, hash);
	char *got = cmd_of("{\"command\": \"docker\", \"args\": [\"run\", "
			   "\"-i\", \"--rm\", \"--memory\", \"512m\", \"-p\", "
			   "\"9000:9000\", \"mcp/x\", \"--a\"]}",
			   "mcpv-s-0123456789ab", 0);
	char *want = xasprintf(
		"run --label mcpvisor.owner=tok123 --label mcpvisor.server=s "
		"--label mcpvisor.key=%s --name mcpv-s-0123456789ab -i --rm "
		"--memory 512m -p 9000:9000 mcp/x --a",
		hash);
	cr_assert_str_eq(got, want);
	free(want);
	free(got);
}

Test(container_cmd, the_user_s_name_is_kept_and_none_added)
{
	char *got =
		cmd_of("{\"command\": \"podman\", \"args\": [\"container\", "
		       "\"run\", \"-i\", \"--name=mine\", \"img\"]}",
		       "mine", 0);
	cf_assert_has(got, "container run --label mcpvisor.owner=tok123 ");
	cf_assert_has(got, " -i --name=mine img");
	cr_assert_null(strstr(got, "--name mine"), "%s", got);
	free(got);
}

Test(container_cmd, explicit_stdio_form)
{
	setenv("CMD_SECRET", "very-secret-value", 1);
	char *got = cmd_of("{\"container\": {\"image\": \"img:2\", \"args\": "
			   "[\"serve\"], \"env\": {\"API_KEY\": "
			   "\"${CMD_SECRET}\"}, \"volumes\": [\"data:/d\"]}}",
			   "mcpv-s-1", 0);
	cf_assert_has(got, "run --rm -i --name mcpv-s-1 --label "
			   "mcpvisor.owner=tok123");
	cf_assert_has(got, " -e API_KEY -v data:/d img:2 serve");
	/* Values reach the engine through its environment only. */
	cf_assert_lacks(got, "very-secret-value");
	cf_assert_lacks(got, " -p ");
	free(got);
}

Test(container_cmd, explicit_http_form_publishes_on_loopback_only)
{
	char *got = cmd_of("{\"container\": {\"image\": \"img\", \"port\": "
			   "8080}, \"url\": \"http://127.0.0.1:{port}/mcp\"}",
			   "mcpv-s-2", 41234);
	cf_assert_has(got, " -p 127.0.0.1:41234:8080 img");
	cf_assert_lacks(got, " -i ");
	free(got);
}

Test(container_cmd, without_a_key_no_key_label)
{
	struct config *cfg = cf_one("{\"container\": {\"image\": \"i\"}}");
	struct container_cmd_in in = {
		.s = &cfg->servers[0], .name = "n", .token = "t"};
	char **args = container_args(&in);
	char *s = cmd_join(args);
	cf_assert_lacks(s, "mcpvisor.key");
	free(s);
	container_args_free(args);
	config_free(cfg);
}

Test(container_cmd, engine_choice)
{
	struct config *cfg = cf_one("{\"container\": {\"image\": \"i\"}}");
	setenv("PATH", "/nonexistent", 1);
	unsetenv(CONTAINER_ENGINE_ENV);
	char *e = container_engine_for(&cfg->servers[0]);
	cr_assert_str_eq(e, "podman", "no docker on PATH");
	free(e);
	setenv(CONTAINER_ENGINE_ENV, "/opt/x/docker", 1);
	e = container_engine_for(&cfg->servers[0]);
	cr_assert_str_eq(e, "/opt/x/docker");
	free(e);
	setenv(CONTAINER_ENGINE_ENV, "nerdctl", 1);
	e = container_engine_for(&cfg->servers[0]);
	cr_assert_str_eq(e, "podman", "an engine it cannot drive is ignored");
	free(e);
	config_free(cfg);

	cfg = cf_one("{\"command\": \"/usr/bin/docker\", \"args\": [\"run\", "
		     "\"i\"]}");
	e = container_engine_for(&cfg->servers[0]);
	cr_assert_str_eq(e, "/usr/bin/docker", "the command as given");
	free(e);
	config_free(cfg);
}

Test(container_cmd, names_are_fresh_and_prefixed)
{
	char *a = container_new_name("srv");
	char *b = container_new_name("srv");
	cr_assert_eq(strncmp(a, "mcpv-srv-", 9), 0, "%s", a);
	cr_assert_eq(strlen(a), 9 + 12);
	cr_assert_str_neq(a, b);
	free(a);
	free(b);
}

Test(container_cmd, cidfile_after_the_labels_unless_the_user_gave_one)
{
	struct config *cfg = cf_one("{\"command\": \"docker\", \"args\": "
				    "[\"run\", \"-i\", \"img\"]}");
	cr_assert_not(cfg->servers[0].container->cidfile);
	struct container_cmd_in in = {.s = &cfg->servers[0],
				      .name = "n",
				      .token = "t",
				      .cidfile = "/tmp/d/cid"};
	char **args = container_args(&in);
	char *s = cmd_join(args);
	cf_assert_has(s, "--label mcpvisor.server=s --cidfile /tmp/d/cid "
			 "--name n -i img");
	free(s);
	container_args_free(args);
	config_free(cfg);
	cfg = cf_one("{\"command\": \"docker\", \"args\": [\"run\", \"-i\", "
		     "\"--cidfile=/x\", \"img\"]}");
	cr_assert(cfg->servers[0].container->cidfile, "the user's is kept");
	config_free(cfg);
}

Test(container_cmd, a_run_with_a_url_gets_its_port_put_in)
{
	char *got = cmd_of("{\"command\": \"podman\", \"args\": [\"run\", "
			   "\"-p\", \"127.0.0.1:{port}:8080\", \"img\", "
			   "\"--x={port}\"], \"url\": "
			   "\"http://127.0.0.1:{port}/mcp\"}",
			   "mcpv-s-3", 40111);
	cf_assert_has(got, " --name mcpv-s-3 -p 127.0.0.1:40111:8080 img "
			   "--x=40111");
	free(got);
}
