/*
 * metrics.h - what the Prometheus endpoint (metrics_http.c) reports: counters and histograms the
 * Processor keeps as it works, the state of its last tick, and per-channel queue figures read from
 * the database when a scrape asks for them. Recording is cheap and thread-safe (atomics, or one
 * mutex held for a few instructions); rendering copies under that mutex and formats outside it.
 * docs/monitoring.md lists every metric.
 */
#ifndef PGRELAY_METRICS_H
#define PGRELAY_METRICS_H

#include <stdbool.h>

#include "buf.h"
#include "outcome.h"

/* Channels and profiles tracked by name; the ones after these share the label "(other)". */
#define METRICS_MAX_CHANNELS 1000
/* Workers with a series of their own (--workers allows no more). */
#define METRICS_MAX_WORKERS 64

/*
 * One channel's row of pgrelay.queue_depth, or (topic set) one subscription's of
 * pgrelay.topic_subscribers, as the scrape reports it.
 */
struct QueueStat {
	char channel[132];
	char action_type[32];
	long long queued;      /* events in the queue, due or not */
	long long due;         /* of which due now */
	long long retrying;    /* of which waiting for another attempt */
	double oldest_due_age; /* seconds the oldest due event has waited; 0 when none is due */
	bool paused;           /* pause(channel) */
	char topic[132];       /* "" for a channel's row */
	long long failed;      /* a subscription's deliveries failed for good */
	long long failed_1h;   /* of which failed in the last hour */
};

/*
 * metrics_init starts the bookkeeping: version and mode for pgrelay_processor_info, the number of
 * workers, and wake, which metrics_scrape_begin calls to have the main loop refresh the queue
 * figures (pool_wake). Called once, before any other metrics_* call.
 */
void metrics_init(const char *version, const char *mode, int workers, void (*wake)(void));

/* Forget everything (exit, unit tests). */
void metrics_reset(void);

/* metrics_event counts one event a worker finished with outcome oc, and its duration if an attempt. */
void metrics_event(const char *channel, enum Outcome oc, long long duration_us);

/*
 * metrics_config_error counts one attempt of channel that failed because of the set-up (e, not
 * CE_NONE): a missing handler or grant, a secret that could not be read.
 */
void metrics_config_error(const char *channel, enum ConfigError e);

/* metrics_probe records one tick's probe: its duration, and whether it failed. */
void metrics_probe(long long duration_us, bool ok);

/*
 * metrics_state records what the last probe said: the control connection is up, dispatch is
 * allowed (the mode gate), pgrelay.pause() is in force; leader is 1 or 0 in leader mode, -1
 * otherwise (no pgrelay_leader series).
 */
void metrics_state(bool connected, bool dispatch, bool paused, int leader);

/* metrics_busy records how many events are in flight (the main loop, each pass). */
void metrics_busy(int in_flight);

/*
 * metrics_workers_connected records how many workers have a connection: --workers less those whose
 * connection attempts have failed for a second (pool_workers_missing).
 */
void metrics_workers_connected(int n);

/* metrics_events_per_commit records --events-per-commit (at start and after each reload). */
void metrics_events_per_commit(int n);
/*
 * metrics_batch_cap records worker no's (1..workers) cap on its batches after lost connections
 * (batch.h; 0: none, --events-per-commit applies).
 */
void metrics_batch_cap(int worker, int cap);

/* Connections: opened, closed, a failed attempt, and a session back after a loss or failures. */
void metrics_conn_opened(bool worker);
void metrics_conn_closed(bool worker);
void metrics_conn_failed(bool worker);
void metrics_reconnected(bool worker);

/* metrics_ratelimit_wait counts one send deferred by profile's rate limit, wait_ms before a slot. */
void metrics_ratelimit_wait(const char *profile, long wait_ms);

/*
 * metrics_queue_wanted: a scrape waits for fresh queue figures (main thread: read them with
 * tick_queue_stats, then call metrics_queue_update).
 */
bool metrics_queue_wanted(void);

/*
 * metrics_queue_update stores the figures of n channels (ok) or records that they could not be
 * read (!ok: the last ones stay, and get older); either wakes the waiting scrape.
 */
void metrics_queue_update(const struct QueueStat *rows, int n, bool ok);

/*
 * metrics_scrape_begin asks the main loop for fresh queue figures and waits for them, at most
 * wait_ms, unless the last ones are younger than a second (so that no number of scrapers costs the
 * database more than one read a second) or the database is not connected. The HTTP thread calls it
 * before metrics_render.
 */
void metrics_scrape_begin(long wait_ms);

/* metrics_render writes every metric in the Prometheus text format 0.0.4. */
void metrics_render(struct Buf *out);

/* metrics_escape_label writes s as a label value: \ " and newline escaped (for tests too). */
void metrics_escape_label(struct Buf *out, const char *s);

#endif
