/*
 * pool.h - the worker threads and the hand-over of events between the main thread and them: a
 * queue of submitted jobs, a list of finished ones, and an eventfd that wakes the main thread when
 * a job finishes, a worker becomes idle or a signal arrives. The pool owns a slot per worker (its
 * thread, state, jobs and settings) and runs the worker of each (worker.h) on its thread.
 */
#ifndef PGRELAY_POOL_H
#define PGRELAY_POOL_H

#include <stdbool.h>

#include "compiler.h"
#include "job.h"
#include "pgrelay.h"

bool pool_start(int nworkers, const char *conninfo, const char *mode,
				const struct WorkerSettings *ws) MUSTCHECK;
void pool_update_settings(const struct WorkerSettings *ws);

/*
 * pool_submit hands a list of jobs to the workers (the pool owns them until collected), minus
 * those a worker is running already. Returns how many were queued.
 */
int pool_submit(struct Job *jobs);
/*
 * pool_drop_queued drops the jobs submitted but not taken by a worker yet (they hold no lock in the
 * database, so nothing is lost): the gate closed (pause, standby, lost contact) and they must not
 * start. Returns how many.
 */
int pool_drop_queued(void);
/*
 * pool_set_leader records this node's leadership (leader mode), which each worker publishes on its
 * session before its next event. Losing it drops the queued jobs, fetched while leading. Returns
 * how many were dropped.
 */
int pool_set_leader(bool leader);
/*
 * pool_leader: 1 leading, 0 not leading, -1 not in leader mode (nothing to publish), for a worker
 * whose session opened at since_us (now_us): it leads only by a decision taken after that, so that
 * a worker that reconnected to a restarted server never claims as leader on the strength of a
 * decision made before the restart.
 */
int pool_leader(long long since_us);
/* pool_collect returns the finished jobs, oldest first; the caller frees them (job_free). */
struct Job *pool_collect(void);

/* A snapshot of the pool, taken under its lock. */
struct PoolCounts {
	int queued;    /* submitted, not yet taken */
	int in_flight; /* taken, not yet finished */
	int idle;      /* connected workers waiting for a job */
	int done;      /* finished, not yet collected */
};

void pool_counts(struct PoolCounts *out);

/*
 * pool_workers_missing: how many workers are without a session, their connection attempts failing
 * (the server out of connection slots, say), once the first of them has been so for for_ms: 0
 * before. A session lost and opened again at once does not count. The others run the events
 * meanwhile.
 */
int pool_workers_missing(long for_ms);

/* pool_wait sleeps until something happens in the pool, a signal arrives, or timeout_ms. */
void pool_wait(long timeout_ms);
/* pool_wake wakes pool_wait; async-signal-safe. */
void pool_wake(void);

/*
 * pool_stop drops the jobs not yet taken, lets in-flight ones finish for up to timeout_ms, then
 * cancels the statements still running and waits a short grace period. Returns the number of
 * events still unfinished (their transactions roll back when the process exits).
 */
int pool_stop(long timeout_ms);
void pool_free(void);

#endif
