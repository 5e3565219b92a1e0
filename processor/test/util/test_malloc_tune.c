/*
 * test_malloc_tune.c - which malloc settings the Processor makes, given the environment.
 */
#include "malloc_tune.h"
#include "unit.h"

static void
test_all_when_nothing_is_set(void)
{
	CHECK(malloc_tune_settings(NULL, NULL, NULL, NULL) ==
		  (MT_ARENA_MAX | MT_MMAP_THRESHOLD | MT_TRIM_THRESHOLD));
	CHECK(malloc_tune_settings(NULL, NULL, NULL, "glibc.pthread.rseq=0") ==
		  (MT_ARENA_MAX | MT_MMAP_THRESHOLD | MT_TRIM_THRESHOLD));
}

static void
test_the_operators_settings_are_kept(void)
{
	CHECK(malloc_tune_settings("4", NULL, NULL, NULL) == (MT_MMAP_THRESHOLD | MT_TRIM_THRESHOLD));
	CHECK(malloc_tune_settings(NULL, "131072", NULL, NULL) == (MT_ARENA_MAX | MT_TRIM_THRESHOLD));
	CHECK(malloc_tune_settings(NULL, NULL, "0", NULL) == (MT_ARENA_MAX | MT_MMAP_THRESHOLD));
	CHECK(malloc_tune_settings(NULL, NULL, NULL, "glibc.malloc.arena_max=8") == 0);
}

int
main(void)
{
	RUN(test_all_when_nothing_is_set);
	RUN(test_the_operators_settings_are_kept);
	return UNIT_DONE();
}
