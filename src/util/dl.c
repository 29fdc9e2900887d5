/* dl.h: a symbol of a loaded library into a function pointer. */
#include "util/dl.h"

#include <dlfcn.h>

bool dl_sym(void *h, const char *name, void *slot, size_t size)
{
	/* dlsym gives a void *; POSIX lets it hold a function's address, and
	 * it is stored through the slot's bytes since C does not convert
	 * the two. */
	void *p = dlsym(h, name);
	if (p == NULL || size != sizeof p)
		return false;
	*(void **)slot = p;
	return true;
}
