/*
 * The hosts' config files: their documented locations, the shape of their
 * server entries, and the plan that moves entries into mcpvisor's config
 * and leaves one relay entry behind. Every decision about an entry is made
 * here, so `setup` only reads, shows and writes.
 */
#include "config/hosts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "util/buf.h"
#include "util/xmalloc.h"

/* A location under $HOME; xdg: under $XDG_CONFIG_HOME instead when set
 * (Electron apps on Linux follow it; ~/.config otherwise). */
struct host_loc {
	const char *rel;
	bool xdg;
};

#define HOSTS_MAX_LOCS 3

static const struct host_def {
	struct host_info info;
	struct host_loc linux_locs[HOSTS_MAX_LOCS];
	struct host_loc mac_locs[HOSTS_MAX_LOCS];
} hosts_table[] = {
	{{"claude-desktop", "Claude Desktop", "mcpServers", false, false},
	 {{"Claude/claude_desktop_config.json", true}},
	 {{"Library/Application Support/Claude/claude_desktop_config.json",
	   false}}},
	{{"claude-code", "Claude Code", "mcpServers", true, false},
	 {{".claude.json", false}},
	 {{".claude.json", false}}},
	{{"cursor", "Cursor", "mcpServers", false, true},
	 {{".cursor/mcp.json", false}},
	 {{".cursor/mcp.json", false}}},
	{{"vscode", "VS Code", "servers", true, true},
	 {{"Code/User/mcp.json", true}},
	 {{"Library/Application Support/Code/User/mcp.json", false}}},
};

#define HOSTS_N (sizeof hosts_table / sizeof hosts_table[0])

/* The fields a host entry may have that mean the same in mcpvisor's
 * config; any other would be lost or misread, so its entry stays. */
static const char *const hosts_fields[] = {
	"command", "args", "env",      "cwd", "url",
	"headers", "type", "disabled", NULL,
};

/* The editors' predefined variables that name something of the editor
 * (a folder, a file): nothing mcpvisor's environment can give. */
static const char *const hosts_editor_names[] = {
	"workspaceFolder",
	"workspaceFolderBasename",
	"workspaceRoot",
	"file",
	"fileBasename",
	"fileDirname",
	"relativeFile",
	"cwd",
	"pathSeparator",
	"/",
	NULL,
};

const struct host_info *hosts_find(const char *name)
{
	for (size_t i = 0; i < HOSTS_N; i++)
		if (strcmp(hosts_table[i].info.name, name) == 0)
			return &hosts_table[i].info;
	return NULL;
}

const char *hosts_names(void)
{
	return "claude-desktop, claude-code, cursor, vscode";
}

static char *hosts_loc_path(const struct host_loc *l, const char *home)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	if (l->xdg && xdg && xdg[0] == '/')
		return xasprintf("%s/%s", xdg, l->rel);
	if (l->xdg)
		return xasprintf("%s/.config/%s", home, l->rel);
	return xasprintf("%s/%s", home, l->rel);
}

char *hosts_default_path(const struct host_info *h)
{
	const char *home = getenv("HOME");
	if (home == NULL || home[0] != '/')
		return NULL;
	const struct host_def *d = (const struct host_def *)h;
#ifdef __APPLE__
	const struct host_loc *sets[2] = {d->mac_locs, d->linux_locs};
#else
	const struct host_loc *sets[2] = {d->linux_locs, d->mac_locs};
#endif
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < HOSTS_MAX_LOCS && sets[s][i].rel; i++) {
			char *p = hosts_loc_path(&sets[s][i], home);
			struct stat st;
			if (stat(p, &st) == 0)
				return p;
			free(p);
		}
	return hosts_loc_path(&sets[0][0], home);
}

