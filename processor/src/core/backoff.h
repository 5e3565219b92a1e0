/*
 * backoff.h - capped exponential backoff with jitter, for reconnecting to the database.
 */
#ifndef PGRELAY_BACKOFF_H
#define PGRELAY_BACKOFF_H

/* backoff_next: 0 → min_ms; otherwise twice prev_ms, never above max_ms (nor below min_ms). */
long backoff_next(long prev_ms, long min_ms, long max_ms);

/* backoff_jitter spreads a delay uniformly over [d/2, d] ("equal jitter") for r in [0, 1). */
long backoff_jitter(long d_ms, double r);

/* backoff_random: a uniform value in [0, 1), safe to call from any thread. */
double backoff_random(void);

#endif
