/*
 * test_log.c - log lines: every field type in both formats, row by row (quoting, ids as strings,
 * booleans, invalid UTF-8, huge values), the per-connection prefix and level filtering.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "unit.h"

#define FFFD "\xef\xbf\xbd"

/* One field, and how each format must write it. */
static const struct {
	const char *what;
	struct LogField f;
	const char *text; /* after "T info ev " */
	const char *json; /* the member after "event" */
} rows[] = {
	{"plain token", LOG_STR("v", "plain"), "v=plain", "\"v\":\"plain\""},
	{"empty", LOG_STR("v", ""), "v=\"\"", "\"v\":\"\""},
	{"NULL", LOG_STR("v", NULL), "v=\"\"", "\"v\":\"\""},
	{"spaces", LOG_STR("v", "two words"), "v=\"two words\"", "\"v\":\"two words\""},
	{"quotes", LOG_STR("v", "say \"hi\""), "v=\"say \\\"hi\\\"\"", "\"v\":\"say \\\"hi\\\"\""},
	{"equals sign", LOG_STR("v", "a=b"), "v=\"a=b\"", "\"v\":\"a=b\""},
	{"line breaks", LOG_STR("v", "line\nbreak\r\ttab"), "v=\"line\\nbreak\\r\\ttab\"",
	 "\"v\":\"line\\nbreak\\r\\ttab\""},
	{"backslash", LOG_STR("v", "back\\slash"), "v=\"back\\\\slash\"", "\"v\":\"back\\\\slash\""},
	{"control", LOG_STR("v", "bell\a"), "v=\"bell\\x07\"", "\"v\":\"bell\\u0007\""},
	{"delete", LOG_STR("v", "del\x7f"), "v=\"del\\x7f\"", "\"v\":\"del\x7f\""},
	{"UTF-8", LOG_STR("v", "ünïcode"), "v=ünïcode", "\"v\":\"ünïcode\""},
	{"invalid UTF-8",
	 LOG_STR("v", "a\xff"
				  "b\xc3"),
	 "v=a" FFFD "b" FFFD, "\"v\":\"a" FFFD "b" FFFD "\""},
	{"overlong", LOG_STR("v", "\xc0\xaf"), "v=" FFFD FFFD, "\"v\":\"" FFFD FFFD "\""},
	{"surrogate", LOG_STR("v", "\xed\xa0\x80"), "v=" FFFD FFFD FFFD, "\"v\":\"" FFFD FFFD FFFD "\""},
	{"four bytes", LOG_STR("v", "\xf0\x9f\x98\x80"), "v=\xf0\x9f\x98\x80", "\"v\":\"\xf0\x9f\x98\x80\""},
	{"integer", LOG_INT("n", -5), "n=-5", "\"n\":-5"},
	{"duration", LOG_MS("retry_in_ms", 1500), "retry_in_ms=1500", "\"retry_in_ms\":1500"},
	{"id past 2^53", LOG_ID("id", 9007199254740993LL), "id=9007199254740993", "\"id\":\"9007199254740993\""},
	{"true", LOG_BOOL("has_work", true), "has_work=t", "\"has_work\":true"},
	{"false", LOG_BOOL("has_work", false), "has_work=f", "\"has_work\":false"},
};

/* render formats one line; the result is static (tests only). */
static const char *
render(enum LogFormat fmt, enum LogLevel level, const char *conn, const char *event, const struct LogField *f,
	   size_t n)
{
	static struct Buf out = BUF_INIT;

	if (!log_format(&out, fmt, "T", level, conn, event, f, n))
		return "(out of memory)";
	return out.data;
}

static void
test_field_rows(void)
{
	char want[256];
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *got;

		snprintf(want, sizeof want, "T info ev %s", rows[i].text);
		got = render(LF_TEXT, LL_INFO, NULL, "ev", &rows[i].f, 1);
		if (strcmp(got, want) != 0)
			fprintf(stderr, "  row \"%s\" (text)\n", rows[i].what);
		CHECK_STR(got, want);

		snprintf(want, sizeof want, "{\"ts\":\"T\",\"level\":\"info\",\"event\":\"ev\",%s}", rows[i].json);
		got = render(LF_JSON, LL_INFO, NULL, "ev", &rows[i].f, 1);
		if (strcmp(got, want) != 0)
			fprintf(stderr, "  row \"%s\" (json)\n", rows[i].what);
		CHECK_STR(got, want);
	}
}