bool hosts_is_relay(const json_t *entry)
{
	const char *cmd = json_string_value(json_object_get(entry, "command"));
	json_t *args = json_object_get(entry, "args");
	if (cmd == NULL || !json_is_array(args))
		return false;
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	const char *first = json_string_value(json_array_get(args, 0));
	return strcmp(base, "mcpvisor") == 0 && first &&
	       strcmp(first, "relay") == 0;
}

const char *hosts_relay_home(const json_t *entry)
{
	const char *home = NULL;
	size_t i;
	json_t *a;
	json_t *args = json_object_get(entry, "args");
	json_array_foreach(args, i, a)
	{
		const char *s = json_string_value(a);
		if (s && (strcmp(s, "--home") == 0 || strcmp(s, "-H") == 0))
			home = json_string_value(json_array_get(args, i + 1));
		else if (s && strncmp(s, "--home=", 7) == 0)
			home = s + 7;
	}
	if (home == NULL)
		home = json_string_value(json_object_get(
			json_object_get(entry, "env"), "MCPVISOR_HOME"));
	return home && home[0] ? home : NULL;
}

json_t *hosts_relay_entry(const struct host_info *h, const char *command,
			  const char *home)
{
	json_t *e = json_object();
	if (h->typed)
		json_object_set_new(e, "type", json_string("stdio"));
	json_object_set_new(e, "command", json_string(command));
	json_t *args = json_pack("[s]", "relay");
	if (home) {
		json_array_append_new(args, json_string("--home"));
		json_array_append_new(args, json_string(home));
	}
	json_object_set_new(e, "args", args);
	return e;
}

const char *hosts_action_name(enum hosts_action a)
{
	static const char *const names[] = {"moved",  "same",  "clash",
					    "cannot", "relay", "repoint",
					    "project"};
	return names[a];
}

/* ---- one entry ---- */

static bool hosts_var_name(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* in with the editor's ${env:X} and ${userHome} rewritten as mcpvisor
 * writes them; NULL with *why when it uses a variable mcpvisor cannot
 * give (${input:id}, ${workspaceFolder}). Caller frees. */
static char *hosts_rewrite_vars(const struct host_info *h, const char *in,
				char **why)
{
	struct buf b;
	buf_init(&b);
	const char *p = in;
	for (;;) {
		const char *open = strstr(p, "${");
		const char *close = open ? strchr(open + 2, '}') : NULL;
		if (open == NULL || close == NULL) {
			buf_append(&b, p, strlen(p));
			break;
		}
		buf_append(&b, p, (size_t)(open - p));
		const char *v = open + 2;
		size_t n = (size_t)(close - v);
		p = close + 1;
		if (h->editor_vars && n > 4 && strncmp(v, "env:", 4) == 0 &&
		    hosts_var_name(v + 4, n - 4)) {
			/* The editor gives a variable that is not set as
			 * empty; mcpvisor refuses ${X} then, so the default
			 * keeps the editor's meaning. */
			buf_append(&b, "${", 2);
			buf_append(&b, v + 4, n - 4);
			buf_append(&b, ":-}", 3);
			continue;
		}
		if (h->editor_vars && n == 8 &&
		    strncmp(v, "userHome", 8) == 0) {
			buf_append(&b, "${HOME}", 7);
			continue;
		}
		bool editor = false;
		for (size_t i = 0; hosts_editor_names[i] && !editor; i++)
			editor = strlen(hosts_editor_names[i]) == n &&
				 strncmp(hosts_editor_names[i], v, n) == 0;
		const char *colon = memchr(v, ':', n);
		if (h->editor_vars && (editor || (colon && colon[1] != '-'))) {
			*why = xasprintf("it uses ${%.*s}, a variable of %s "
					 "that mcpvisor cannot expand",
					 (int)(n > 64 ? 64 : n), v, h->title);
			buf_free(&b);
			return NULL;
		}
		/* Anything else is mcpvisor's own syntax, or an error the
		 * validation names. */
		buf_append(&b, open, (size_t)(p - open));
	}
	return buf_steal(&b);
}

/* Applies f to every string of entry a variable may sit in (command,
 * args, env and header values, cwd, url), in place. */
static int hosts_each_value(json_t *entry, int (*f)(json_t *str, void *arg),
			    void *arg)
{
	static const char *const scalars[] = {"command", "cwd", "url", NULL};
	static const char *const maps[] = {"env", "headers", NULL};
	int rc = 0;
	for (size_t i = 0; scalars[i] && rc == 0; i++) {
		json_t *v = json_object_get(entry, scalars[i]);
		if (json_is_string(v))
			rc = f(v, arg);
	}
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(entry, "args"), k, v)
	{
		if (rc == 0 && json_is_string(v))
			rc = f(v, arg);
	}
	for (size_t i = 0; maps[i] && rc == 0; i++) {
		const char *key;
		json_object_foreach(json_object_get(entry, maps[i]), key, v)
		{
			if (rc == 0 && json_is_string(v))
				rc = f(v, arg);
		}
	}
	return rc;
}

