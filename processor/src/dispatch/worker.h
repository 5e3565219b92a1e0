/*
 * worker.h - one worker's run context: its database connection, its delivery sessions and the
 * leadership it published, and the running of the events the pool hands it. The pool (pool.c)
 * owns the thread and its slot (state, jobs, settings) and calls these; a worker knows nothing of
 * the pool but the link it is given.
 */
#ifndef PGRELAY_WORKER_H
#define PGRELAY_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>

#include "job.h"
#include "pgrelay.h"

enum WorkerState {
	W_STARTING,    /* thread created, first connection not made yet */
	W_DOWN,        /* no connection; waiting to reconnect */
	W_IDLE,        /* connected, waiting for an event */
	W_SQL,         /* running pgrelay.process_one() or process_batch() */
	W_NOTIFY,      /* inside the held transaction of a notify event */
	W_WEBHOOK,     /* inside the held transaction of a webhook event */
	W_DESTINATION, /* inside the held transaction of a destination's event (redis) */
	W_STOPPED      /* the thread has finished */
};

/* What the pool lends a worker for its life. */
struct WorkerLink {
	atomic_int *state; /* enum WorkerState in the pool's slot: the worker writes, the main thread reads */
	bool (*stopping)(void);            /* is the pool stopping (a cancel is then the Processor's own)? */
	int (*leader)(long long since_us); /* this node's leadership, read before each event (pool_leader) */
};

struct Worker;

/*
 * worker_new prepares worker no (1..workers, "worker-2" in log lines) for connections to conninfo
 * (NULL: the PG* environment; it must outlive the worker) in mode. NULL when out of memory.
 */
struct Worker *worker_new(int no, const char *conninfo, const char *mode, struct WorkerLink link);
/* worker_free frees a worker whose thread has ended (worker_close); NULL is a no-op. */
void worker_free(struct Worker *w);

/*
 * worker_session makes sure the connection is up: the one it has, or a new one when an attempt is
 * due (pgconn_session, with reconnect_max_ms). False with *wait_ms until the next attempt.
 */
bool worker_session(struct Worker *w, long reconnect_max_ms, long *wait_ms);
/*
 * worker_batch_max: the most events the worker takes at once, events_per_commit unless a batch
 * lost with its connection lowered its cap (batch.h). Only the worker's own thread may ask.
 */
int worker_batch_max(const struct Worker *w, int events_per_commit);
/* worker_is_up: has the worker a session (no round trip)? */
bool worker_is_up(const struct Worker *w);

/*
 * worker_run runs jobs, one event or a batch of sql events (batch.h) linked by next, with ws (the
 * settings taken with them), and sets each job's outcome and duration. It logs what became of
 * them; jobs stay the caller's.
 */
void worker_run(struct Worker *w, struct Job *jobs, const struct WorkerSettings *ws);

/* worker_cancel asks the server to cancel the statement the worker runs; safe from any thread. */
void worker_cancel(struct Worker *w);

/* worker_close closes the worker's sessions at the end of its thread. */
void worker_close(struct Worker *w);

#endif
