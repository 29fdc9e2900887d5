/*
 * Where mcpvisor keeps its files: state, cache and runtime directories,
 * from --home / MCPVISOR_HOME or the XDG variables, created private (0700).
 */
#ifndef MCPV_PATHS_H
#define MCPV_PATHS_H

struct paths {
	char *state_dir;   /* journal */
	char *cache_dir;   /* tools/<sha256>.json */
	char *runtime_dir; /* runtime.json, mcpvisor.sock */
	char *config_file; /* default global config */
	char *runtime_file;
	char *socket_path;
};

/* home may be NULL (then MCPVISOR_HOME, then XDG). Does not create. */
void paths_resolve(struct paths *p, const char *home);
/* Creates the directories with mode 0700. Returns 0 or -errno. */
int paths_create(const struct paths *p);
void paths_free(struct paths *p);

#endif