struct hosts_rw {
	const struct host_info *h;
	char *why;
};

static int hosts_rewrite_cb(json_t *str, void *arg)
{
	struct hosts_rw *rw = arg;
	char *out = hosts_rewrite_vars(rw->h, json_string_value(str), &rw->why);
	if (out == NULL)
		return -1;
	json_string_set(str, out);
	free(out);
	return 0;
}

/* Adds to arg (an array) the name of each ${env:NAME} in str, once. */
static int hosts_env_ref_cb(json_t *str, void *arg)
{
	json_t *names = arg;
	const char *p = json_string_value(str);
	while ((p = strstr(p, "${env:")) != NULL) {
		const char *v = p + 6;
		const char *close = strchr(v, '}');
		if (close == NULL)
			break;
		p = close + 1;
		if (!hosts_var_name(v, (size_t)(close - v)))
			continue;
		json_t *name = json_stringn(v, (size_t)(close - v));
		bool seen = false;
		size_t i;
		json_t *x;
		json_array_foreach(names, i, x)
		{
			seen = seen || json_equal(x, name);
		}
		if (seen)
			json_decref(name);
		else
			json_array_append_new(names, name);
	}
	return 0;
}

/* The names of the editor's ${env:NAME} in entry's values, in order; NULL
 * when there are none. New reference. */
static json_t *hosts_env_refs(const struct host_info *h, const json_t *entry)
{
	if (!h->editor_vars)
		return NULL;
	json_t *copy = json_deep_copy(entry);
	json_t *names = json_array();
	hosts_each_value(copy, hosts_env_ref_cb, names);
	json_decref(copy);
	if (json_array_size(names) == 0) {
		json_decref(names);
		return NULL;
	}
	return names;
}

/* For validation only: each ${NAME} and ${NAME:-d} becomes "x" (a url's
 * base when it starts the value), so a
 * variable that is unset here (it may be set where the runtime runs) is
 * not taken for an error, while every other rule still applies. */
static int hosts_placeholder_cb(json_t *str, void *arg)
{
	(void)arg;
	const char *s = json_string_value(str);
	struct buf b;
	buf_init(&b);
	for (const char *p = s;;) {
		const char *open = strstr(p, "${");
		const char *close = open ? strchr(open + 2, '}') : NULL;
		if (open == NULL || close == NULL) {
			buf_append(&b, p, strlen(p));
			break;
		}
		const char *v = open + 2;
		const char *end = memchr(v, ':', (size_t)(close - v));
		if (end == NULL)
			end = close;
		bool ok = hosts_var_name(v, (size_t)(end - v)) &&
			  (end == close || end[1] == '-');
		buf_append(&b, p, (size_t)(open - p));
		/* At the start a variable may be a whole url's base. */
		if (ok && open == s)
			buf_puts(&b, "http://127.0.0.1");
		else if (ok)
			buf_append(&b, "x", 1);
		else
			buf_append(&b, open, (size_t)(close + 1 - open));
		p = close + 1;
	}
	char *t = buf_steal(&b);
	json_string_set(str, t);
	free(t);
	return 0;
}

