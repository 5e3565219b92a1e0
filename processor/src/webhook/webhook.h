/*
 * webhook.h - the held transaction that sends one webhook event to its channel's endpoint
 * (docs/webhooks.md).
 */
#ifndef PGRELAY_WEBHOOK_H
#define PGRELAY_WEBHOOK_H

#include "pgconn.h"
#include "pgrelay.h"
#include "transport.h"

/*
 * webhook_run claims event j with its channel's endpoint, signs and sends the payload (over the
 * kept-alive HTTP client of tc; NULL: none could be made), records the attempt and finishes the
 * event, in one transaction on pg, with ws's settings (secrets directory, --max-delivery-time).
 * It returns the event's outcome and fills rep (error, HTTP status, a 410's endpoint) for the
 * caller to log; it logs nothing itself. On OC_LOST a statement failed: pg holds its error,
 * rep->step names it, and the caller reports it and rolls back, as for notify_run.
 */
enum Outcome webhook_run(struct PgConn *pg, const struct WorkerSettings *ws, const struct Job *j,
						 struct TransportCache *tc, struct EventReport *rep);

#endif
