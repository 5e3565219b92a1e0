/*
 * log.c - text and JSON log lines on stderr, one write per line so threads never interleave.
 */
#include "log.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

atomic_int log_threshold = LL_INFO;
static atomic_int log_fmt = LF_TEXT;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

const char *
log_level_name(enum LogLevel level)
{
	return level_names[level];
}

void
log_configure(enum LogLevel level, enum LogFormat format)
{
	atomic_store(&log_threshold, (int) level);
	atomic_store(&log_fmt, (int) format);
}

/* needs_quotes: a value is written bare only when it is a non-empty run of plain characters. */
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

const char *
log_quote(char *buf, size_t buflen, const char *s)
{
	size_t n = 0;

	if (buflen == 0)
		return "";
	if (s == NULL)
		s = "";
	if (!needs_quotes(s)) {
		snprintf(buf, buflen, "%s", s);
		return buf;
	}
	/* Reserve room for the closing quote and NUL. */
	buf[n++] = '"';
	for (; *s && n + 6 < buflen; s++) {
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char) c;
		} else if (c == '\n') {
			buf[n++] = '\\';
			buf[n++] = 'n';
		} else if (c == '\r') {
			buf[n++] = '\\';
			buf[n++] = 'r';
		} else if (c == '\t') {
			buf[n++] = '\\';
			buf[n++] = 't';
		} else if (c < ' ' || c == 0x7f) {
			n += (size_t) snprintf(buf + n, buflen - n, "\\x%02x", c);
		} else {
			buf[n++] = (char) c;
		}
	}
	buf[n++] = '"';
	buf[n] = '\0';
	return buf;
}

/* out_put appends a string to a fixed buffer, truncating silently. */
static void
out_put(char *out, size_t outlen, size_t *n, const char *s, size_t len)
{
	if (*n >= outlen)
		return;
	if (len > outlen - 1 - *n)
		len = outlen - 1 - *n;
	memcpy(out + *n, s, len);
	*n += len;
	out[*n] = '\0';
}

/* json_put writes s[0..len) as the inside of a JSON string. */
static void
json_put(char *out, size_t outlen, size_t *n, const char *s, size_t len)
{
	char esc[8];
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char) s[i];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char) c;
			out_put(out, outlen, n, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof esc, "\\u%04x", c);
			out_put(out, outlen, n, esc, 6);
		} else {
			out_put(out, outlen, n, (const char *) &s[i], 1);
		}
	}
}

/* is_integer: JSON output keeps numbers as numbers. */
static bool
is_integer(const char *s, size_t len)
{
	size_t i = (len > 0 && s[0] == '-') ? 1 : 0;

	if (i == len || len > 18)
		return false;
	for (; i < len; i++)
		if (!isdigit((unsigned char) s[i]))
			return false;
	return true;
}

/*
 * json_fields converts the key=value text of a log line into JSON members. Quoted values were made
 * by log_quote(), so the \" \\ \n \r \t \xNN escapes are the only ones to undo.
 */
static void
json_fields(char *out, size_t outlen, size_t *n, const char *p)
{
	char val[4096];

	while (*p) {
		const char *k, *eq;
		size_t vlen = 0;

		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		k = p;
		while (*p && *p != '=' && *p != ' ')
			p++;
		eq = p;
		if (*p != '=') {
			/* A bare word: keep it under "msg" rather than lose it. */
			out_put(out, outlen, n, ",\"msg\":\"", 8);
			json_put(out, outlen, n, k, (size_t) (p - k));
			out_put(out, outlen, n, "\"", 1);
			continue;
		}
		p++;
		if (*p == '"') {
			p++;
			while (*p && *p != '"' && vlen < sizeof val - 1) {
				if (*p == '\\' && p[1]) {
					p++;
					if (*p == 'n')
						val[vlen++] = '\n';
					else if (*p == 'r')
						val[vlen++] = '\r';
					else if (*p == 't')
						val[vlen++] = '\t';
					else if (*p == 'x' && isxdigit((unsigned char) p[1]) && isxdigit((unsigned char) p[2])) {
						char hex[3] = {p[1], p[2], '\0'};

						val[vlen++] = (char) strtol(hex, NULL, 16);
						p += 2;
					} else
						val[vlen++] = *p;
					p++;
				} else
					val[vlen++] = *p++;
			}
			if (*p == '"')
				p++;
		} else {
			while (*p && *p != ' ' && vlen < sizeof val - 1)
				val[vlen++] = *p++;
		}
		out_put(out, outlen, n, ",\"", 2);
		json_put(out, outlen, n, k, (size_t) (eq - k));
		out_put(out, outlen, n, "\":", 2);
		if (is_integer(val, vlen) && !(vlen > 1 && val[0] == '0')) {
			out_put(out, outlen, n, val, vlen);
		} else {
			out_put(out, outlen, n, "\"", 1);
			json_put(out, outlen, n, val, vlen);
			out_put(out, outlen, n, "\"", 1);
		}
	}
}

size_t
log_format_line(char *out, size_t outlen, enum LogFormat format, const char *ts, enum LogLevel level,
				const char *event, const char *fields)
{
	size_t n = 0;

	out[0] = '\0';
	if (format == LF_JSON) {
		out_put(out, outlen, &n, "{\"ts\":\"", 7);
		out_put(out, outlen, &n, ts, strlen(ts));
		out_put(out, outlen, &n, "\",\"level\":\"", 11);
		out_put(out, outlen, &n, level_names[level], strlen(level_names[level]));
		out_put(out, outlen, &n, "\",\"event\":\"", 11);
		json_put(out, outlen, &n, event, strlen(event));
		out_put(out, outlen, &n, "\"", 1);
		json_fields(out, outlen, &n, fields);
		out_put(out, outlen, &n, "}", 1);
	} else {
		n = (size_t) snprintf(out, outlen, "%s %s %s%s%s", ts, level_names[level], event, *fields ? " " : "",
							  fields);
		if (n >= outlen)
			n = outlen - 1;
	}
	return n;
}

void
log_write(enum LogLevel level, const char *event, const char *fmt, ...)
{
	char fields[8192], line[16384], ts[32];
	struct timespec now;
	struct tm tm;
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(fields, sizeof fields, fmt, ap);
	va_end(ap);

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof ts - n, ".%03ldZ", now.tv_nsec / 1000000);

	n = log_format_line(line, sizeof line - 1, (enum LogFormat) atomic_load(&log_fmt), ts, level, event,
						fields);
	line[n++] = '\n';
	pthread_mutex_lock(&log_mu);
	/* A failed write to stderr has nowhere to be reported; the daemon goes on. */
	if (write(STDERR_FILENO, line, n) < 0) {
	}
	pthread_mutex_unlock(&log_mu);
}
