/*
 * webhook.h - one webhook event in its held transaction: the payload sent to its channel's
 * endpoint (docs/webhooks.md).
 */
#ifndef PGRELAY_WEBHOOK_H
#define PGRELAY_WEBHOOK_H

#include "held.h"

/*
 * webhook_run is the webhook kind of held_run (HeldRun): in the transaction held_run opened, it
 * claims the event with its channel's endpoint, signs and sends the payload (over the kept-alive
 * HTTP client of h->tc, with h->ws's secrets directory and --max-delivery-time) and finishes it,
 * the endpoint marked gone after a 410. It returns the event's outcome and fills h->rep (error,
 * HTTP status, a 410's endpoint); it logs nothing itself.
 */
enum Outcome webhook_run(struct Held *h);

#endif
