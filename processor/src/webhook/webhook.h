/*
 * webhook.h - the webhook kind of event: its payload, signed and sent to its channel's endpoint
 * (docs/webhooks.md). The steps of its entry in the table of kinds (dispatch/kind.c); the held
 * transaction sends the statements.
 */
#ifndef PGRELAY_WEBHOOK_H
#define PGRELAY_WEBHOOK_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "attempt.h"

/* webhook_open makes the state of one webhook event in the attempt a; NULL when out of memory. */
void *webhook_open(struct Attempt *a);

/* webhook_close frees it, the signature wiped. */
void webhook_close(void *st);

/*
 * webhook_read reads the claim: payload, attempt, webhook-id, the endpoint document, replayed, the
 * publication's id and event type.
 */
enum HeldClaim webhook_read(void *st, PGresult *res, bool trusted, const char *fetch_error);

/*
 * webhook_deliver signs and sends the payload to the channel's endpoint (over the kept-alive HTTP
 * client of a->tc, with a->ws's secrets directory and --max-delivery-time) and classifies the
 * answer: a 410 is the verdict's gone_status, which the finish marks. It fills a->rep (HTTP
 * status, a 410's endpoint, a configuration error) and logs nothing.
 */
void webhook_deliver(void *st, struct Verdict *v);

#endif
