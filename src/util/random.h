/*
 * Random identifiers from the kernel (getrandom): session ids, owner
 * tokens, salts.
 */
#ifndef MCPV_RANDOM_H
#define MCPV_RANDOM_H

#include <stddef.h>

/* nbytes random bytes in out. Aborts when the kernel has none to give. */
void random_bytes(void *out, size_t nbytes);

/* nbytes random bytes as 2*nbytes lower-case hex digits and a NUL in out
 * (at least 2*nbytes+1 bytes). */
void random_hex(char *out, size_t nbytes);

#endif
