/*
 * log.h - one family of log macros: one line per event of note, stable event names and
 * key=value fields, as text or JSON lines on stderr.
 *
 *     log_info("batch", "processed=%d skipped=%d", n, s);
 *
 * The level is checked before anything is formatted. Values that may contain spaces or quotes
 * go through log_quote(). Secrets are never passed to these macros.
 */
#ifndef PGRELAY_LOG_H
#define PGRELAY_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum LogLevel { LL_ERROR, LL_WARN, LL_INFO, LL_DEBUG, LL_TRACE };

enum LogFormat {
	LF_TEXT, /* 2026-11-29T19:20:50.123Z info started mode=single */
	LF_JSON  /* {"ts":"...","level":"info","event":"started","mode":"single"} */
};

extern atomic_int log_threshold;

void log_configure(enum LogLevel level, enum LogFormat format);
void log_write(enum LogLevel level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* log_format_line renders one line (without newline) into out; exposed for unit tests. */
size_t log_format_line(char *out, size_t outlen, enum LogFormat format, const char *ts, enum LogLevel level,
					   const char *event, const char *fields);

/* log_quote returns s as a log value: as is when it is a plain token, else double-quoted with
 * escapes. The result lives in buf (truncated to buflen). */
const char *log_quote(char *buf, size_t buflen, const char *s);

const char *log_level_name(enum LogLevel level);

#define LOG_AT(lvl, ev, ...)                                                           \
	do {                                                                               \
		if ((int) (lvl) <= atomic_load_explicit(&log_threshold, memory_order_relaxed)) \
			log_write((lvl), (ev), __VA_ARGS__);                                       \
	} while (0)

#define log_error(ev, ...) LOG_AT(LL_ERROR, ev, __VA_ARGS__)
#define log_warn(ev, ...) LOG_AT(LL_WARN, ev, __VA_ARGS__)
#define log_info(ev, ...) LOG_AT(LL_INFO, ev, __VA_ARGS__)
#define log_debug(ev, ...) LOG_AT(LL_DEBUG, ev, __VA_ARGS__)
#define log_trace(ev, ...) LOG_AT(LL_TRACE, ev, __VA_ARGS__)

#endif
