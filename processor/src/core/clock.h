/*
 * clock.h - the Processor's two clocks: a monotonic one for timers, budgets and durations, and
 * UTC wall-clock timestamps for log lines and the documents the notifier stores.
 */
#ifndef PGRELAY_CLOCK_H
#define PGRELAY_CLOCK_H

#include <stddef.h>

/* now_us is the monotonic clock in microseconds: for deadlines and durations, never for dates. */
long long now_us(void);

/* iso8601_now writes the current UTC time as 2026-11-29T19:20:50.123Z. */
void iso8601_now(char *buf, size_t len);

#endif
