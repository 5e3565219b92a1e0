/*
 * notify.c - delivery of notify events. (Placeholder until the SMTP transport is wired in.)
 */
#include "notify.h"

#include "log.h"
#include "worker.h"

enum Outcome
notify_run(struct Worker *w, struct Job *j)
{
	log_warn("attempt_failed", "conn=%s id=%lld channel=%s outcome=skipped error=\"notify delivery is not available\"",
			 w->pg.label, j->id, j->channel);
	return OC_SKIPPED;
}

void
notify_ctx_free(struct NotifyCtx *ctx)
{
	(void) ctx;
}
