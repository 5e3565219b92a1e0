/*
 * test_ratelimit.c - the per-profile sliding window: N sends in any 60 s, then the exact wait.
 */
#include <pthread.h>

#include "ratelimit.h"
#include "unit.h"

static void
test_no_limit(void)
{
	int i;

	for (i = 0; i < 1000; i++)
		CHECK(ratelimit_acquire("free", 0, 0) == 0);
	ratelimit_free();
}

static void
test_window(void)
{
	/* 3 per minute: three at t=0..2 s pass, the fourth waits for the first to leave the window. */
	CHECK(ratelimit_acquire("p", 3, 0) == 0);
	CHECK(ratelimit_acquire("p", 3, 1000) == 0);
	CHECK(ratelimit_acquire("p", 3, 2000) == 0);
	CHECK(ratelimit_acquire("p", 3, 2500) == 57500);
	CHECK(ratelimit_acquire("p", 3, 59999) == 1);
	CHECK(ratelimit_acquire("p", 3, 60000) == 0);   /* takes the slot of t=0 */
	CHECK(ratelimit_acquire("p", 3, 60001) == 999); /* next frees at t=61 s */
	/* another profile has its own window */
	CHECK(ratelimit_acquire("q", 1, 60001) == 0);
	CHECK(ratelimit_acquire("q", 1, 60002) == 59999);
	/* a new rate starts afresh */
	CHECK(ratelimit_acquire("q", 2, 60003) == 0);
	CHECK(ratelimit_acquire("q", 2, 60004) == 0);
	CHECK(ratelimit_acquire("q", 2, 60005) > 0);
	ratelimit_free();
}

static int granted;
static pthread_mutex_t granted_mu = PTHREAD_MUTEX_INITIALIZER;

static void *
hammer(void *arg)
{
	int i;

	(void) arg;
	for (i = 0; i < 1000; i++) {
		if (ratelimit_acquire("shared", 30, 5000) == 0) {
			pthread_mutex_lock(&granted_mu);
			granted++;
			pthread_mutex_unlock(&granted_mu);
		}
	}
	return NULL;
}

static void
test_threads_share_one_limit(void)
{
	pthread_t t[8];
	int i;

	for (i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	for (i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	CHECK(granted == 30);
	ratelimit_free();
}

int
main(void)
{
	RUN(test_no_limit);
	RUN(test_window);
	RUN(test_threads_share_one_limit);
	return UNIT_DONE();
}