static void
test_conn_prefix_and_order(void)
{
	const struct LogField f[] = {LOG_INT("attempt", 2), LOG_MS("retry_in_ms", 150),
								 LOG_STR("error", "connection refused")};

	CHECK_STR(render(LF_TEXT, LL_WARN, "worker-2", "reconnecting", f, 3),
			  "T warn reconnecting conn=worker-2 attempt=2 retry_in_ms=150 error=\"connection refused\"");
	CHECK_STR(
		render(LF_JSON, LL_WARN, "worker-2", "reconnecting", f, 3),
		"{\"ts\":\"T\",\"level\":\"warn\",\"event\":\"reconnecting\",\"conn\":\"worker-2\",\"attempt\":2,"
		"\"retry_in_ms\":150,\"error\":\"connection refused\"}");
	CHECK_STR(render(LF_TEXT, LL_INFO, NULL, "stopping", NULL, 0), "T info stopping");
	CHECK_STR(render(LF_JSON, LL_ERROR, NULL, "stopping", NULL, 0),
			  "{\"ts\":\"T\",\"level\":\"error\",\"event\":\"stopping\"}");
}

/* big returns n copies of c followed by tail (malloc'd). */
static char *
big(size_t n, char c, const char *tail)
{
	char *s = malloc(n + strlen(tail) + 1);

	memset(s, c, n);
	strcpy(s + n, tail);
	return s;
}

static void
test_huge_values_are_cut(void)
{
	char *huge = big(3 * LOG_VALUE_MAX, 'x', ""), *edge = big(LOG_VALUE_MAX - 1, 'y', "é");
	struct LogField f = LOG_STR("v", huge);
	const char *line = render(LF_TEXT, LL_INFO, NULL, "ev", &f, 1);
	json_t *doc;

	/* "T info ev v=" + the first LOG_VALUE_MAX bytes + "..." */
	CHECK(strlen(line) == strlen("T info ev v=") + LOG_VALUE_MAX + 3);
	CHECK(strcmp(line + strlen(line) - 4, "x...") == 0);
	doc = json_loads(render(LF_JSON, LL_INFO, NULL, "ev", &f, 1), 0, NULL);
	CHECK(doc != NULL && strlen(json_string_value(json_object_get(doc, "v"))) == LOG_VALUE_MAX + 3);
	json_decref(doc);
	/* a two-byte character that would cross the limit is left out whole */
	f = LOG_STR("v", edge);
	line = render(LF_TEXT, LL_INFO, NULL, "ev", &f, 1);
	CHECK(strcmp(line + strlen(line) - 4, "y...") == 0);
	free(huge);
	free(edge);
}

static int evaluated;

/* counted notes that a field's value was computed. */
static long long
counted(void)
{
	return ++evaluated;
}

static int picked;

/* pick returns the level of a line that decides its level at run time, counting the calls. */
static enum LogLevel
pick(void)
{
	picked++;
	return LL_WARN;
}

static void
log_some(void)
{
	log_debug("hidden", LOG_INT("n", counted()), LOG_STRF("s", "%lld", counted()));
	log_info("hidden_too", LOG_INT("n", counted()));
	log_warn("shown", LOG_INT("n", counted()), LOG_ID("id", 42));
	log_error("also_shown");
	LOG_AT(pick(), NULL, "picked");
}

static void
test_level_filter(void)
{
	const char *out;

	log_configure(LL_WARN, LF_TEXT);
	evaluated = 0;
	out = unit_capture(log_some);
	CHECK(evaluated == 1); /* fields of lines below the threshold are never built */
	CHECK(strstr(out, "hidden") == NULL);
	CHECK(strstr(out, " warn shown n=1 id=42\n") != NULL);
	CHECK(strstr(out, " error also_shown\n") != NULL);
	CHECK(!log_enabled(LL_INFO) && log_enabled(LL_ERROR));
	CHECK(picked == 1); /* a level computed at run time is evaluated once */
	CHECK(strstr(out, " warn picked\n") != NULL);

	log_configure(LL_TRACE, LF_JSON);
	out = unit_capture(log_some);
	CHECK(strstr(out, "\"event\":\"hidden\",\"n\":2,\"s\":\"3\"}\n") != NULL);
	CHECK(strstr(out, "\"event\":\"shown\",\"n\":5,\"id\":\"42\"}\n") != NULL);
	log_configure(LL_INFO, LF_TEXT);
}

int
main(void)
{
	RUN(test_field_rows);
	RUN(test_conn_prefix_and_order);
	RUN(test_huge_values_are_cut);
	RUN(test_level_filter);
	return UNIT_DONE();
}
