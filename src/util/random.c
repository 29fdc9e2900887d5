/* Random bytes and hex identifiers from getrandom. */
#include "util/random.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

void random_bytes(void *out, size_t nbytes)
{
	unsigned char *p = out;
	size_t got = 0;
	while (got < nbytes) {
		ssize_t n = getrandom(p + got, nbytes - got, 0);
		if (n > 0) {
			got += (size_t)n;
		} else if (errno != EINTR) {
			/* A guessable token or session id is worse than no
			 * runtime. */
			fprintf(stderr, "mcpvisor: getrandom: %s\n",
				strerror(errno));
			abort();
		}
	}
}

void random_hex(char *out, size_t nbytes)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[64];
	size_t done = 0;
	while (done < nbytes) {
		size_t want =
			nbytes - done < sizeof raw ? nbytes - done : sizeof raw;
		random_bytes(raw, want);
		for (size_t i = 0; i < want; i++) {
			out[2 * (done + i)] = digits[raw[i] >> 4];
			out[2 * (done + i) + 1] = digits[raw[i] & 15];
		}
		done += want;
	}
	out[2 * nbytes] = '\0';
}
