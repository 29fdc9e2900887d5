/* Status of container servers that are not running: their transport
 * ("container", "container-http"), image and engine as configured, and
 * never a value of their env. */
#include "hub_fixture.h"

static json_t *hc_server(json_t *st, const char *name)
{
	size_t i;
	json_t *sv;
	json_array_foreach(json_object_get(st, "servers"), i, sv)
	{
		if (strcmp(json_string_value(json_object_get(sv, "name")),
			   name) == 0)
			return sv;
	}
	cr_assert_fail("no server %s", name);
	return NULL;
}

static const char *hc_str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

Test(hub_container, status_names_transport_image_and_engine)
{
	fx_hub_open(
		"{\"mcpServers\":{"
		"\"cs\":{\"command\":\"podman\",\"args\":[\"run\",\"-i\","
		"\"mcp/a:1\"],\"env\":{\"TOKEN\":\"hc-secret-value\"}},"
		"\"ch\":{\"container\":{\"image\":\"mcp/b:2\",\"port\":8080,"
		"\"engine\":\"docker\",\"env\":{\"K\":\"hc-secret-2\"}},"
		"\"url\":\"http://127.0.0.1:{port}/mcp\"},"
		"\"cx\":{\"container\":{\"image\":\"mcp/c\"}}}}",
		true);
	json_t *st = hub_status(fx_hub, HUB_STATUS_VERBOSE);
	json_t *cs = hc_server(st, "cs"), *ch = hc_server(st, "ch"),
	       *cx = hc_server(st, "cx");
	cr_assert_str_eq(hc_str(cs, "transport"), "container");
	cr_assert_str_eq(hc_str(cs, "image"), "mcp/a:1");
	cr_assert_str_eq(hc_str(cs, "engine"), "podman");
	cr_assert_str_eq(hc_str(ch, "transport"), "container-http");
	cr_assert_str_eq(hc_str(ch, "image"), "mcp/b:2");
	cr_assert_str_eq(hc_str(ch, "engine"), "docker");
	cr_assert_str_eq(hc_str(cx, "transport"), "container");
	cr_assert_null(json_object_get(cx, "engine"), "chosen when it starts");
	char *text = json_dumps(st, JSON_COMPACT);
	cr_assert_null(strstr(text, "hc-secret"), "%s", text);
	free(text);
	json_decref(st);
	fx_teardown();
}

/* An image made from ${VAR} is a secret like an arg from one: masked in
 * status, whose image otherwise shows as configured. */
Test(hub_container, an_image_from_a_variable_is_masked)
{
	setenv("HC_IMAGE", "registry.example/hc-secret-image:1", 1);
	fx_hub_open("{\"mcpServers\":{"
		    "\"ci\":{\"container\":{\"image\":\"${HC_IMAGE}\"}},"
		    "\"ch\":{\"container\":{\"image\":\"${HC_IMAGE}\","
		    "\"port\":8080},\"url\":\"http://127.0.0.1:{port}/mcp\"}}}",
		    true);
	json_t *st = hub_status(fx_hub, HUB_STATUS_VERBOSE);
	cr_assert_str_eq(hc_str(hc_server(st, "ci"), "image"), "***");
	cr_assert_str_eq(hc_str(hc_server(st, "ch"), "image"), "***");
	char *text = json_dumps(st, JSON_COMPACT);
	cr_assert_null(strstr(text, "hc-secret"), "%s", text);
	free(text);
	json_decref(st);
	fx_teardown();
	unsetenv("HC_IMAGE");
}
