/*
 * batch.h - several sql events (or events of one channel of a held kind that batches) finished in
 * one transaction: which queued events a worker takes together, the statement timeout that keeps
 * each channel's timeout inside the batch, and the ids as one array parameter. Pure functions
 * over the pool's job list (pool.c calls them under its lock; worker.c runs the batch).
 */
#ifndef PGRELAY_BATCH_H
#define PGRELAY_BATCH_H

#include <stdbool.h>

#include "buf.h"
#include "compiler.h"
#include "job.h"

/*
 * The window of a batch: process_batch() starts an event only while the statement has that
 * event's whole channel timeout left, so a batch keeps starting events for at most this long
 * (less for a channel timeout shorter than a second), and a handler that hangs is stopped
 * between its timeout and its timeout plus the window.
 */
#define BATCH_WINDOW_MS 1000L

/*
 * batch_limit is how many events one worker takes at once: at most max (--events-per-commit),
 * and no more than its share of the queued events among the idle workers (itself included), so
 * that a small burst is spread over the workers rather than run by one.
 */
int batch_limit(int max, int queued, int idle);

/*
 * A worker's cap on its batches after a lost connection, 0 for none (then --events-per-commit,
 * max, applies). A batch lost with its connection rolled back the work of all its events, and
 * while sessions are being dropped (a flaky network, a proxy, an admin ending sessions) the next
 * batch as large is likely to go the same way: so each run lost with its connection halves the
 * cap, down to one event, and each run of the cap's size that commits raises it by one, until it
 * reaches max and is gone. While connections hold it stays 0, and nothing changes.
 *
 * batch_cap_max: the most events a worker with that cap takes (the max of batch_limit).
 * batch_cap_lost: the cap after a run whose events were lost with the connection.
 * batch_cap_done: the cap after a run of n events that kept its connection.
 */
int batch_cap_max(int cap, int max);
int batch_cap_lost(int cap, int max);
int batch_cap_done(int cap, int max, int n);

/*
 * batch_take unlinks the jobs one worker takes from the queue *head..*tail: the head, and when
 * the head may batch, up to limit - 1 later jobs that may batch with it (sql events of channels
 * with the same timeout: a batch has one statement timeout; an event of a held kind that batches,
 * kind.h: events of its own channel). Jobs it passes over stay queued in their order. Returns the taken jobs linked by next, in queue order, their number in *n.
 */
struct Job *batch_take(struct Job **head, struct Job **tail, int limit, int *n);

/* batch_timeout_ms: the statement_timeout of a batch of events whose channel timeout is timeout_ms. */
long batch_timeout_ms(long timeout_ms);

/* batch_ids appends the jobs' ids as a bigint[] literal, "{1,2,3}". False when out of memory. */
bool batch_ids(const struct Job *jobs, struct Buf *out) MUSTCHECK;

#endif
