/*
 * notify.h - one notify event in its held transaction: the message delivered (docs/interface.md).
 */
#ifndef PGRELAY_NOTIFY_H
#define PGRELAY_NOTIFY_H

#include "held.h"

/*
 * notify_run is the notify kind of held_run (HeldRun): in the transaction held_run opened, it
 * claims the event with its message, skips, defers or delivers it through the transport its
 * profile names (the sessions of h->tc, with h->ws's settings), and finishes it, recorded in the
 * notifier too. It returns the event's outcome and fills h->rep; it logs nothing itself.
 */
enum Outcome notify_run(struct Held *h);

#endif
