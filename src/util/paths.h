/*
 * Where mcpvisor keeps its files: state, cache and runtime directories,
 * from --home / MCPVISOR_HOME or the XDG variables. Each must be private:
 * ours and 0700 (see fsutil_private_dir).
 */
#ifndef MCPV_PATHS_H
#define MCPV_PATHS_H

struct paths {
	char *state_dir;   /* journal, the home's lock */
	char *cache_dir;   /* tools/<sha256>.json */
	char *runtime_dir; /* runtime.json, mcpvisor.sock */
	char *config_file; /* default global config */
	char *runtime_file;
	char *socket_path;
	char *lock_file; /* held by the home's one runtime for its life */
};

/* home may be NULL (then MCPVISOR_HOME, then XDG); a relative home is
 * taken from the working folder and made absolute. Does not create. */
void paths_resolve(struct paths *p, const char *home);
/* Creates the directories 0700 and proves each private (a directory of
 * ours; a mode open to others is narrowed). Returns 0, or -errno with *err
 * naming the directory, its owner and mode (to free). */
int paths_create(const struct paths *p, char **err);
/* For clients: proves the runtime and state directories private without
 * creating them. -ENOENT when one is not there (no runtime ever ran). */
int paths_check(const struct paths *p, char **err);
void paths_free(struct paths *p);

#endif
