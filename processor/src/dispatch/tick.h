/*
 * tick.h - the control connection: startup checks, the per-tick probe with the mode gate, and
 * the fetch of pending ids.
 */
#ifndef PGRELAY_TICK_H
#define PGRELAY_TICK_H

#include <stdbool.h>

#include "compiler.h"
#include "job.h"
#include "pgconn.h"
#include "pgrelay.h"

struct ProbeResult {
	bool has_work;         /* an event is due */
	bool reload_requested; /* pgrelay.request_reload() since the generation we saw */
	bool paused;           /* pgrelay.pause() is in force */
	bool dispatch;         /* the mode gate: true when this node may dispatch */
	long long generation;  /* the reload generation the probe saw */
	int leader;            /* leader mode: 1 this node leads, 0 it does not; -1 in the other modes */
	bool schedule_due;     /* a schedule's time has come and this node fires schedules */
};

struct Ticker {
	struct PgConn pg;          /* the control connection */
	int gate;                  /* -1 unknown, 0 standby_waiting, 1 dispatching */
	int paused;                /* -1 unknown, 0 running, 1 paused */
	long long seen_generation; /* -1 before the first probe */
	char install[160];         /* what the startup check found: "pg_relay 1.3 (extension), ..." */
	char schema_oid[24];       /* the oid of schema pgrelay when the startup check trusted it */
	bool schema_changed;       /* the last probe found another schema pgrelay, or none */
	/*
	 * The floors under finished queue rows that the probe returned (NULL: start again from
	 * none). Passed back to the next probe and to each fetch, so that neither steps over the rows
	 * finished since the oldest snapshot another session holds (docs/architecture.md).
	 */
	char *bound;
};

/* tick_init prepares the control connection to c's database; c must outlive t. */
void tick_init(struct Ticker *t, const struct Config *c);
void tick_free(struct Ticker *t);

/*
 * tick_session makes sure the control connection is up (pgconn_session); false with *wait_ms
 * until the next attempt. With --once there is one attempt and no "reconnecting" line: the caller
 * reports the failure and stops.
 */
bool tick_session(struct Ticker *t, const struct Config *c, long *wait_ms) MUSTCHECK;

/*
 * tick_check_installation verifies the install (CREATE EXTENSION or pg_relay install, complete,
 * both extensions the same way), the privileges and the interface version, and describes the
 * install in t->install. Returns false with a one-line reason and a hint when the Processor cannot
 * work here.
 */
bool tick_check_installation(struct Ticker *t, char *err, size_t errlen, char *hint, size_t hintlen);

/*
 * tick_query runs the probe statement id. Once the startup check trusted schema pgrelay, it first
 * checks, in the same round trip and transaction, that the schema is still that one: a schema
 * dropped and made again (by whoever may create schemas, once pg_relay's owner dropped it) is one
 * nothing was checked of, and the probe would run what it holds. Then the probe is not run at
 * all, and t->schema_changed is set.
 */
PGresult *tick_query(struct Ticker *t, enum StmtId id, const char *const *params) MUSTCHECK;

/*
 * tick_probe runs queue_probe() and the mode gate in one round trip, logging state changes, and
 * keeps the bound it returns for the next probe and the fetch.
 */
bool tick_probe(struct Ticker *t, struct ProbeResult *r);

/*
 * tick_keep_bound stores the probe's next bound (a copy); NULL, or a failed copy, starts again
 * from none, which is always sound.
 */
void tick_keep_bound(struct Ticker *t, const char *next);

/* tick_note_paused logs "paused" and "resumed" when pgrelay.pause() or resume() took effect. */
void tick_note_paused(struct Ticker *t, bool paused);

/* tick_fetch takes up to limit eligible ids; returns how many (jobs in *out) or -1. */
int tick_fetch(struct Ticker *t, int limit, struct Job **out);

/*
 * tick_queue_stats reads pgrelay.queue_depth for a scrape of --metrics (at most
 * METRICS_MAX_CHANNELS channels) and hands the figures to metrics.c. Returns false when the
 * statement failed (t->pg says why; the metrics keep their last figures).
 */
bool tick_queue_stats(struct Ticker *t);

/* tick_lost: the control connection failed under a statement; log it, close it, reconnect at once. */
void tick_lost(struct Ticker *t);

#endif
