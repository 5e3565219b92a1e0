/*
 * pgrelay.h - the Processor's shared types and its few mutable globals.
 *
 * Globals are limited to the configuration (owned by the main thread), the signal flags and the
 * worker pool (pool.c). Everything else is passed as an argument.
 */
#ifndef PGRELAY_PGRELAY_H
#define PGRELAY_PGRELAY_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>

#include "config.h"
#include "outcome.h"
#include "secrets.h"

/*
 * The version of the contract between the Processor and the extensions (docs/interface.md):
 * pgrelay.interface_version() and the "interface_version" of every fetch() document.
 */
#define PGRELAY_INTERFACE_VERSION 3

extern struct Config cf;
extern volatile sig_atomic_t shutdown_requested;
extern volatile sig_atomic_t reload_requested;

/* One event from queue_pending_ids(), on its way to a worker and back. */
struct Job {
	long long id;
	char action_type[32];
	char channel[132];
	int timeout_ms; /* the channel's timeout */
	int attempt;
	bool batch;            /* a sql event of a channel that batches (batch.h) */
	enum Outcome outcome;  /* set by the worker */
	long long duration_us; /* set by the worker */
	struct Job *next;
};

/* What workers need from the configuration; copied with each job, so reloads are race-free. */
struct WorkerSettings {
	char secrets_dir[PATH_MAX];       /* "" when none */
	char secret_env[SECRETS_ENV_MAX]; /* --secret-env: which variables each owner may name; "" when none */
	long max_delivery_time_ms;
	long reconnect_max_ms; /* cap of the reconnect backoff */
	int events_per_commit; /* most sql events one transaction finishes (batch.h) */
	long generation;       /* bumped on every reload: transports drop cached connections */
};

/*
 * What running one event came to besides its outcome, for the worker to log: the code that runs
 * an event (process_one, the held transaction) never logs.
 */
struct EventReport {
	char notification[24]; /* a notify event's notification id (its payload), once claimed */
	int attempt;           /* the attempt that was made */
	char error[1024];      /* OC_RETRY, OC_TIMEOUT, OC_FAILED: why the attempt failed */
	const char *step;      /* OC_LOST: the statement that failed (its error is the connection's) */
	char profile[128];     /* OC_DEFERRED: the profile whose rate limit was reached */
	long wait_ms;          /* OC_DEFERRED: until the limit lets the next message go */
	long http_status;      /* a webhook's answer, 0 when none */
	bool gone;             /* a webhook's endpoint answered 410: its channel was paused */
	char endpoint[256];    /* a webhook's scheme://host[:port], for the webhook_gone line */
};

#endif