/* A relative path with a '/' means the host's working folder to the host
 * and the config's folder to mcpvisor: not the same file. */
static const char *hosts_relative_path(const json_t *entry)
{
	const char *cmd = json_string_value(json_object_get(entry, "command"));
	const char *cwd = json_string_value(json_object_get(entry, "cwd"));
	if (cmd && strchr(cmd, '/') && cmd[0] != '/' && cmd[0] != '$')
		return "command";
	if (cmd && cmd[0] == '~')
		return "command";
	if (cwd && cwd[0] != '/' && cwd[0] != '$')
		return "cwd";
	return NULL;
}

json_t *hosts_convert(const struct host_info *h, const char *name,
		      const json_t *entry, const char *mcpv_path, char **why)
{
	*why = NULL;
	if (!json_is_object(entry)) {
		*why = xstrdup("the entry is not an object");
		return NULL;
	}
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)entry, key, v)
	{
		bool known = false;
		for (size_t i = 0; hosts_fields[i] && !known; i++)
			known = strcmp(hosts_fields[i], key) == 0;
		if (known)
			continue;
		if (strcmp(key, "envFile") == 0)
			*why = xstrdup("mcpvisor does not read \"envFile\"; "
				       "put its variables in \"env\"");
		else
			*why = xasprintf("its field \"%.64s\" has no "
					 "equivalent in mcpvisor's config",
					 key);
		return NULL;
	}
	const char *rel = hosts_relative_path(entry);
	if (rel) {
		*why = xasprintf("its %s is a relative path, which mcpvisor "
				 "would resolve against its config's folder; "
				 "write it absolute",
				 rel);
		return NULL;
	}
	json_t *out = json_deep_copy(entry);
	struct hosts_rw rw = {h, NULL};
	if (hosts_each_value(out, hosts_rewrite_cb, &rw) < 0) {
		*why = rw.why;
		json_decref(out);
		return NULL;
	}
	/* The rest of the rules are the config's own: parse it as mcpvisor
	 * would, alone, from where mcpvisor's config lives. */
	json_t *probe = json_deep_copy(out);
	hosts_each_value(probe, hosts_placeholder_cb, NULL);
	json_t *doc = json_pack("{s:{s:o}}", "mcpServers", name, probe);
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	struct config *cfg = config_parse(text, strlen(text), mcpv_path);
	free(text);
	const char *err = cfg->fatal;
	if (err == NULL && cfg->nservers == 1)
		err = cfg->servers[0].error;
	if (err) {
		/* "FILE: server "x": ..." names mcpvisor's file, which does
		 * not hold the entry yet: keep what is wrong. */
		const char *p = strstr(err, "\": ");
		*why = xstrdup(p ? p + 3 : err);
		json_decref(out);
		out = NULL;
	}
	config_free(cfg);
	return out;
}

/* ---- the plan ---- */

/* A url server with no headers: one the host had signed in to itself
 * (OAuth), whose tokens stay with the host; in mcpvisor it needs
 * `mcpvisor login`. */
static bool hosts_signs_in(const json_t *conv)
{
	json_t *h = json_object_get(conv, "headers");
	return json_is_string(json_object_get(conv, "url")) &&
	       (h == NULL || json_object_size(h) == 0);
}

/* The item of one host entry, added to items. Borrowed. */
static json_t *hosts_item(json_t *items, const char *name, enum hosts_action a,
			  const char *why, const json_t *entry)
{
	json_t *it = json_pack("{s:s,s:s}", "name", name, "action",
			       hosts_action_name(a));
	if (why)
		json_object_set_new(it, "why", json_string(why));
	if (json_is_true(json_object_get(entry, "disabled")))
		json_object_set_new(it, "disabled", json_true());
	json_array_append_new(items, it);
	return it;
}

