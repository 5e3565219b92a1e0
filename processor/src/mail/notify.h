/*
 * notify.h - the notify kind of event: its message, read from its claim, delivered through the
 * transport its profile names, and recorded in the notifier (docs/interface.md). The steps of its
 * entry in the table of kinds (dispatch/kind.c); the held transaction sends the statements.
 */
#ifndef PGRELAY_NOTIFY_H
#define PGRELAY_NOTIFY_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "attempt.h"

/* notify_open makes the state of one notify event in the attempt a; NULL when out of memory. */
void *notify_open(struct Attempt *a);

/* notify_close frees it. */
void notify_close(void *st);

/*
 * notify_read reads the claim (payload, attempt, the fetch() document, replayed): trusted, the
 * notifier's schema may be used (else the claim did not fetch); fetch_error, why the fetch raised.
 */
enum HeldClaim notify_read(void *st, PGresult *res, bool trusted, const char *fetch_error);

/*
 * notify_deliver skips, defers or delivers the claimed event through its profile's transport (the
 * sessions of a->tc, with a->ws's settings) and says what came of it; it fills a->rep (profile,
 * the wait of a deferral, a configuration error), and logs nothing.
 */
void notify_deliver(void *st, struct Verdict *v);

/* notify_record: set_status(), the attempt recorded in the notifier, when it is to be. */
bool notify_record(void *st, enum Outcome oc, const char *next_attempt_at, struct RecordStmt *s);

#endif
