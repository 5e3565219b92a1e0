/*
 * ratelimit.h - per-profile send limits shared by every worker of one Processor.
 *
 * An exact sliding window: a profile with rate_limit_per_minute = N sends at most N messages in
 * any 60 seconds (Microsoft 365 counts this way). Events over the limit are deferred, not failed.
 */
#ifndef PGRELAY_RATELIMIT_H
#define PGRELAY_RATELIMIT_H

/*
 * ratelimit_acquire asks for one send of profile at now_ms (any monotonic clock in ms). Returns 0
 * when the send may go ahead (its slot is taken), else how many ms until a slot frees up.
 * per_minute <= 0 means no limit. Thread-safe.
 */
long ratelimit_acquire(const char *profile, int per_minute, long long now_ms);

/* ratelimit_free forgets every profile (exit, tests). */
void ratelimit_free(void);

#endif
