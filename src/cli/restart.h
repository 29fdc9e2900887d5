/*
 * `mcpvisor restart` without a server: the runtime itself is drained,
 * stopped and started again, under a restart mark (home/mark.h).
 */
#ifndef MCPV_CLI_RESTART_H
#define MCPV_CLI_RESTART_H

/* How long `stop` and `restart` wait for a draining runtime to be gone. */
#define STOP_WAIT_MS 60000
/* How long `restart` waits for the new runtime to answer. */
#define START_WAIT_MS 15000

/* Restarts the runtime of home (NULL: MCPVISOR_HOME or XDG). A CLI_*
 * code, with what happened printed. */
int restart_runtime(const char *home);

/* cli/cmd_stop.c, shared with restart: sends one control request and
 * prints the runtime's answer; waits until no runtime holds the home (the
 * runtime is not our child and its pid could be reused, but its lock is
 * released only at its end). CLI_* codes. */
int stop_control_send(const char *home, const char *path);
int stop_wait(const char *home, long pid);

#endif
