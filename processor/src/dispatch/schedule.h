/*
 * schedule.h - the recurring events (pgrelay.schedule()) fired on the control connection: when
 * a probe says a schedule is due, pgrelay._schedule_fire() queues each due occurrence once, on
 * the one node that fires schedules, and the Processor logs what it did.
 */
#ifndef PGRELAY_SCHEDULE_H
#define PGRELAY_SCHEDULE_H

#include <stdbool.h>

#include "compiler.h"
#include "tick.h"

/*
 * schedule_fire runs pgrelay._schedule_fire() once and logs one line per occurrence fired
 * (schedule_fired; a warning when the channel refused it). *queued: how many events it queued.
 * Returns false when the statement failed (t->pg says why; the schedules stay due and the next
 * probe says so again).
 */
bool schedule_fire(struct Ticker *t, int *queued) MUSTCHECK;

#endif
