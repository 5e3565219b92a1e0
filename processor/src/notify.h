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

#endif
