/*
 * web_backlog.h - the backlog over the last day for the overview's charts, from the samples the
 * Processors write once a minute (pgrelay.backlog): events due, waiting, retrying and failed.
 */
#ifndef PGRELAY_WEB_BACKLOG_H
#define PGRELAY_WEB_BACKLOG_H

#include <stdbool.h>

/* The series of a backlog chart, in the order they are stacked. */
enum BacklogSeries { BACKLOG_DUE, BACKLOG_WAITING, BACKLOG_RETRYING, BACKLOG_FAILED, BACKLOG_SERIES };

/* backlog_read reads the samples from since on (seconds since 1970); false on failure (web_db_error()). */
bool backlog_read(long long since);

/*
 * backlog_fold fills v[series][0..n) with the backlog of n buckets of step seconds from start:
 * of each bucket its sample of the largest backlog (the peak, for a bucket of several minutes),
 * -1 in every series for a bucket without a sample.
 */
void backlog_fold(long long start, int step, int n, long long *v[BACKLOG_SERIES]);

/* backlog_free forgets the samples read. */
void backlog_free(void);

#endif
