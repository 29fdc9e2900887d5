/* The one escaping of others' text for a terminal or the log: control
 * bytes shown, never sent; printable text, UTF-8 included, as it is. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

static void expect(const char *in, unsigned flags, const char *want)
{
	char *got = escape_str(in, flags);
	cr_assert_str_eq(got, want, "escape(\"%s\")", in);
	free(got);
}

Test(escape, printable_text_and_utf8_are_untouched)
{
	expect("", 0, "");
	expect("plain text, with \\ and \"quotes\"", 0,
	       "plain text, with \\ and \"quotes\"");
	expect("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", 0,
	       "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");
	char *none = escape_str(NULL, 0);
	cr_assert_str_eq(none, "");
	free(none);
}

Test(escape, terminal_sequences_are_shown_not_sent)
{
	/* Title, clipboard, screen clear, bell. */
	expect("\x1b]0;pwned\x07", 0, "\\x1b]0;pwned\\x07");
	expect("\x1b]52;c;Zm9v\x1b\\", 0, "\\x1b]52;c;Zm9v\\x1b\\");
	expect("\x1b[2J\x1b[H", 0, "\\x1b[2J\\x1b[H");
	expect("del\x7f", 0, "del\\x7f");
	/* C1 controls (CSI as U+009B), as UTF-8 and as a raw byte. */
	expect("\xc2\x9b"
	       "31m",
	       0, "\\u009b31m");
	expect("\x9b"
	       "31m",
	       0, "\\x9b31m");
	/* A line that would read backwards. */
	expect("a\xe2\x80\xae"
	       "b",
	       0, "a\\u202eb");
}

Test(escape, a_newline_cannot_start_a_line_of_its_own)
{
	expect("ok\n12:00:00.000 mcpvisor info: instance ok", 0,
	       "ok\\n12:00:00.000 mcpvisor info: instance ok");
	expect("a\rb\tc", 0, "a\\rb\\tc");
	/* As lines: newlines and tabs pass, a carriage return does not
	 * (it would write over the line's start). */
	expect("a\nb\tc\rd", ESCAPE_LINES, "a\nb\tc\\rd");
}

Test(escape, bytes_that_are_not_utf8_are_shown_one_by_one)
{
	expect("\xff\xfe", 0, "\\xff\\xfe");
	/* Overlong '/', a surrogate, a sequence cut short. */
	expect("\xc0\xaf", 0, "\\xc0\\xaf");
	expect("\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
	expect("ab\xe2\x9c", 0, "ab\\xe2\\x9c");
}

Test(escape, into_a_buffer_cuts_between_pieces)
{
	char out[8];
	/* "\x1b" takes four bytes: it is left out whole, not cut. */
	size_t n = escape_into(out, sizeof out, "abcd\x1b", 5, 0);
	cr_assert_eq(n, 4);
	cr_assert_str_eq(out, "abcd");
	/* Nor a character: seven bytes would fit, the third one does not. */
	n = escape_into(out, sizeof out, "ab\xc3\xa9\xc3\xa9\xc3\xa9", 8, 0);
	cr_assert_eq(n, 6);
	cr_assert_str_eq(out, "ab\xc3\xa9\xc3\xa9");
	n = escape_into(out, 4, "abcdef", 6, 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(out, "abc");
}

static void check_word(const char *in, const char *want)
{
	char *w = escape_shell_word(in);
	cr_assert_str_eq(w, want, "%s", in);
	free(w);
}

Test(escape, a_shell_word_is_quoted_unless_plainly_safe)
{
	check_word("/home/me/proj-1.2_x", "/home/me/proj-1.2_x");
	check_word("--key=a,b:c@d%e+f", "--key=a,b:c@d%e+f");
	check_word("", "''");
	check_word("my dir", "'my dir'");
	check_word("it's", "'it'\\''s'");
	check_word("$HOME;rm", "'$HOME;rm'");
	check_word("a\rb", "'a\rb'");
}
