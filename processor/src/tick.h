/*
 * tick.h - the control connection: startup checks, the per-tick probe with the mode gate, and
 * the fetch of pending ids.
 */
#ifndef PGRELAY_TICK_H
#define PGRELAY_TICK_H

#include <stdbool.h>

#include "pgconn.h"
#include "pgrelay.h"

struct ProbeResult {
	bool has_work;         /* an event is due */
	bool reload_requested; /* pgrelay.request_reload() since the generation we saw */
	bool paused;           /* pgrelay.pause() is in force */
	bool dispatch;         /* the mode gate: true when this node may dispatch */
	long long generation;  /* the reload generation the probe saw */
};

struct Ticker {
	struct PgConn pg;
	long backoff_ms;           /* reconnect delay before jitter */
	long long next_connect_us; /* when to try the next reconnect */
	int reconnect_attempt;
	int gate;                  /* -1 unknown, 0 standby_waiting, 1 dispatching */
	int paused;                /* -1 unknown, 0 running, 1 paused */
	long long seen_generation; /* -1 before the first probe */
};

void ticker_init(struct Ticker *t);
void ticker_free(struct Ticker *t);

/* ticker_connect makes one attempt; on failure it schedules the next and logs "reconnecting". */
bool ticker_connect(struct Ticker *t, const struct Config *c);

/*
 * ticker_check_installation verifies the extension, the privileges and the interface version.
 * Returns false with a one-line reason and a hint when the Processor cannot work here.
 */
bool ticker_check_installation(struct Ticker *t, char *err, size_t errlen, char *hint, size_t hintlen);

/* ticker_probe runs queue_probe() and the mode gate in one round trip, logging state changes. */
bool ticker_probe(struct Ticker *t, struct ProbeResult *r);

/* ticker_fetch takes up to limit eligible ids; returns how many (jobs in *out) or -1. */
int ticker_fetch(struct Ticker *t, int limit, struct Job **out);

/* ticker_lost: the control connection failed; close it and schedule a reconnect. */
void ticker_lost(struct Ticker *t);

#endif
