/*
 * pgrelay.h - the Processor's shared settings type, and where its process-wide state lives.
 *
 * Process-wide state is of two kinds. Declared here, for every module: the configuration (cf,
 * written by the main thread only), the signal flags. Kept inside one module each, static, behind
 * that module's functions and, where threads share it, its own lock or atomics:
 *   main.c       the main loop's state, the control connection, the argv a reload parses again
 *   pool.c       the worker pool: its threads, queues and counts
 *   worker.c     the action types already reported as unknown (warned about once)
 *   pgconn.c     what the hint of a server out of connection slots says the Processor needs (set
 *                once, before any connection)
 *   log.c        the level and format of the log, set at start and on reload (log_threshold is
 *                extern: the log macros read it before they build a line)
 *   metrics.c    the counters, histograms and queue figures; metrics_http.c its HTTP daemon
 *   oauth.c      the OAuth2 token cache all workers share
 *   ratelimit.c  the per-profile send windows all workers share
 *   transport.c  libcurl's one-time set-up and the number of live session caches
 *   service.c    the watchdog's timing and the last status line sent to systemd
 * Everything else is passed as an argument.
 */
#ifndef PGRELAY_PGRELAY_H
#define PGRELAY_PGRELAY_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>

#include "config.h"
#include "secrets.h"

/*
 * The version of the contract between the Processor and the extensions (docs/interface.md):
 * pgrelay.interface_version() and the "interface_version" of every fetch() document.
 */
#define PGRELAY_INTERFACE_VERSION 4

extern struct Config cf;
extern volatile sig_atomic_t shutdown_requested;
extern volatile sig_atomic_t reload_requested;

/* What workers need from the configuration; copied with each job, so reloads are race-free. */
struct WorkerSettings {
	char secrets_dir[PATH_MAX];       /* "" when none */
	char secret_env[SECRETS_ENV_MAX]; /* --secret-env: which variables each owner may name; "" when none */
	long max_delivery_time_ms;
	long reconnect_max_ms; /* cap of the reconnect backoff */
	int events_per_commit; /* most sql events one transaction finishes (batch.h) */
	long generation;       /* bumped on every reload: transports drop cached connections */
};

#endif
