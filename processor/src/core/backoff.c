/*
 * backoff.c - reconnect delays: grow fast, stay bounded, never synchronise many clients.
 */
#include "backoff.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

long
backoff_next(long prev_ms, long min_ms, long max_ms)
{
	long d;

	if (prev_ms <= 0)
		d = min_ms;
	else if (prev_ms > max_ms / 2)
		d = max_ms;
	else
		d = prev_ms * 2;
	if (d < min_ms)
		d = min_ms;
	if (d > max_ms)
		d = max_ms;
	return d;
}

long
backoff_jitter(long d_ms, double r)
{
	if (r < 0)
		r = 0;
	if (r >= 1)
		r = 0.999999;
	return d_ms / 2 + (long) ((double) (d_ms - d_ms / 2) * r);
}

double
backoff_random(void)
{
	/* xorshift64*, seeded per thread from the clock and the seed's own address. */
	static _Thread_local uint64_t s;

	if (s == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = ((uint64_t) ts.tv_nsec << 20) ^ (uint64_t) ts.tv_sec ^ (uint64_t) (uintptr_t) &s;
		if (s == 0)
			s = 0x9e3779b97f4a7c15ULL;
	}
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return (double) ((s * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}
