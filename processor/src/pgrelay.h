/*
 * pgrelay.h - the Processor's shared types and its few mutable globals.
 *
 * Globals are limited to the configuration (owned by the main thread), the signal flags and the
 * worker pool (pool.c). Everything else is passed as an argument.
 */
#ifndef PGRELAY_PGRELAY_H
#define PGRELAY_PGRELAY_H

#include <signal.h>
#include <stdbool.h>

#include "config.h"
#include "outcome.h"

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
	enum Outcome outcome;  /* set by the worker */
	long long duration_us; /* set by the worker */
	struct Job *next;
};

#endif
