/*
 * Libraries loaded on first use (dlopen): libcurl on the first outbound
 * HTTP, libcrypto on the first digest, so an idle runtime maps neither.
 */
#ifndef MCPV_DL_H
#define MCPV_DL_H

#include <stdbool.h>
#include <stddef.h>

/* Looks name up in the library h and stores it in the function pointer at
 * slot (size: sizeof the pointer). false when it is missing. */
bool dl_sym(void *h, const char *name, void *slot, size_t size);

#endif
