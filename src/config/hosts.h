/*
 * Agent hosts' config files (Claude Desktop, Claude Code, Cursor, VS Code):
 * where each keeps its MCP servers and in what shape, which of its entries
 * mcpvisor's config can hold, the plan that moves them over and puts one
 * relay entry in their place, and that plan made on the files' text (JSONC:
 * every byte it does not change kept). The files are read and written by
 * `mcpvisor setup` (cli/cmd_setup.c).
 */
#ifndef MCPV_HOSTS_H
#define MCPV_HOSTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/jsonc.h"
#include "config/secrets.h"

/* ~/.claude.json holds Claude Code's whole state, so a few MB is normal. */
#define HOSTS_MAX_FILE_BYTES (64 * 1024 * 1024)
/* The relay entry's name in the host's file (another when taken). */
#define HOSTS_RELAY_NAME "mcpvisor"

struct host_info {
	const char *name;	 /* "claude-desktop" */
	const char *title;	 /* "Claude Desktop" */
	const char *servers_key; /* "mcpServers", or VS Code's "servers" */
	/* Entries say "type": "stdio" (Claude Code, VS Code): the relay
	 * entry does too. */
	bool typed;
	/* The editor's own variables (${env:X}, ${userHome},
	 * ${workspaceFolder}, ${input:id}) may appear in values. */
	bool editor_vars;
};

/* NULL when name is no host mcpvisor knows. */
const struct host_info *hosts_find(const char *name);
/* "claude-desktop, claude-code, cursor, vscode" */
const char *hosts_names(void);
/* The host's file under $HOME (and $XDG_CONFIG_HOME on Linux): the first
 * of its documented locations that exists, this platform's first; else
 * this platform's. NULL when HOME is not set. Caller frees. */
char *hosts_default_path(const struct host_info *h);

/* Whether entry launches `mcpvisor relay` (any path to a binary named
 * mcpvisor, "relay" its first argument). */
bool hosts_is_relay(const json_t *entry);
/* The home a relay entry names (--home DIR, --home=DIR, or MCPVISOR_HOME
 * in its env), NULL for the default home. */
const char *hosts_relay_home(const json_t *entry);
/* The relay entry for h: command (a name in PATH or an absolute path),
 * args ["relay"], then "--home" home when home is not NULL. New
 * reference. */
json_t *hosts_relay_entry(const struct host_info *h, const char *command,
			  const char *home);

/* What becomes of one host entry. */
enum hosts_action {
	HOSTS_MOVED,   /* into mcpvisor's config, out of the host's */
	HOSTS_SAME,    /* mcpvisor already has it, identical: out of host */
	HOSTS_CLASH,   /* mcpvisor has another server of that name: kept */
	HOSTS_CANNOT,  /* mcpvisor cannot represent it: kept */
	HOSTS_RELAY,   /* already the relay: kept */
	HOSTS_REPOINT, /* the relay of another home: now this one's */
	HOSTS_PROJECT, /* Claude Code's per-project entries: kept */
};

/* The host's entry as mcpvisor's config would hold it (the editor's
 * ${env:X} rewritten as ${X:-}, empty when not set as in the editor, and
 * ${userHome} as ${HOME}), or NULL with
 * *why (caller frees) saying what mcpvisor cannot represent. mcpv_path
 * anchors the validation (config_parse) as the real file would. */
json_t *hosts_convert(const struct host_info *h, const char *name,
		      const json_t *entry, const char *mcpv_path, char **why);

struct hosts_plan {
	json_t *host; /* the host's file as it will be */
	json_t *mcpv; /* mcpvisor's config as it will be */
	/* One {"name", "action" (hosts_action_name), "why"?, "disabled"?,
	 * "vars"?, "signIn"?} per host entry, in the file's order; "vars"
	 * names the ${env:NAME} a moved entry has, written ${NAME:-};
	 * "signIn": a moved url server without headers (the host had
	 * signed in to it with OAuth): it needs `mcpvisor login NAME`. */
	json_t *items;
	json_t *moved;	  /* the servers added to mcpvisor's, in order */
	json_t *relay;	  /* the relay entry */
	char *relay_name; /* the relay entry's name in host */
	/* The moved entry whose place the relay takes; NULL: it goes last
	 * (when added). */
	char *relay_at;
	bool relay_added; /* host had no relay entry */
	bool changed;	  /* anything to write */
};

/* Plans moving host_doc's servers (h's shape) into mcpv_doc (mcpvisor's
 * config, {} when it has none), keeping every other key and the order of
 * both. An entry mcpvisor's config has under its name is the same server
 * when the two differ only in what means the same to mcpvisor ("type":
 * "stdio" beside a command, empty "args", "env" or "headers"). The docs
 * are not changed. 0, or -EINVAL with *err (to free) when a file's
 * servers are not an object. */
int hosts_plan(const struct host_info *h, const json_t *host_doc,
	       const json_t *mcpv_doc, const json_t *relay,
	       const char *mcpv_path, struct hosts_plan *p, char **err);
void hosts_plan_free(struct hosts_plan *p);
const char *hosts_action_name(enum hosts_action a);

/* A copy of doc for showing, its secrets as "***" (secrets_mask_json:
 * what is secret is decided there); each value replaced also goes to sec
 * (may be NULL) so text built from it can be masked again. New
 * reference. */
json_t *hosts_mask(const json_t *doc, struct secrets *sec);
/* text (JSONC, as in a file) with what hosts_mask hides in its values
 * replaced there, the quoted values of what is commented out ("// \"K\":
 * \"v\"") as "***", and every value hosts_mask gathered into sec masked
 * wherever else it appears. Other bytes as they are. Caller frees. */
char *hosts_mask_text(const char *text, size_t len, struct secrets *sec);
/* doc as text laid out like like (its indent unit, tab or spaces, and its
 * final newline; NULL: two spaces and a newline). Caller frees. */
char *hosts_dump(const json_t *doc, const char *like);

/* The plan p made on the text of a file (before, as read; NULL: there is
 * no file yet): in the host's file the entries that move go, the relay
 * takes the first one's place (or comes last) and a relay of another home
 * is repointed; to mcpvisor's config (plain JSON) the moved servers are
 * added last. Every other byte stays as it was (comments, trailing
 * commas, blanks, line breaks, escapes); what is new is laid out as the
 * file is (a new file like like). The text is read back and must be
 * p->host or p->mcpv (plain JSON when the file was), or this fails. 0
 * with *out (to free), or -EINVAL with *err (to free): before is not the
 * file p was made from. */
int hosts_edit_host(const struct host_info *h, const struct hosts_plan *p,
		    const struct jsonc *before, char **out, char **err);
int hosts_edit_mcpv(const struct hosts_plan *p, const struct jsonc *before,
		    const char *like, char **out, char **err);

#endif
