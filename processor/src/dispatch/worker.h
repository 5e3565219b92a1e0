/*
 * worker.h - one worker thread: its own database connection, and the loop that runs events.
 */
#ifndef PGRELAY_WORKER_H
#define PGRELAY_WORKER_H

#include <pthread.h>
#include <stdatomic.h>

#include "pgconn.h"
#include "pool.h"
#include "transport.h"

enum WorkerState {
	W_STARTING, /* thread created, first connection not made yet */
	W_DOWN,     /* no connection; waiting to reconnect */
	W_IDLE,     /* connected, waiting for an event */
	W_SQL,      /* running pgrelay.process_one() or process_batch() */
	W_NOTIFY,   /* inside the held transaction of a notify event */
	W_WEBHOOK,  /* inside the held transaction of a webhook event */
	W_STOPPED   /* the thread has finished */
};

struct Worker {
	int no; /* 1..workers */
	pthread_t thread;
	bool started; /* the thread exists (join it) */
	struct PgConn pg;
	atomic_int state;                  /* enum WorkerState, read by the main thread */
	struct WorkerSettings settings;    /* copy taken with the current job */
	struct Job *jobs;                  /* the events being run, NULL when none (guarded by the pool lock) */
	struct TransportCache *transports; /* transport sessions; made by the first notify event */
	unsigned long leader_session;      /* pg.sessions when pg_relay.is_leader was last published */
	int leader_published;              /* the value published then: 1 on, 0 off */
};

void *worker_main(void *arg);

#endif
