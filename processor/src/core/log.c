/*
 * log.c - render typed log fields as a text line or a JSON object (jansson), and write each line
 * with one write(2) so that threads never interleave.
 */
#include "log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "utf8.h"

atomic_int log_threshold = LL_INFO;
static atomic_int log_fmt = LF_TEXT;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void
log_configure(enum LogLevel level, enum LogFormat format)
{
	atomic_store(&log_threshold, (int) level);
	atomic_store(&log_fmt, (int) format);
}

const char *
log_sprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return buf;
}

/*
 * clean_value copies s into out as valid UTF-8 (bad bytes become U+FFFD), at most LOG_VALUE_MAX
 * bytes of it; a value cut short ends in "...". Both formats write what this makes.
 */
static void
clean_value(struct Buf *out, const char *s)
{
	s = s ? s : "";
	utf8_clean(out, s, strlen(s), LOG_VALUE_MAX);
}

/* needs_quotes: a text value is written bare only when it is a non-empty run of plain characters. */
static bool
needs_quotes(const char *s)
{
	if (*s == '\0')
		return true;
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f)
			return true;
	}
	return false;
}

/* put_quoted writes s as a text value: bare when plain, else in double quotes with C-like escapes. */
static void
put_quoted(struct Buf *out, const char *s)
{
	if (!needs_quotes(s)) {
		buf_puts(out, s);
		return;
	}
	buf_putc(out, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\') {
			buf_putc(out, '\\');
			buf_putc(out, (char) c);
		} else if (c == '\n')
			buf_puts(out, "\\n");
		else if (c == '\r')
			buf_puts(out, "\\r");
		else if (c == '\t')
			buf_puts(out, "\\t");
		else if (c < ' ' || c == 0x7f)
			buf_printf(out, "\\x%02x", c);
		else
			buf_putc(out, (char) c);
	}
	buf_putc(out, '"');
}

/* text_field appends " key=value". */
static void
text_field(struct Buf *out, const struct LogField *f, struct Buf *scratch)
{
	buf_printf(out, " %s=", f->key);
	switch (f->type) {
	case LT_STR:
		buf_reset(scratch);
		clean_value(scratch, f->v.s);
		if (scratch->oom)
			out->oom = true;
		put_quoted(out, scratch->data ? scratch->data : "");
		break;
	case LT_INT:
	case LT_ID:
		buf_printf(out, "%lld", f->v.i);
		break;
	case LT_BOOL:
		buf_puts(out, f->v.b ? "t" : "f");
		break;
	}
}

/* json_value makes the JSON value of a field (NULL when out of memory). */
static json_t *
json_value(const struct LogField *f, struct Buf *scratch)
{
	char id[24];

	switch (f->type) {
	case LT_STR:
		buf_reset(scratch);
		clean_value(scratch, f->v.s);
		/* Note that jansson refuses invalid UTF-8: clean_value made sure there is none. */
		return scratch->oom ? NULL : json_stringn(scratch->data ? scratch->data : "", scratch->len);
	case LT_INT:
		return json_integer(f->v.i);
	case LT_ID:
		snprintf(id, sizeof id, "%lld", f->v.i);
		return json_string(id);
	case LT_BOOL:
		break;
	}
	return json_boolean(f->v.b);
}

/* json_line renders the line as one compact JSON object, members in the order given. */
static bool
json_line(struct Buf *out, const char *ts, enum LogLevel level, const char *conn, const char *event,
		  const struct LogField *fields, size_t n, struct Buf *scratch)
{
	json_t *obj = json_object();
	char *text = NULL;
	bool ok = obj != NULL;
	size_t i;

	ok = ok && json_object_set_new(obj, "ts", json_string(ts)) == 0 &&
		 json_object_set_new(obj, "level", json_string(level_names[level])) == 0 &&
		 json_object_set_new(obj, "event", json_string(event)) == 0;
	if (ok && conn != NULL)
		ok = json_object_set_new(obj, "conn", json_string(conn)) == 0;
	for (i = 0; ok && i < n; i++)
		if (fields[i].key != NULL) /* LOG_OPT_STR without a value */
			ok = json_object_set_new(obj, fields[i].key, json_value(&fields[i], scratch)) == 0;
	if (ok)
		text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (text == NULL)
		return false;
	buf_puts(out, text);
	free(text);
	return !out->oom;
}

bool
log_format(struct Buf *out, enum LogFormat format, const char *ts, enum LogLevel level, const char *conn,
		   const char *event, const struct LogField *fields, size_t n)
{
	struct Buf scratch = BUF_INIT;
	bool ok;
	size_t i;

	buf_reset(out);
	if (format == LF_JSON) {
		ok = json_line(out, ts, level, conn, event, fields, n, &scratch);
	} else {
		buf_printf(out, "%s %s %s", ts, level_names[level], event);
		if (conn != NULL)
			buf_printf(out, " conn=%s", conn);
		for (i = 0; i < n; i++)
			if (fields[i].key != NULL) /* LOG_OPT_STR without a value */
				text_field(out, &fields[i], &scratch);
		ok = !out->oom;
	}
	buf_free(&scratch);
	return ok;
}

void
log_write(enum LogLevel level, const char *conn, const char *event, const struct LogField *fields, size_t n)
{
	struct Buf line = BUF_INIT;
	char ts[32];

	iso8601_now(ts, sizeof ts);
	/* Out of memory there is nothing sensible to write; the daemon goes on. */
	if (log_format(&line, (enum LogFormat) atomic_load(&log_fmt), ts, level, conn, event, fields, n) &&
		buf_putc(&line, '\n')) {
		pthread_mutex_lock(&log_mu);
		/* A failed write to stderr has nowhere to be reported either. */
		if (write(STDERR_FILENO, line.data, line.len) < 0) {
		}
		pthread_mutex_unlock(&log_mu);
	}
	buf_free(&line);
}
