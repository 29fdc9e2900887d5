/*
 * mcpvisor: one small daemon that owns an agent host's MCP servers. This
 * file only picks the subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "proc/supervisor.h"

static void main_usage(FILE *f)
{
	fprintf(f,
		"usage: mcpvisor COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  serve     run the runtime in the foreground\n"
		"  status    show every server and instance\n"
		"  tools     list the tools clients see\n"
		"  call      call a tool: mcpvisor call demo__echo "
		"'{\"text\":\"hi\"}'\n"
		"  check     validate a config and show how it resolves\n"
		"  stop      drain and stop the runtime, or stop one server\n"
		"  restart   restart the runtime, or one server\n"
		"  reload    re-read the config (as SIGHUP)\n"
		"  allow     trust a space's .mcp.json (--revoke: no longer)\n"
		"  relay     MCP on stdin/stdout for hosts that launch a "
		"command\n"
		"  logs      print (-f: follow) the runtime's log, or one "
		"server's lines\n"
		"  setup     move a host's servers to mcpvisor: mcpvisor setup "
		"claude-desktop\n"
		"  top       a live view of servers, calls, latency and "
		"memory\n"
		"  login     sign in to a server that asks for OAuth: "
		"mcpvisor login NAME\n"
		"  logout    forget a server's OAuth tokens\n"
		"\n"
		"Every command takes --home DIR (or MCPVISOR_HOME) and "
		"--help. The terminal\n"
		"commands give up on a runtime that says nothing for "
		"MCPVISOR_TIMEOUT (10s).\n"
		"Exit codes: 0 done, 1 failed, 2 bad arguments or config, 3 "
		"no runtime is running.\n");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "__exec") == 0)
		return sup_exec_main(argc, argv);
	if (argc < 2) {
		main_usage(stderr);
		return CLI_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
	    strcmp(cmd, "help") == 0) {
		main_usage(stdout);
		return CLI_OK;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("mcpvisor 0.1.0\n");
		return CLI_OK;
	}
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{"serve", cmd_serve},	  {"status", cmd_status},
		{"tools", cmd_tools},	  {"call", cmd_call},
		{"check", cmd_check},	  {"stop", cmd_stop},
		{"restart", cmd_restart}, {"reload", cmd_reload},
		{"allow", cmd_allow},	  {"relay", cmd_relay},
		{"logs", cmd_logs},	  {"setup", cmd_setup},
		{"top", cmd_top},	  {"login", cmd_login},
		{"logout", cmd_logout},
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (strcmp(cmd, cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "mcpvisor: unknown command \"%s\"\n\n", cmd);
	main_usage(stderr);
	return CLI_USAGE;
}
