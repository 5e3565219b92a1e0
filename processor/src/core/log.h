/*
 * log.h - the one family of log calls: one line per event of note, a stable event name and typed
 * fields, written as text or as one JSON object per line on stderr.
 *
 *     log_info("batch", LOG_INT("rounds", n), LOG_BOOL("has_work", b), LOG_STR("error", msg));
 *
 * The same calls about one database connection, log_warn_c(&w->pg, "reconnecting", ...) with
 * conn=worker-2 first, are declared in pgconn.h, next to the connection they name.
 *
 * The level is checked before any field is built, so a line below the threshold costs one atomic
 * load. Secrets are never passed to these calls.
 */
#ifndef PGRELAY_LOG_H
#define PGRELAY_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"

enum LogLevel { LL_ERROR, LL_WARN, LL_INFO, LL_DEBUG, LL_TRACE };

enum LogFormat {
	LF_TEXT, /* 2026-11-29T19:20:50.123Z info started mode=single */
	LF_JSON  /* {"ts":"...","level":"info","event":"started","mode":"single"} */
};

/* The type of a field decides how each format writes it. */
enum LogType {
	LT_STR,  /* text: bare or quoted; JSON: a string */
	LT_INT,  /* a number in both (counts, durations in ms or us) */
	LT_BOOL, /* text: t or f; JSON: true or false */
	LT_ID    /* a 63-bit id: text: digits; JSON: a string, as JavaScript and jq lose digits past 2^53 */
};

struct LogField {
	const char *key; /* a plain token: [a-z_] */
	enum LogType type;
	union {
		const char *s; /* LT_STR; NULL is written as "" */
		long long i;   /* LT_INT, LT_ID */
		bool b;        /* LT_BOOL */
	} v;
};

/* The field constructors; the union member they assign makes the compiler check the value's type. */
#define LOG_STR(k, val) ((struct LogField){.key = (k), .type = LT_STR, .v.s = (val)})
#define LOG_INT(k, val) ((struct LogField){.key = (k), .type = LT_INT, .v.i = (val)})
#define LOG_MS(k, val) LOG_INT(k, val)
#define LOG_BOOL(k, val) ((struct LogField){.key = (k), .type = LT_BOOL, .v.b = (val)})
#define LOG_ID(k, val) ((struct LogField){.key = (k), .type = LT_ID, .v.i = (val)})
/* LOG_OPT_STR is a string field that is left out of the line when val is NULL or "". */
#define LOG_OPT_STR(k, val) \
	((struct LogField){.key = (val) != NULL && *(val) != '\0' ? (k) : NULL, .type = LT_STR, .v.s = (val)})
/* LOG_STRF formats a string value (printf-checked) into a buffer that lives as long as the call. */
#define LOG_STRF(k, ...) LOG_STR(k, log_sprintf((char[LOG_STRF_MAX]){0}, LOG_STRF_MAX, __VA_ARGS__))
#define LOG_STRF_MAX 512

/* String values longer than this many bytes are cut (at a character boundary) and end in "...". */
#define LOG_VALUE_MAX 4096

extern atomic_int log_threshold;

static inline bool
log_enabled(enum LogLevel level)
{
	return (int) level <= atomic_load_explicit(&log_threshold, memory_order_relaxed);
}

void log_configure(enum LogLevel level, enum LogFormat format);

/*
 * log_write writes one line: the event, then conn=<conn> when conn is not NULL, then the fields in
 * order. One write(2) per line, so lines of different threads never interleave. The macros below
 * call it; call it directly only for a field list built at run time (the "started" line).
 */
void log_write(enum LogLevel level, const char *conn, const char *event, const struct LogField *fields,
			   size_t n);

/*
 * log_format renders one line, without the newline, into out (exposed for the unit tests).
 * Returns false when out ran out of memory.
 */
bool log_format(struct Buf *out, enum LogFormat format, const char *ts, enum LogLevel level, const char *conn,
				const char *event, const struct LogField *fields, size_t n) MUSTCHECK;

/* log_sprintf is snprintf returning buf, for LOG_STRF. */
const char *log_sprintf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * LOG_AT builds the field array only when the level is enabled, and evaluates lvl once. The empty
 * first element lets a call pass no fields at all.
 */
#define LOG_AT(lvl, conn, ev, ...)                                                             \
	do {                                                                                       \
		enum LogLevel log_l_ = (lvl);                                                          \
		if (log_enabled(log_l_)) {                                                             \
			const struct LogField log_f_[] = {{.key = NULL}, __VA_ARGS__};                     \
			log_write(log_l_, (conn), (ev), log_f_ + 1, sizeof log_f_ / sizeof log_f_[0] - 1); \
		}                                                                                      \
	} while (0)

#define log_error(ev, ...) LOG_AT(LL_ERROR, NULL, ev, __VA_ARGS__)
#define log_warn(ev, ...) LOG_AT(LL_WARN, NULL, ev, __VA_ARGS__)
#define log_info(ev, ...) LOG_AT(LL_INFO, NULL, ev, __VA_ARGS__)
#define log_debug(ev, ...) LOG_AT(LL_DEBUG, NULL, ev, __VA_ARGS__)
#define log_trace(ev, ...) LOG_AT(LL_TRACE, NULL, ev, __VA_ARGS__)

#endif
