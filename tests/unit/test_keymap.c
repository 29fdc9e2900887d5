/*
 * The string map: puts, finds and deletes against a plain array under
 * churn (deletion moves entries back), and the seed: names built to share
 * a slot under one seed spread under another, which is what keeps a
 * remote server from choosing tool names that collide.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/keymap.h"

#define KM_KEYS 500

Test(keymap, agrees_with_an_array_under_churn)
{
	static char keys[KM_KEYS][24];
	static int in[KM_KEYS];
	struct keymap m;
	keymap_init(&m);
	for (int i = 0; i < KM_KEYS; i++)
		snprintf(keys[i], sizeof keys[i], "tool-%d", i);
	/* A fixed walk of puts and deletes, so that runs of the probe
	 * sequence form, break and re-form. */
	uint32_t x = 12345;
	for (int step = 0; step < 20000; step++) {
		x = x * 1103515245u + 12345u;
		int k = (int)((x >> 8) % KM_KEYS);
		if ((x >> 4) & 1) {
			keymap_put(&m, keys[k], &in[k]);
			in[k] = 1;
		} else {
			void *was = keymap_del(&m, keys[k]);
			cr_assert_eq(was, in[k] ? &in[k] : NULL, "del %s",
				     keys[k]);
			in[k] = 0;
		}
		if (step % 997 == 0) {
			size_t n = 0;
			for (int i = 0; i < KM_KEYS; i++) {
				cr_assert_eq(keymap_find(&m, keys[i]),
					     in[i] ? &in[i] : NULL,
					     "find %s at step %d", keys[i],
					     step);
				cr_assert_eq(keymap_get(&m, keys[i]),
					     in[i] ? &in[i] : NULL);
				n += (size_t)in[i];
			}
			cr_assert_eq(keymap_count(&m), n);
		}
	}
	keymap_free(&m);
}

/* How many of keys share the fullest of 1024 home slots. */
static int km_fullest(char (*keys)[24], int n)
{
	static int count[1024];
	int most = 0;
	memset(count, 0, sizeof count);
	for (int i = 0; i < n; i++) {
		int c = ++count[keymap_hash(keys[i]) & 1023];
		if (c > most)
			most = c;
	}
	return most;
}

Test(keymap, names_that_collide_under_one_seed_spread_under_another)
{
	/* What an attacker who knew the seed would list: 100 names with one
	 * home slot in a table of 1024. */
	static char keys[100][24];
	int n = 0;
	keymap_seed_set(0x0123456789abcdefULL);
	uint64_t want = keymap_hash("tool-0") & 1023;
	for (int i = 0; n < 100 && i < 10000000; i++) {
		char k[24];
		snprintf(k, sizeof k, "tool-%d", i);
		if ((keymap_hash(k) & 1023) == want)
			memcpy(keys[n++], k, sizeof k);
	}
	cr_assert_eq(n, 100, "found only %d colliding names", n);
	cr_assert_eq(km_fullest(keys, n), 100);
	/* Another process draws another seed: the same names spread. */
	keymap_seed_set(0xfedcba9876543210ULL);
	int most = km_fullest(keys, n);
	cr_assert_leq(most, 6, "%d of 100 names still share a slot", most);
	/* And a map under the new seed finds them all. */
	struct keymap m;
	keymap_init(&m);
	for (int i = 0; i < n; i++)
		keymap_put(&m, keys[i], keys[i]);
	for (int i = 0; i < n; i++)
		cr_assert_eq(keymap_find(&m, keys[i]), keys[i]);
	keymap_free(&m);
}

Test(keymap, a_process_draws_its_own_seed)
{
	/* Two fresh processes hash the same name differently (a seed of
	 * all zeros or a fixed one would not): each child sends its hash.
	 * This process has hashed nothing, so each child draws its own. */
	uint64_t h[2];
	for (int i = 0; i < 2; i++) {
		FILE *f;
		pid_t pid;
		int pfd[2];
		cr_assert_eq(pipe(pfd), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			close(pfd[0]);
			uint64_t v = keymap_hash("echo");
			/* The child's first hash draws its seed. */
			(void)!write(pfd[1], &v, sizeof v);
			_exit(0);
		}
		close(pfd[1]);
		f = fdopen(pfd[0], "r");
		cr_assert_eq(fread(&h[i], sizeof h[i], 1, f), 1);
		fclose(f);
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
	}
	cr_assert_neq(h[0], h[1]);
}
