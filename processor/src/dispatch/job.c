/*
 * job.c - the life of a job: made by the fetch, freed by whoever holds it last (job.h).
 */
#include "job.h"

#include <stdlib.h>

struct Job *
job_new(void)
{
	return calloc(1, sizeof(struct Job));
}

void
job_free(struct Job *jobs)
{
	while (jobs != NULL) {
		struct Job *next = jobs->next;

		free(jobs);
		jobs = next;
	}
}

int
job_count(const struct Job *jobs)
{
	int n = 0;

	for (; jobs != NULL; jobs = jobs->next)
		n++;
	return n;
}
