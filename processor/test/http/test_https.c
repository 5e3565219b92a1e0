/*
 * test_https.c - the pure parts of the HTTPS client: Retry-After, %-encoding, trace lines.
 */
#include <stdlib.h>
#include <string.h>

#include "https.h"
#include "unit.h"

/* Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example date) */
#define EXAMPLE_DATE 784111777L

static void
test_retry_after(void)
{
	static const struct {
		const char *value;
		long now_offset; /* now = EXAMPLE_DATE + this */
		long want;
	} rows[] = {
		{"0", 0, 0},
		{"2", 0, 2},
		{"120", 0, 120},
		{"86400", 0, 86400},
		{"86401", 0, 86400},                   /* capped */
		{"99999999999999999999999", 0, 86400}, /* no overflow */
		{"Sun, 06 Nov 1994 08:49:37 GMT", -10, 10},
		{"Sun, 06 Nov 1994 08:49:37 GMT", 0, 0},
		{"Sun, 06 Nov 1994 08:49:37 GMT", 3600, 0}, /* in the past: now */
		{"Mon, 07 Nov 1994 08:49:37 GMT", 0, 86400},
		{"Tue, 08 Nov 1994 08:49:37 GMT", 0, 86400}, /* capped */
		{"Sun, 06 Nov 1994 08:49:37 UTC", 0, -1},
		{"Sun, 06 Foo 1994 08:49:37 GMT", 0, -1},
		{"Sunday, 06-Nov-94 08:49:37 GMT", 0, -1}, /* obsolete forms are not taken */
		{"Sun, 06 Nov 1994 08:49:37 GMT x", 0, -1},
		{"", 0, -1},
		{"-1", 0, -1},
		{"1.5", 0, -1},
		{"5s", 0, -1},
		{"soon", 0, -1},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		long got = https_retry_after(rows[i].value, (time_t) (EXAMPLE_DATE + rows[i].now_offset));

		if (got != rows[i].want)
			fprintf(stderr, "  \"%s\": got %ld, want %ld\n", rows[i].value, got, rows[i].want);
		CHECK(got == rows[i].want);
	}
	CHECK(https_retry_after(NULL, 0) == -1);
}

static void
test_escape(void)
{
	static const struct {
		const char *in, *want;
	} rows[] = {
		{"relay@contoso.com", "relay%40contoso.com"},
		{"3f2504e0-4f89-11d3-9a0c-0305e82c3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"},
		{"Xy~8Q+b/c=d&e%41f%g h", "Xy~8Q%2Bb%2Fc%3Dd%26e%2541f%25g%20h"},
		{"https://graph.microsoft.com/.default", "https%3A%2F%2Fgraph.microsoft.com%2F.default"},
		{"a-b._~", "a-b._~"},
		{"\xc3\xbc", "%C3%BC"},
		{"", ""},
		{"?#[]", "%3F%23%5B%5D"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct Buf b = BUF_INIT;

		CHECK(https_escape(&b, rows[i].in));
		CHECK_STR(b.data ? b.data : "", rows[i].want);
		buf_free(&b);
	}
}

static void
test_trace_text(void)
{
	struct Buf t = BUF_INIT;

	https_trace_text(&t, "< ", "line 1\r\nline 2\n", 15, 1000);
	CHECK_STR(t.data, "< line 1\r\n< line 2\r\n");
	buf_reset(&t);
	/* a server's bytes that are not UTF-8 become U+FFFD; a NUL too */
	https_trace_text(&t, "< ", "a\xff\0b", 4, 1000);
	CHECK_STR(t.data, "< a\xef\xbf\xbd\xef\xbf\xbd"
					  "b\r\n");
	buf_reset(&t);
	/* cut at max, and said so */
	https_trace_text(&t, "> ", "abcdef", 6, 3);
	CHECK_STR(t.data, "> abc\r\n* [cut]\r\n");
	buf_reset(&t);
	https_trace_text(&t, "* ", "", 0, 10);
	CHECK_STR(t.data, "* \r\n");
	https_trace_text(NULL, "* ", "x", 1, 10); /* no trace: nothing happens */
	buf_free(&t);
}

static void
test_trace_is_bounded(void)
{
	struct Buf t = BUF_INIT;
	char *line = malloc(HTTPS_LINE_MAX * 3);
	int i;

	memset(line, 'x', HTTPS_LINE_MAX * 3);
	/* one line is cut at HTTPS_LINE_MAX bytes */
	https_trace_text(&t, "> ", line, HTTPS_LINE_MAX * 3, HTTPS_LINE_MAX * 3);
	CHECK(t.len < HTTPS_LINE_MAX + 16);
	/* and the whole trace at HTTPS_TRACE_MAX */
	for (i = 0; i < 400; i++)
		https_trace_text(&t, "> ", line, HTTPS_LINE_MAX, HTTPS_LINE_MAX);
	CHECK(t.len <= HTTPS_TRACE_MAX);
	CHECK(strstr(t.data, "[trace truncated]") != NULL);
	free(line);
	buf_free(&t);
}

int
main(void)
{
	RUN(test_retry_after);
	RUN(test_escape);
	RUN(test_trace_text);
	RUN(test_trace_is_bounded);
	return UNIT_DONE();
}