/* entry without what means the same as its absence to mcpvisor's config:
 * "type": "stdio" beside a command (VS Code and Claude Code write it, the
 * others leave it out), empty "args", "env" and "headers", "disabled":
 * false. New reference. */
static json_t *hosts_plain(const json_t *entry)
{
	static const char *const maybe_empty[] = {"args", "env", "headers",
						  NULL};
	json_t *c = json_deep_copy(entry);
	if (!json_is_object(c))
		return c;
	const char *type = json_string_value(json_object_get(c, "type"));
	if (type && strcmp(type, "stdio") == 0 && !json_object_get(c, "url"))
		json_object_del(c, "type");
	for (size_t i = 0; maybe_empty[i]; i++) {
		json_t *v = json_object_get(c, maybe_empty[i]);
		if ((json_is_array(v) && json_array_size(v) == 0) ||
		    (json_is_object(v) && json_object_size(v) == 0))
			json_object_del(c, maybe_empty[i]);
	}
	if (json_is_false(json_object_get(c, "disabled")))
		json_object_del(c, "disabled");
	return c;
}

/* Whether two entries start the same server. */
static bool hosts_same(const json_t *a, const json_t *b)
{
	json_t *pa = hosts_plain(a), *pb = hosts_plain(b);
	bool same = json_equal(pa, pb);
	json_decref(pa);
	json_decref(pb);
	return same;
}

/* Claude Code's per-project servers ("projects": {PATH: {"mcpServers"}})
 * belong to one folder each; mcpvisor's global config would give them to
 * every folder, so they are listed and left. */
static void hosts_projects(const json_t *doc, json_t *items)
{
	const char *dir;
	json_t *proj;
	json_object_foreach(json_object_get(doc, "projects"), dir, proj)
	{
		const char *name;
		json_t *e;
		json_object_foreach(json_object_get(proj, "mcpServers"), name,
				    e)
		{
			char *n = xasprintf("%s: %s", dir, name);
			hosts_item(items, n, HOSTS_PROJECT,
				   "a project's own server (it applies to "
				   "that folder only)",
				   e);
			free(n);
		}
	}
}

/* What becomes of one host entry (name, e); *conv: the entry as mcpvisor
 * holds it, when it can. */
static enum hosts_action hosts_verdict(const struct host_info *h,
				       const char *name, const json_t *e,
				       const json_t *to, const json_t *relay,
				       const char *mcpv_path, json_t **conv,
				       char **why)
{
	*conv = NULL;
	*why = NULL;
	if (hosts_is_relay(e)) {
		/* A relay of another home would serve none of what moves
		 * now: it becomes this home's. */
		const char *a = hosts_relay_home(e);
		const char *b = hosts_relay_home(relay);
		if (a == b || (a && b && strcmp(a, b) == 0))
			return HOSTS_RELAY;
		*why = xasprintf("it ran the relay of %s",
				 a ? a : "the default home");
		return HOSTS_REPOINT;
	}
	if ((*conv = hosts_convert(h, name, e, mcpv_path, why)) == NULL)
		return HOSTS_CANNOT;
	json_t *have = json_object_get(to, name);
	if (have == NULL)
		return HOSTS_MOVED;
	if (hosts_same(have, *conv))
		return HOSTS_SAME;
	*why = xstrdup("mcpvisor's config already has another server of "
		       "that name; rename one");
	return HOSTS_CLASH;
}

