/*
 * service.h - telling systemd how the Processor is doing (sd_notify, for Type=notify units):
 * readiness, reloads, stopping, a one-line status and the watchdog. Every call is a no-op when
 * NOTIFY_SOCKET is not set, so the Processor runs the same outside systemd.
 */
#ifndef PGRELAY_SERVICE_H
#define PGRELAY_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "pool.h"

/* service_init reads the watchdog interval systemd asks for (WATCHDOG_USEC), if any. */
void service_init(void);

/* service_ready says READY=1: the "started" line is written and the workers are started. */
void service_ready(void);

/* service_reloading and service_reloaded bracket a reload: RELOADING=1, then READY=1. */
void service_reloading(void);
void service_reloaded(void);

/* service_stopping says STOPPING=1 and how many events are still in flight. */
void service_stopping(int in_flight);

/*
 * service_loop runs once per pass of a loop that is about to sleep for wait_ms: it pings the
 * watchdog when half its interval has passed, updates the status line when it changed, and
 * returns wait_ms, shortened so that the next ping is not late. connected says whether the
 * control connection is up.
 */
long service_loop(long wait_ms, bool connected);

/* service_status_text writes the status line for a state of the pool: "idle", "draining, ...". */
void service_status_text(char *buf, size_t len, bool connected, const struct PoolCounts *c);

/* service_watchdog_interval_us is the time between two pings (0: no watchdog). */
long long service_watchdog_interval_us(void);

#endif
