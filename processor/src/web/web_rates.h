/*
 * web_rates.h - attempts per minute for the overview's charts, from pgrelay.throughput(). The
 * minutes older than five minutes do not change any more (their log rows are written): they are
 * read once and kept here, so a chart of the last day reads the last minutes of the log, not the
 * day.
 */
#ifndef PGRELAY_WEB_RATES_H
#define PGRELAY_WEB_RATES_H

#include <stdbool.h>

/* rates_refresh brings the counts up to the database's clock now (seconds); false on failure. */
bool rates_refresh(double now);

/*
 * rates_fold adds the counts of n buckets of step seconds from start (seconds since 1970) into
 * done, retried and failed (zeroed first), for one channel or all (NULL).
 */
void rates_fold(long long start, int step, int n, const char *channel, long long *done, long long *retried,
				long long *failed);

/*
 * rates_counted_from is the time (seconds since 1970) from which the kept counts are complete:
 * until the day before the first refresh is read, a little more at each refresh, the day's chart
 * starts later than a day ago.
 */
long long rates_counted_from(void);

/* rates_free forgets everything (at exit). */
void rates_free(void);

#endif
