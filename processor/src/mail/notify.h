/*
 * notify.h - the held transaction that delivers one notify event (docs/interface.md).
 */
#ifndef PGRELAY_NOTIFY_H
#define PGRELAY_NOTIFY_H

#include "pgconn.h"
#include "pgrelay.h"
#include "transport.h"

/*
 * notify_run claims, fetches, delivers, records and finishes event j in one transaction on pg,
 * with ws's delivery settings and the sessions of tc (NULL: none could be made). It returns the
 * event's outcome and fills rep with what the caller logs; it logs nothing itself. On OC_LOST a
 * statement failed: pg holds its error, rep->step names it, and the transaction is left as the
 * failure left it, for the caller to report and then roll back (pgconn_rollback) or, when the
 * connection itself is gone, replace (pgconn_lost).
 */
enum Outcome notify_run(struct PgConn *pg, const struct WorkerSettings *ws, const struct Job *j,
						struct TransportCache *tc, struct EventReport *rep);

#endif
