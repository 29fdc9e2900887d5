/*
 * A setup plan made on the files' text: the host's entries that move cut
 * out, the relay entry put in, the moved servers added to mcpvisor's
 * config, and every other byte as the file had it. The new text is read
 * back and must say what the plan says, so a slip here never reaches a
 * file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config/hosts.h"
#include "config/jsonc.h"
#include "config/jsonc_edit.h"
#include "util/xmalloc.h"

/* The action the plan has for the host's server name. */
static const char *hosts_edit_action(const struct hosts_plan *p,
				     const char *name)
{
	size_t i;
	json_t *it;
	json_array_foreach(p->items, i, it)
	{
		const char *act =
			json_string_value(json_object_get(it, "action"));
		if (strcmp(act, "project") != 0 &&
		    strcmp(json_string_value(json_object_get(it, "name")),
			   name) == 0)
			return act;
	}
	return "";
}

/* Makes the edits; *out is read back (plain JSON if the file was) and
 * must be want. */
static int hosts_edit_end(struct jsonc_edit *e, const json_t *want, bool plain,
			  char **out, char **err)
{
	size_t len = 0;
	struct jsonc *back = NULL;
	struct jsonc_error je;
	int rc = jsonc_edit_finish(e, out, &len);
	if (rc == 0)
		rc = jsonc_parse(*out, len, plain ? JSONC_STRICT : 0, &back,
				 &je);
	if (rc == 0 && !json_equal(jsonc_root(back)->value, want))
		rc = -EINVAL;
	jsonc_free(back);
	if (rc == 0)
		return 0;
	free(*out);
	*out = NULL;
	*err = xstrdup("setup's edit of the text does not read back as "
		       "planned (a bug in mcpvisor: please report it)");
	return -EINVAL;
}

/* The object of the servers under key in before's root (NULL: none), or
 * -EINVAL with *err when that is no object. */
static int hosts_edit_servers(const struct jsonc *before, const char *key,
			      const struct jsonc_node **servers, char **err)
{
	const struct jsonc_node *root = jsonc_root(before);
	*servers = json_is_object(root->value) ? jsonc_member(root, key) : NULL;
	if (!json_is_object(root->value) ||
	    (*servers && !json_is_object((*servers)->value))) {
		*err = xasprintf("\"%s\" is not in an object of its own", key);
		return -EINVAL;
	}
	return 0;
}

int hosts_edit_host(const struct host_info *h, const struct hosts_plan *p,
		    const struct jsonc *before, char **out, char **err)
{
	*out = NULL;
	*err = NULL;
	if (before == NULL) {
		*out = hosts_dump(p->host, NULL);
		return 0;
	}
	const struct jsonc_node *servers;
	int rc = hosts_edit_servers(before, h->servers_key, &servers, err);
	if (rc < 0)
		return rc;
	struct jsonc_edit *e = jsonc_edit_new(before);
	if (servers == NULL) {
		json_t *obj = json_object();
		json_object_set(obj, p->relay_name, p->relay);
		jsonc_edit_add(e, jsonc_root(before), h->servers_key, obj);
		json_decref(obj);
	}
	for (size_t i = 0; servers && i < servers->nkids; i++) {
		const struct jsonc_node *kid = servers->kids[i];
		const char *act = hosts_edit_action(p, kid->name);
		bool goes =
			strcmp(act, "moved") == 0 || strcmp(act, "same") == 0;
		if (strcmp(act, "repoint") == 0)
			jsonc_edit_set(e, kid, NULL, p->relay);
		else if (goes && p->relay_at &&
			 strcmp(kid->name, p->relay_at) == 0)
			jsonc_edit_set(e, kid, p->relay_name, p->relay);
		else if (goes)
			jsonc_edit_drop(e, kid);
	}
	if (servers && p->relay_added && p->relay_at == NULL)
		jsonc_edit_add(e, servers, p->relay_name, p->relay);
	return hosts_edit_end(e, p->host, jsonc_is_plain(before), out, err);
}

int hosts_edit_mcpv(const struct hosts_plan *p, const struct jsonc *before,
		    const char *like, char **out, char **err)
{
	*out = NULL;
	*err = NULL;
	if (before == NULL) {
		*out = hosts_dump(p->mcpv, like);
		return 0;
	}
	const struct jsonc_node *servers;
	int rc = hosts_edit_servers(before, "mcpServers", &servers, err);
	if (rc < 0)
		return rc;
	struct jsonc_edit *e = jsonc_edit_new(before);
	if (servers == NULL)
		jsonc_edit_add(e, jsonc_root(before), "mcpServers", p->moved);
	const char *name;
	json_t *v;
	json_object_foreach(servers ? p->moved : NULL, name, v)
	{
		jsonc_edit_add(e, servers, name, v);
	}
	/* mcpvisor reads its config as plain JSON. */
	return hosts_edit_end(e, p->mcpv, true, out, err);
}
