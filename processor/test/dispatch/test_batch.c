/*
 * test_batch.c - which queued events one worker takes together, the statement timeout of a batch
 * and its ids parameter (batch.c).
 */
#include <stdlib.h>

#include "batch.h"
#include "unit.h"

/* queue builds a job list from a spec: one letter per job, s = sql that batches (timeout 30 s),
 * t = sql that batches (timeout 5 s), o = sql that does not batch, n = notify; ids 1, 2, 3... */
static struct Job *
queue(const char *spec, struct Job **tail)
{
	struct Job *head = NULL, *last = NULL;
	int i;

	for (i = 0; spec[i]; i++) {
		struct Job *j = job_new();

		j->id = i + 1;
		j->batch = spec[i] == 's' || spec[i] == 't';
		j->timeout_ms = spec[i] == 't' ? 5000 : 30000;
		if (last)
			last->next = j;
		else
			head = j;
		last = j;
	}
	*tail = last;
	return head;
}

/* ids writes the ids of a list as "1,2,3" and frees the jobs. */
static const char *
ids(struct Job *list)
{
	static char out[256];
	const struct Job *j;
	size_t n = 0;

	out[0] = '\0';
	for (j = list; j; j = j->next)
		n += (size_t) snprintf(out + n, sizeof out - n, "%s%lld", n ? "," : "", j->id);
	job_free(list);
	return out;
}

static void
test_take(void)
{
	static const struct {
		const char *queue;
		int limit;
		const char *taken;
		int n;
		const char *left;
		long long tail; /* id of the queue's last job afterwards, 0: empty */
	} cases[] = {
		{"sss", 2, "1,2", 2, "3", 3},
		{"sss", 5, "1,2,3", 3, "", 0},
		{"sss", 1, "1", 1, "2,3", 3},
		{"snsos", 9, "1,3,5", 3, "2,4", 4}, /* notify and non-batching jobs stay, in order */
		{"ssn", 9, "1,2", 2, "3", 3},
		{"nss", 9, "1", 1, "2,3", 3},    /* a notify event is always alone */
		{"oss", 9, "1", 1, "2,3", 3},    /* so is one of a channel that does not batch */
		{"stst", 9, "1,3", 2, "2,4", 4}, /* one statement timeout per batch */
		{"tsst", 9, "1,4", 2, "2,3", 3}, /* the tail moves back when the last job is taken */
		{"s", 9, "1", 1, "", 0},
		{"", 9, "", 0, "", 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct Job *tail, *head = queue(cases[i].queue, &tail);
		int n = -1;
		struct Job *taken = batch_take(&head, &tail, cases[i].limit, &n);

		CHECK(n == cases[i].n);
		CHECK(tail == NULL ? cases[i].tail == 0 : tail->id == cases[i].tail && tail->next == NULL);
		CHECK_STR(ids(taken), cases[i].taken);
		CHECK_STR(ids(head), cases[i].left);
	}
}

static void
test_limit(void)
{
	CHECK(batch_limit(50, 1000, 4) == 50); /* a backlog: full batches */
	CHECK(batch_limit(50, 40, 4) == 10);   /* a burst: spread over the idle workers */
	CHECK(batch_limit(50, 41, 4) == 11);
	CHECK(batch_limit(50, 3, 4) == 1);
	CHECK(batch_limit(50, 100, 1) == 50);
	CHECK(batch_limit(50, 100, 0) == 50);
	CHECK(batch_limit(1, 1000, 1) == 1); /* --events-per-commit=1: one event per transaction */
	CHECK(batch_limit(0, 10, 1) == 1);
}

/* The cap after lost connections: halved by each loss, one more per run of its size that commits. */
static void
test_cap(void)
{
	int cap = 0, n = 0;

	CHECK(batch_cap_max(0, 50) == 50); /* no cap: --events-per-commit */
	CHECK(batch_cap_done(0, 50, 50) == 0);
	/* losses: 50, 25, 12, 6, 3, 1, and no lower */
	cap = batch_cap_lost(cap, 50);
	CHECK(cap == 25 && batch_cap_max(cap, 50) == 25);
	cap = batch_cap_lost(cap, 50);
	CHECK(cap == 12);
	cap = batch_cap_lost(batch_cap_lost(batch_cap_lost(cap, 50), 50), 50);
	CHECK(cap == 1);
	CHECK(batch_cap_lost(cap, 50) == 1);
	/* runs that commit: one more each, when the run was as large as the cap */
	cap = batch_cap_done(cap, 50, 1);
	CHECK(cap == 2);
	CHECK(batch_cap_done(cap, 50, 1) == 2); /* a run smaller than the cap says nothing */
	while (cap != 0 && n++ < 100)
		cap = batch_cap_done(cap, 50, cap);
	CHECK(cap == 0 && n == 48); /* 2 .. 49, then back to --events-per-commit */
	CHECK(batch_cap_done(49, 50, 49) == 0);
	/* a reload that lowered --events-per-commit below the cap: the cap no longer binds */
	CHECK(batch_cap_max(30, 10) == 10);
	CHECK(batch_cap_done(30, 10, 10) == 0);
	CHECK(batch_cap_lost(30, 10) == 5);
	/* --events-per-commit=1: nothing to cap */
	CHECK(batch_cap_lost(0, 1) == 0);
	CHECK(batch_cap_lost(0, 2) == 1);
}

static void
test_timeout(void)
{
	CHECK(batch_timeout_ms(30000) == 31000); /* the timeout plus the window */
	CHECK(batch_timeout_ms(1000) == 2000);
	CHECK(batch_timeout_ms(200) == 400); /* a window no longer than the timeout */
	CHECK(batch_timeout_ms(1) == 2);
}

static void
test_ids(void)
{
	struct Job *tail, *jobs = queue("sss", &tail);
	struct Buf b = BUF_INIT;

	jobs->id = 121036525566689354LL;
	CHECK(batch_ids(jobs, &b));
	CHECK_STR(b.data, "{121036525566689354,2,3}");
	buf_free(&b);
	ids(jobs);
}

int
main(void)
{
	RUN(test_take);
	RUN(test_limit);
	RUN(test_cap);
	RUN(test_timeout);
	RUN(test_ids);
	printf("# %d passed, %d failed\n", unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}
