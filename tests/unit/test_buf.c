/*
 * The growable buffer: what it appends and that it stays NUL-terminated,
 * the decimal and hex numbers of the hot path (checked against printf),
 * consume and steal.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

Test(buf, appends_and_stays_terminated)
{
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "id:");
	buf_append(&b, "12345", 2);
	cr_assert_str_eq(b.data, "id:12");
	cr_assert_eq(b.len, 5);
	for (int i = 0; i < 1000; i++)
		buf_puts(&b, "x");
	cr_assert_eq(b.len, 1005);
	cr_assert_eq(strlen(b.data), 1005, "terminated after growing");
	buf_consume(&b, 1000);
	cr_assert_str_eq(b.data, "xxxxx");
	char *s = buf_steal(&b);
	cr_assert_str_eq(s, "xxxxx");
	cr_assert_null(b.data);
	free(s);
}

Test(buf, numbers_as_printf_writes_them)
{
	const unsigned long long vs[] = {0,
					 1,
					 9,
					 10,
					 99,
					 100,
					 123456,
					 4294967295ULL,
					 4294967296ULL,
					 9999999999999999999ULL,
					 (unsigned long long)LLONG_MAX,
					 ULLONG_MAX};
	for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
		char want[32], got[32];
		snprintf(want, sizeof want, "%llu", vs[i]);
		memset(got, 'z', sizeof got);
		size_t n = buf_fmt_u64(got, vs[i]);
		cr_assert_eq(n, strlen(want));
		cr_assert_str_eq(got, want);

		/* Appended, after text and at the edge of the first
		 * allocation, the buffer stays terminated. */
		struct buf b;
		buf_init(&b);
		buf_append(&b, "................................", 32);
		for (size_t k = 0; k < 222; k++)
			buf_append(&b, "-", 1);
		buf_put_u64(&b, vs[i]);
		cr_assert_eq(b.len, 254 + strlen(want));
		cr_assert_str_eq(b.data + 254, want);
		buf_put_hex(&b, vs[i]);
		snprintf(want, sizeof want, "%llx", vs[i]);
		cr_assert_str_eq(b.data + b.len - strlen(want), want);
		buf_free(&b);
	}
}
