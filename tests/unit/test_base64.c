/*
 * util/base64: RFC 4648's vectors both ways, both alphabets, padded and
 * not; decoding is canonical (one encoding per byte string) and refuses
 * what is not base64 of the asked form.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "util/base64.h"
#include "util/buf.h"

static const char *const plain[] = {"",	    "f",     "fo",    "foo",
				    "foob", "fooba", "foobar"};
static const char *const std_padded[] = {
	"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
static const char *const bare[] = {"",	     "Zg",	"Zm8",	   "Zm9v",
				   "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};

Test(base64, rfc4648_vectors_both_ways)
{
	char out[32];
	unsigned char back[32];
	for (size_t i = 0; i < 7; i++) {
		size_t n = strlen(plain[i]);
		cr_assert_eq(base64_encode(out, plain[i], n, BASE64_STD, true),
			     strlen(std_padded[i]));
		cr_assert_str_eq(out, std_padded[i]);
		cr_assert_eq(base64_encoded_len(n, true),
			     strlen(std_padded[i]));
		base64_encode(out, plain[i], n, BASE64_URL, false);
		cr_assert_str_eq(out, bare[i]);
		cr_assert_eq(base64_encoded_len(n, false), strlen(bare[i]));
		cr_assert_eq(base64_decode(std_padded[i], strlen(std_padded[i]),
					   back, BASE64_STD, true),
			     (long)n, "%s", std_padded[i]);
		cr_assert_eq(memcmp(back, plain[i], n), 0);
		cr_assert_eq(base64_decode(bare[i], strlen(bare[i]), back,
					   BASE64_URL, false),
			     (long)n, "%s", bare[i]);
		cr_assert_eq(memcmp(back, plain[i], n), 0);
	}
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "x:");
	base64_append(&b, "foob", 4, BASE64_STD, true);
	cr_assert_str_eq(b.data, "x:Zm9vYg==");
	buf_free(&b);
}

Test(base64, the_two_alphabets)
{
	const unsigned char v[] = {0xfb, 0xff, 0xbf};
	char out[8];
	base64_encode(out, v, 3, BASE64_URL, false);
	cr_assert_str_eq(out, "-_-_");
	base64_encode(out, v, 3, BASE64_STD, true);
	cr_assert_str_eq(out, "+/+/");
	base64_encode(out, v, 2, BASE64_URL, false);
	cr_assert_str_eq(out, "-_8");
	unsigned char back[8];
	cr_assert_eq(base64_decode("+/+/", 4, back, BASE64_URL, false), -1);
	cr_assert_eq(base64_decode("-_-_", 4, back, BASE64_STD, true), -1);
	cr_assert_eq(base64_decode("-_-_", 4, back, BASE64_URL, false), 3);
	cr_assert_eq(memcmp(back, v, 3), 0);
}

/* What is not base64 of the asked form is refused: a wrong length, '='
 * where none may be or in the middle, other characters, and bits set past
 * the last byte (so "Zh==" is not a second spelling of "f"). */
Test(base64, decoding_is_canonical_and_strict)
{
	unsigned char out[16];
	const char *bad_padded[] = {"Zg=",  "Zg",	"Zh==",	 "Zm9=",
				    "Z===", "Zg==Zg==", "Zm 9v", "Zm9v\n",
				    "=Zm9", "Zg=a"};
	for (size_t i = 0; i < sizeof bad_padded / sizeof *bad_padded; i++)
		cr_assert_eq(base64_decode(bad_padded[i], strlen(bad_padded[i]),
					   out, BASE64_STD, true),
			     -1, "%s", bad_padded[i]);
	const char *bad_bare[] = {"Zg==", "Z", "Zh", "Zm9", "Zm9vY", "Zm+v"};
	for (size_t i = 0; i < sizeof bad_bare / sizeof *bad_bare; i++)
		cr_assert_eq(base64_decode(bad_bare[i], strlen(bad_bare[i]),
					   out, BASE64_URL, false),
			     -1, "%s", bad_bare[i]);
	/* Every byte value survives a round trip. */
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	char enc[400];
	unsigned char back[260];
	size_t n = base64_encode(enc, all, 256, BASE64_STD, true);
	cr_assert_eq(base64_decode(enc, n, back, BASE64_STD, true), 256);
	cr_assert_eq(memcmp(back, all, 256), 0);
}
