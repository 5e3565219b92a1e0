/*
 * job.c - outcomes of events and the monotonic clock the loop and the workers share.
 */
#include <string.h>
#include <time.h>

#include "pgrelay.h"

long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long) ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static const char *const outcome_names[] = {"skipped", "ok",     "partial",  "cancelled", "retry",
											"timeout", "failed", "deferred", "lost"};

const char *
outcome_name(enum Outcome o)
{
	return outcome_names[o];
}

enum Outcome
outcome_parse(const char *s)
{
	size_t i;

	for (i = 0; s && i < sizeof outcome_names / sizeof outcome_names[0]; i++)
		if (strcmp(s, outcome_names[i]) == 0)
			return (enum Outcome) i;
	return OC_LOST;
}
