/*
 * The owner token's name: every program the runtime starts gets a random
 * token per spawn in its environment under this name, inherited by its
 * children, so that a process that left its group, or outlived the runtime
 * that started it, can be proved ours (proc/strays.c, the journal's
 * reconcile, the proof that a listener is ours).
 */
#ifndef MCPV_PROC_OWNER_H
#define MCPV_PROC_OWNER_H

#define PROC_OWNER_ENV "MCPVISOR_OWNER"
/* The longest token (no '=' or newline in it). */
#define PROC_OWNER_TOKEN_MAX 64

#endif
