/*
 * malloc_tune.h - glibc malloc set for a small, long-running, threaded process (malloc_tune.c).
 */
#ifndef PGRELAY_MALLOC_TUNE_H
#define PGRELAY_MALLOC_TUNE_H

/* the settings malloc_tune makes, as bits of malloc_tune_settings' answer */
enum {
	MT_ARENA_MAX = 1,      /* M_ARENA_MAX */
	MT_MMAP_THRESHOLD = 2, /* M_MMAP_THRESHOLD */
	MT_TRIM_THRESHOLD = 4  /* M_TRIM_THRESHOLD */
};

/*
 * malloc_tune_settings: which settings are ours to make, given the environment's values of
 * MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ and GLIBC_TUNABLES (NULL: not
 * set). One the operator set is left as they set it; a glibc.malloc tunable leaves all three.
 */
unsigned malloc_tune_settings(const char *arena_max, const char *mmap_threshold, const char *trim_threshold,
							  const char *tunables);

/* malloc_tune makes the settings of malloc_tune_settings (glibc only; elsewhere nothing). Call it
 * first in main, before any thread starts. */
void malloc_tune(void);

#endif
