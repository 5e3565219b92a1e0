/*
 * test_utf8.c - outside text made valid UTF-8: what passes unchanged, what becomes U+FFFD, where
 * a long text is cut.
 */
#include "unit.h"
#include "utf8.h"

#define FFFD "\xef\xbf\xbd"

static const char *
clean(const char *s, size_t len, size_t max)
{
	static char out[256];
	struct Buf b = BUF_INIT;

	CHECK(utf8_clean(&b, s, len, max));
	snprintf(out, sizeof out, "%s", b.data ? b.data : "");
	buf_free(&b);
	return out;
}

static void
test_valid_text_is_unchanged(void)
{
	static const char *const rows[] = {"", "250 OK", "Grüße ✓ 😀", "\xd7\x90\xd7\x91", "a\tb\r\nc"};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CHECK_STR(clean(rows[i], strlen(rows[i]), 100), rows[i]);
}

static void
test_bad_bytes_become_replacement_characters(void)
{
	static const struct {
		const char *in;
		size_t len;
		const char *want;
	} rows[] = {
		{"554 rejected \xff", 14, "554 rejected " FFFD}, /* a byte that starts nothing */
		{"\x80x", 2, FFFD "x"},                          /* a lone continuation byte */
		{"\xc0\xaf", 2, FFFD FFFD},                      /* an overlong slash */
		{"\xed\xa0\x80", 3, FFFD FFFD FFFD},             /* a UTF-16 surrogate */
		{"\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD},    /* above U+10FFFF */
		{"ab\xe2\x82", 4, "ab" FFFD FFFD},               /* cut off by the end */
		{"a\0b", 3, "a" FFFD "b"},                       /* NUL */
		{"\xe2\x82\xac\xe2", 4, "\xe2\x82\xac" FFFD},    /* a euro, then half of another */
	};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CHECK_STR(clean(rows[i].in, rows[i].len, 100), rows[i].want);
}

static void
test_long_text_is_cut_at_a_character(void)
{
	CHECK_STR(clean("abcdef", 6, 4), "abcd...");
	CHECK_STR(clean("ab\xc3\xa9", 4, 3), "ab..."); /* é does not fit whole */
	CHECK_STR(clean("ab\xff", 3, 4), "ab...");     /* nor does its replacement */
	CHECK_STR(clean(NULL, 5, 10), "");
}

/* A copy into a fixed buffer, or a "%.Ns", keeps whole characters only. */
static void
test_cuts_never_split_a_character(void)
{
	char s[16];

	/* "a" U+00E9 U+20AC U+1F600: 1 + 2 + 3 + 4 bytes */
	static const char text[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	static const size_t whole[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10};
	size_t n;

	for (n = 0; n <= 11; n++) {
		CHECK(utf8_prefix(text, n) == whole[n]);
		snprintf(s, n + 1, "%s", text);
		utf8_trim_cut(s);
		CHECK(strlen(s) == whole[n]);
	}
	/* what is not a cut character stays: ASCII, and a bad byte that utf8_clean would replace */
	strcpy(s, "abc");
	utf8_trim_cut(s);
	CHECK_STR(s, "abc");
	strcpy(s, "ab\x80");
	utf8_trim_cut(s);
	CHECK_STR(s, "ab\x80");
}

/* Text for a terminal: no control character reaches it. */
static void
test_controls_become_question_marks(void)
{
	char s[] = "role \x1b[2J\r\bx\x7f \xc3\xa9";

	utf8_no_controls(s);
	CHECK_STR(s, "role ?[2J??x? \xc3\xa9");
	utf8_no_controls(NULL);
}

int
main(void)
{
	RUN(test_controls_become_question_marks);
	RUN(test_cuts_never_split_a_character);
	RUN(test_valid_text_is_unchanged);
	RUN(test_bad_bytes_become_replacement_characters);
	RUN(test_long_text_is_cut_at_a_character);
	return UNIT_DONE();
}
