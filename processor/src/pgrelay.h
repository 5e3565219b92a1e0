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

/*
 * The version of the contract between the Processor and the extensions (docs/interface.md):
 * pgrelay.interface_version() and the "interface_version" of every fetch() document.
 */
#define PGRELAY_INTERFACE_VERSION 2

extern struct Config cf;
extern volatile sig_atomic_t shutdown_requested;
extern volatile sig_atomic_t reload_requested;

/* What became of one event handed to a worker. */
enum Outcome {
	OC_SKIPPED,   /* the claim failed: gone, locked, not due, channel busy or inactive */
	OC_OK,        /* done */
	OC_PARTIAL,   /* done; some recipients failed for good */
	OC_CANCELLED, /* done without delivery: the work was withdrawn */
	OC_RETRY,     /* failed, retried later */
	OC_TIMEOUT,   /* timed out, retried later */
	OC_FAILED,    /* failed for good */
	OC_DEFERRED,  /* moved to a later time without an attempt (rate limit) */
	OC_LOST       /* not finished: the statement or the connection failed; offered again later */
};

const char *outcome_name(enum Outcome o);
/* outcome_parse maps the outcome text of process_one()/_write_log(); unknown text is OC_LOST. */
enum Outcome outcome_parse(const char *s);

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

long long now_us(void);

#endif
