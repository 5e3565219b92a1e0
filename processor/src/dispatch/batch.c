/*
 * batch.c - which queued events a worker takes together, and the numbers of a batch (batch.h).
 */
#include "batch.h"

#include <string.h>

int
batch_limit(int max, int queued, int idle)
{
	int share;

	if (max < 1)
		return 1;
	if (idle < 1)
		idle = 1;
	share = (queued + idle - 1) / idle;
	if (share < 1)
		share = 1;
	return share < max ? share : max;
}

int
batch_cap_max(int cap, int max)
{
	return cap > 0 && cap < max ? cap : max;
}

int
batch_cap_lost(int cap, int max)
{
	int size = batch_cap_max(cap, max);

	if (size <= 1)
		return max > 1 ? 1 : 0; /* with --events-per-commit=1 there is nothing to cap */
	return size / 2;
}

int
batch_cap_done(int cap, int max, int n)
{
	if (cap <= 0 || cap >= max)
		return 0; /* no cap, or one that no longer binds (a reload lowered max) */
	if (n < cap)
		return cap; /* a run smaller than the cap says nothing about a batch of its size */
	return cap + 1 < max ? cap + 1 : 0;
}

/*
 * batches_with: may job j join a batch that starts with head? sql events of any channel with the
 * same timeout; an event of a held kind that batches, only with events of its own channel.
 */
static bool
batches_with(const struct Job *head, const struct Job *j)
{
	if (!j->batch || j->timeout_ms != head->timeout_ms)
		return false;
	if (strcmp(head->action_type, "sql") == 0)
		return strcmp(j->action_type, "sql") == 0;
	return strcmp(j->channel, head->channel) == 0 && strcmp(j->action_type, head->action_type) == 0;
}

struct Job *
batch_take(struct Job **head, struct Job **tail, int limit, int *n)
{
	struct Job *first = *head, *last, *prev, *j;

	*n = 0;
	if (first == NULL)
		return NULL;
	*head = first->next;
	first->next = NULL;
	last = first;
	*n = 1;
	/* Note that the jobs passed over keep their places: prev is the last one kept. */
	prev = NULL;
	for (j = *head; j != NULL && first->batch && *n < limit;) {
		struct Job *next = j->next;

		if (batches_with(first, j)) {
			if (prev)
				prev->next = next;
			else
				*head = next;
			j->next = NULL;
			last->next = j;
			last = j;
			(*n)++;
		} else {
			prev = j;
		}
		j = next;
	}
	/* The queue's tail is the last job kept, or nothing when every job was taken. */
	if (*head == NULL)
		*tail = NULL;
	else if (prev != NULL && prev->next == NULL)
		*tail = prev;
	return first;
}

long
batch_timeout_ms(long timeout_ms)
{
	return timeout_ms + (timeout_ms < BATCH_WINDOW_MS ? timeout_ms : BATCH_WINDOW_MS);
}

bool
batch_ids(const struct Job *jobs, struct Buf *out)
{
	const struct Job *j;

	buf_putc(out, '{');
	for (j = jobs; j; j = j->next)
		buf_printf(out, "%s%lld", j == jobs ? "" : ",", j->id);
	buf_putc(out, '}');
	return !out->oom;
}
