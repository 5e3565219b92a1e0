/*
 * notify.h - the held transaction that delivers one notify event (docs/interface.md).
 */
#ifndef PGRELAY_NOTIFY_H
#define PGRELAY_NOTIFY_H

#include "pgrelay.h"

struct Worker;
struct NotifyCtx;

/* notify_run claims, fetches, delivers, records and finishes one notify event in one transaction. */
enum Outcome notify_run(struct Worker *w, struct Job *j);
void notify_ctx_free(struct NotifyCtx *ctx);

/*
 * libcurl (and with it the TLS library's full set-up) is initialised the first time a worker
 * needs a transport, not at startup: a Processor that only runs SQL events stays ~2 MB smaller
 * (docs/benchmarks.md). notify_global_cleanup undoes it at exit, if it happened.
 */
bool notify_global_init(void);
void notify_global_cleanup(void);

#endif
