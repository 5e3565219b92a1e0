/*
 * test_backoff.c - reconnect delays: the doubling, the cap and the jitter's range.
 */
#include "backoff.h"
#include "unit.h"

static void
test_backoff(void)
{
	long d = 0;
	int i;
	static const long want[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};

	for (i = 0; i < 8; i++) {
		d = backoff_next(d, 100, 5000);
		CHECK(d == want[i]);
	}
	CHECK(backoff_jitter(1000, 0.0) == 500);
	CHECK(backoff_jitter(1000, 0.999999) == 999);
	CHECK(backoff_jitter(1000, 7) <= 1000);
	for (i = 0; i < 1000; i++) {
		double r = backoff_random();

		CHECK(r >= 0 && r < 1);
	}
	CHECK(backoff_next(2000000000L, 100, 30000) == 30000);
}

int
main(void)
{
	RUN(test_backoff);
	return UNIT_DONE();
}
