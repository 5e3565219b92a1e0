/*
 * job.h - one event on its way from the fetch to a worker and back, and who owns it when.
 *
 * The fetch makes the jobs (tick_fetch) and hands them to the pool (pool_submit), which owns them
 * while they are queued and run; the main loop takes them back finished (pool_collect), counts
 * them and frees them. The pool frees the ones it drops (a twin of a running event, the queue
 * when the gate closes or the Processor stops). job_free is the one way a job ends.
 */
#ifndef PGRELAY_JOB_H
#define PGRELAY_JOB_H

#include <stdbool.h>

#include "log.h"
#include "outcome.h"

struct Job {
	long long id;       /* the queue row: one per attempt */
	long long event_id; /* the event: the same for each of its attempts */
	char action_type[32];
	char channel[132];
	int timeout_ms; /* the channel's timeout */
	int attempt;
	bool batch; /* a sql event of a channel that batches, or an event of a held kind that batches (batch.h) */
	enum Outcome outcome;  /* set by the worker */
	long long duration_us; /* set by the worker */
	/* set by the worker: the attempt failed because of the set-up, which someone must change */
	enum ConfigError config_error;
	struct Job *next;
};

/*
 * LOG_EVENT(j) names job j's event in a log line: its event id, which every attempt shares (one
 * grep of the log finds the event's history), the attempt, and the queue row of that attempt.
 */
#define LOG_EVENT(j) \
	LOG_ID("event_id", (j)->event_id), LOG_INT("attempt", (j)->attempt), LOG_ID("queue_id", (j)->id)

/* job_new returns a zeroed job, or NULL when out of memory. */
struct Job *job_new(void);

/* job_free frees jobs and every job linked after it by next; NULL is a no-op. */
void job_free(struct Job *jobs);

/* job_count is the length of the list that starts at jobs. */
int job_count(const struct Job *jobs);

#endif
