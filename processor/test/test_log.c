/*
 * test_log.c - log lines: quoting, the text format and its JSON twin.
 */
#include <stdio.h>
#include <string.h>

#include "backoff.h"
#include "log.h"
#include "unit.h"

static void
test_quote(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain", "plain"},
		{"", "\"\""},
		{"two words", "\"two words\""},
		{"say \"hi\"", "\"say \\\"hi\\\"\""},
		{"a=b", "\"a=b\""},
		{"line\nbreak\ttab", "\"line\\nbreak\\ttab\""},
		{"back\\slash", "\"back\\\\slash\""},
		{"bell\a", "\"bell\\x07\""},
		{"ünïcode", "ünïcode"},
	};
	char buf[128];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK_STR(log_quote(buf, sizeof buf, cases[i].in), cases[i].out);
	/* truncated, but still a closed quoted value */
	CHECK_STR(log_quote(buf, 8, "a very long value"), "\"a\"");
}

static void
test_text_line(void)
{
	char line[256];

	log_format_line(line, sizeof line, LF_TEXT, "2026-11-29T19:20:50.123Z", LL_INFO, "batch",
					"processed=3 error=\"x y\"");
	CHECK_STR(line, "2026-11-29T19:20:50.123Z info batch processed=3 error=\"x y\"");
	log_format_line(line, sizeof line, LF_TEXT, "T", LL_WARN, "stopping", "");
	CHECK_STR(line, "T warn stopping");
}

static void
test_json_line(void)
{
	char line[512], q[128];
	char fields[256];

	snprintf(fields, sizeof fields, "processed=3 conn=worker-1 error=%s id=0012 neg=-5",
			 log_quote(q, sizeof q, "said \"no\"\nand left"));
	log_format_line(line, sizeof line, LF_JSON, "T", LL_ERROR, "attempt_failed", fields);
	CHECK_STR(line, "{\"ts\":\"T\",\"level\":\"error\",\"event\":\"attempt_failed\",\"processed\":3,"
					"\"conn\":\"worker-1\",\"error\":\"said \\\"no\\\"\\u000aand left\",\"id\":\"0012\","
					"\"neg\":-5}");
	log_format_line(line, sizeof line, LF_JSON, "T", LL_INFO, "odd", "bare word=1");
	CHECK_STR(line, "{\"ts\":\"T\",\"level\":\"info\",\"event\":\"odd\",\"msg\":\"bare\",\"word\":1}");
}

static void
test_backoff(void)
{
	long d = 0;
	int i;
	static const long want[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};

	for (i = 0; i < 8; i++) {
		d = backoff_next(d, 100, 5000);
		CHECK(d == want[i]);
	}
	CHECK(backoff_jitter(1000, 0.0) == 500);
	CHECK(backoff_jitter(1000, 0.999999) == 999);
	CHECK(backoff_jitter(1000, 7) <= 1000);
	for (i = 0; i < 1000; i++) {
		double r = backoff_random();

		CHECK(r >= 0 && r < 1);
	}
	CHECK(backoff_next(2000000000L, 100, 30000) == 30000);
}

int
main(void)
{
	RUN(test_quote);
	RUN(test_text_line);
	RUN(test_json_line);
	RUN(test_backoff);
	return UNIT_DONE();
}
