/*
 * malloc_tune.c - glibc malloc set for a small, long-running, threaded process.
 *
 * Measured with one channel of each kind and 8 workers (docs/design/memory.md), glibc's defaults
 * cost about 1 MB of peak RSS here:
 * - It gives every thread that allocates an arena of its own, up to 8 per core: the 8 workers and
 *   librdkafka's threads each keep a heap whose freed memory the others cannot reuse. Two arenas
 *   are enough: the workers spend their time waiting for the database and the destinations, so
 *   they seldom meet on an arena's lock.
 * - Its mmap threshold starts at 128 kB and rises to the size of any mmap'd block freed, so
 *   that after the first large buffers (libpq's grown to a batch's result, rabbitmq-c's 128 kB
 *   socket buffer, libcurl's 64 kB upload buffer) their like come from the arenas, where the
 *   pages stay resident after they are freed. A fixed 64 kB keeps such buffers mmap'd: only the
 *   pages written are resident, and free() gives them back.
 * - The trim threshold follows the mmap threshold up (to twice it); fixed at 64 kB, free memory
 *   at the top of a heap goes back to the system sooner.
 */
#include "malloc_tune.h"

#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#define ARENA_MAX 2
#define THRESHOLD (64 * 1024)

unsigned
malloc_tune_settings(const char *arena_max, const char *mmap_threshold, const char *trim_threshold,
					 const char *tunables)
{
	unsigned s = 0;

	if (tunables != NULL && strstr(tunables, "glibc.malloc.") != NULL)
		return 0;
	if (arena_max == NULL)
		s |= MT_ARENA_MAX;
	if (mmap_threshold == NULL)
		s |= MT_MMAP_THRESHOLD;
	if (trim_threshold == NULL)
		s |= MT_TRIM_THRESHOLD;
	return s;
}

void
malloc_tune(void)
{
#ifdef __GLIBC__
	unsigned s = malloc_tune_settings(getenv("MALLOC_ARENA_MAX"), getenv("MALLOC_MMAP_THRESHOLD_"),
									  getenv("MALLOC_TRIM_THRESHOLD_"), getenv("GLIBC_TUNABLES"));

	/* mallopt's failure leaves glibc's default, which works: nothing to report */
	if (s & MT_ARENA_MAX)
		(void) mallopt(M_ARENA_MAX, ARENA_MAX);
	if (s & MT_MMAP_THRESHOLD)
		(void) mallopt(M_MMAP_THRESHOLD, THRESHOLD);
	if (s & MT_TRIM_THRESHOLD)
		(void) mallopt(M_TRIM_THRESHOLD, THRESHOLD);
#endif
}
