/*
 * Internal to the engine runner (engine.c) and its list of owned
 * containers (engine_list.c).
 */
#ifndef MCPV_CONTAINER_ENGINE_INT_H
#define MCPV_CONTAINER_ENGINE_INT_H

#include "container/engine.h"

/* Arguments after the engine's name, at most. */
#define ENGINE_ARGS_MAX 128

/* Why a command did not do what was asked (what: "ps", "rm"...), as one
 * line: the engine's own error line when it gave one (caller frees). */
char *engine_why(const char *engine, const char *what,
		 const struct engine_result *r);

#endif
