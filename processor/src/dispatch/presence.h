/*
 * presence.h - this Processor's row of pgrelay.processors: reported on the control connection
 * after its first tick and then every PRESENCE_EVERY_MS (or every tick, when the poll interval is
 * longer), and removed at a clean stop, so that operators see which Processors run, where, and
 * whether they still tick.
 */
#ifndef PGRELAY_PRESENCE_H
#define PGRELAY_PRESENCE_H

#include <stdbool.h>

#include "tick.h"

/* How often a running Processor reports: an idle one adds one short write every 10 s. */
#define PRESENCE_EVERY_MS 10000

struct Presence {
	char host[256];        /* gethostname() */
	int pid;               /* getpid() */
	char started_at[32];   /* when this Processor started (UTC, ISO 8601) */
	long long next_us;     /* when the next report is due (now_us); 0: at the next tick */
	bool reported;         /* a report went through: there is a row to remove at stop */
	bool warned;           /* a failed report was logged; the next one is logged again only once it works */
	unsigned long session; /* the control session the last report went through (pgconn sessions) */
};

void presence_init(struct Presence *p);

/*
 * presence_tick reports when a report is due: workers, those of them connected and in_flight as
 * they are now, report_every the larger of PRESENCE_EVERY_MS and poll_interval_ms. Call it after a
 * tick. A failure is logged (report_failed, once until a report works again) and changes nothing
 * else; returns false when the control connection was lost (the caller reconnects).
 */
bool presence_tick(struct Presence *p, struct Ticker *t, int workers, int connected, int in_flight,
				   long poll_interval_ms);

/* presence_soon: something the report says changed; report after the next tick. */
void presence_soon(struct Presence *p);

/* presence_stop removes this Processor's row (a clean stop); best effort. */
void presence_stop(struct Presence *p, struct Ticker *t);

#endif