int hosts_plan(const struct host_info *h, const json_t *host_doc,
	       const json_t *mcpv_doc, const json_t *relay,
	       const char *mcpv_path, struct hosts_plan *p, char **err)
{
	memset(p, 0, sizeof *p);
	*err = NULL;
	json_t *servers = json_object_get(host_doc, h->servers_key);
	if (servers && !json_is_object(servers)) {
		*err = xasprintf("\"%s\" is not an object", h->servers_key);
		return -EINVAL;
	}
	json_t *mine = json_object_get(mcpv_doc, "mcpServers");
	if (mine && !json_is_object(mine)) {
		*err = xstrdup("mcpvisor's config: \"mcpServers\" is not an "
			       "object");
		return -EINVAL;
	}
	p->host = json_deep_copy(host_doc);
	p->mcpv = json_deep_copy(mcpv_doc);
	p->items = json_array();
	p->moved = json_object();
	p->relay = json_deep_copy(relay);
	json_t *to = json_object_get(p->mcpv, "mcpServers");
	if (to == NULL) {
		to = json_object();
		json_object_set_new(p->mcpv, "mcpServers", to);
	}
	/* First the verdicts, so the relay's name is known before the
	 * entries are laid out again. */
	size_t n = json_object_size(servers), i = 0;
	enum hosts_action *act = xcalloc(n ? n : 1, sizeof *act);
	json_t **conv = xcalloc(n ? n : 1, sizeof *conv);
	bool has_relay = false, keeps_name = false;
	const char *name;
	json_t *e;
	json_object_foreach(servers, name, e)
	{
		char *why = NULL;
		act[i] = hosts_verdict(h, name, e, to, relay, mcpv_path,
				       &conv[i], &why);
		has_relay = has_relay || act[i] == HOSTS_RELAY ||
			    act[i] == HOSTS_REPOINT;
		if ((act[i] == HOSTS_CANNOT || act[i] == HOSTS_CLASH ||
		     act[i] == HOSTS_RELAY || act[i] == HOSTS_REPOINT) &&
		    strcmp(name, HOSTS_RELAY_NAME) == 0)
			keeps_name = true;
		json_t *it = hosts_item(p->items, name, act[i], why, e);
		json_t *vars =
			act[i] == HOSTS_MOVED ? hosts_env_refs(h, e) : NULL;
		if (vars)
			json_object_set_new(it, "vars", vars);
		if (act[i] == HOSTS_MOVED && hosts_signs_in(conv[i]))
			json_object_set_new(it, "signIn", json_true());
		free(why);
		i++;
	}
	p->relay_name = xstrdup(keeps_name ? HOSTS_RELAY_NAME "-relay"
					   : HOSTS_RELAY_NAME);
	/* The host's entries again, in order, the relay where the first
	 * moved one was (or last). */
	json_t *left = json_object();
	bool placed = has_relay;
	i = 0;
	json_object_foreach(servers, name, e)
	{
		if (act[i] == HOSTS_REPOINT) {
			json_object_set_new(left, name, json_deep_copy(relay));
			p->changed = true;
		} else if (act[i] == HOSTS_MOVED || act[i] == HOSTS_SAME) {
			if (act[i] == HOSTS_MOVED) {
				json_object_set(to, name, conv[i]);
				json_object_set(p->moved, name, conv[i]);
			}
			if (!placed) {
				json_object_set_new(left, p->relay_name,
						    json_deep_copy(relay));
				p->relay_at = xstrdup(name);
			}
			placed = true;
			p->changed = true;
		} else {
			json_object_set_new(left, name, json_deep_copy(e));
		}
		json_decref(conv[i]);
		i++;
	}
	if (!placed) {
		json_object_set_new(left, p->relay_name, json_deep_copy(relay));
		p->changed = true;
	}
	p->relay_added = !has_relay;
	json_object_set_new(p->host, h->servers_key, left);
	if (strcmp(h->name, "claude-code") == 0)
		hosts_projects(host_doc, p->items);
	free(act);
	free(conv);
	return 0;
}

void hosts_plan_free(struct hosts_plan *p)
{
	json_decref(p->host);
	json_decref(p->mcpv);
	json_decref(p->items);
	json_decref(p->moved);
	json_decref(p->relay);
	free(p->relay_name);
	free(p->relay_at);
	memset(p, 0, sizeof *p);
}
