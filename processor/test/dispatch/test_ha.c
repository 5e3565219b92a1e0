/*
 * test_ha.c - the Processor's side of multi-node and leader mode that needs no server: reading
 * the adoptions of a tick's answer, and the gate dropping the ids fetched but not started.
 */
#include <stdlib.h>

#include "clock.h"
#include "ha.h"
#include "pool.h"
#include "unit.h"

static void
test_parse_adopted(void)
{
	static const struct {
		const char *text;
		int n;
		int node0;
		long long rows0;
		int node1;
		long long rows1;
	} cases[] = {
		{"", 0, 0, 0, 0, 0},          {"2:10", 1, 2, 10, 0, 0},
		{"2:10,3:0", 2, 2, 10, 3, 0}, {"1023:9999999999", 1, 1023, 9999999999LL, 0, 0},
		{"2:10,", 1, 2, 10, 0, 0},    {"2", 0, 0, 0, 0, 0},
		{"x:1", 0, 0, 0, 0, 0},       {"2:1x,3:4", 0, 0, 0, 0, 0},
		{"2:1,bad", 1, 2, 1, 0, 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct HaAdoption a[4] = {{0, 0}};
		int n = ha_parse_adopted(cases[i].text, a, 4);

		CHECK(n == cases[i].n);
		CHECK(a[0].node == cases[i].node0 && a[0].rows == cases[i].rows0);
		CHECK(a[1].node == cases[i].node1 && a[1].rows == cases[i].rows1);
	}
	{
		struct HaAdoption a[1];

		CHECK(ha_parse_adopted("1:1,2:2", a, 1) == 1); /* never past max */
	}
}

static struct Job *
jobs(int n)
{
	struct Job *head = NULL;

	while (n-- > 0) {
		struct Job *j = job_new();

		j->id = 100 + n;
		j->next = head;
		head = j;
	}
	return head;
}

/* The pool without its threads: submitted jobs wait in its queue, where the gate drops them. */
static void
test_gate_drops_queued_jobs(void)
{
	struct PoolCounts c;

	long long before;

	CHECK(pool_leader(0) == -1); /* not in leader mode until told */
	CHECK(pool_submit(jobs(3)) == 3);
	before = now_us();
	CHECK(pool_set_leader(true) == 0); /* acquiring drops nothing */
	CHECK(pool_leader(before) == 1);
	/* a worker whose session opened after the decision does not lead until the next one */
	CHECK(pool_leader(now_us() + 1) == 0);
	CHECK(pool_set_leader(true) == 0);
	CHECK(pool_leader(before) == 1);
	CHECK(pool_set_leader(false) == 3); /* yielding drops what was fetched as leader */
	CHECK(pool_leader(before) == 0);
	pool_counts(&c);
	CHECK(c.queued == 0);
	CHECK(pool_set_leader(false) == 0);
	CHECK(pool_submit(jobs(2)) == 2);
	CHECK(pool_drop_queued() == 2); /* pause, standby, lost contact */
	CHECK(pool_drop_queued() == 0);
	pool_counts(&c);
	CHECK(c.queued == 0);
}

int
main(void)
{
	RUN(test_parse_adopted);
	RUN(test_gate_drops_queued_jobs);
	return UNIT_DONE();
}
