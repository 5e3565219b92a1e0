/*
 * backlog.c - the samples of pgrelay.backlog for the overview (web_backlog.h). A day holds at most
 * 1,440 of them, one a minute, read through the primary key of their table at each overview: a
 * fraction of a millisecond, so nothing is kept between pages.
 */
#include "web_backlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_db.h"

#define MAX_SAMPLES 1600

struct Sample {
	long long at; /* seconds since 1970 */
	long long v[BACKLOG_SERIES];
};

static struct Sample *samples;
static int nsamples;

bool
backlog_read(long long since)
{
	char a[32];
	const char *vals[1] = {a};
	PGresult *res;
	int i, k, n;

	backlog_free();
	snprintf(a, sizeof a, "%lld", since);
	res = web_db_query(
		"SELECT pg_catalog.date_part('epoch', sampled_at)::bigint, due, waiting, retrying, failed"
		" FROM pgrelay.backlog WHERE sampled_at >= pg_catalog.to_timestamp($1::float8)"
		" ORDER BY sampled_at LIMIT 1600",
		1, vals);
	if (res == NULL)
		return false;
	n = web_db_rows(res);
	samples = n > 0 ? calloc((size_t) n, sizeof *samples) : NULL;
	for (i = 0; i < n && samples != NULL; i++) {
		samples[i].at = atoll(web_db_value(res, i, 0));
		for (k = 0; k < BACKLOG_SERIES; k++)
			samples[i].v[k] = atoll(web_db_value(res, i, k + 1));
	}
	nsamples = samples != NULL ? n : 0;
	web_db_clear(res);
	return true;
}

static long long
sum(const struct Sample *s)
{
	long long t = 0;
	int k;

	for (k = 0; k < BACKLOG_SERIES; k++)
		t += s->v[k];
	return t;
}

void
backlog_fold(long long start, int step, int n, long long *v[BACKLOG_SERIES])
{
	int i, k, *best = malloc((size_t) n * sizeof *best);

	for (i = 0; i < n; i++)
		for (k = 0; k < BACKLOG_SERIES; k++)
			v[k][i] = -1;
	if (best == NULL)
		return;
	for (i = 0; i < n; i++)
		best[i] = -1;
	for (i = 0; i < nsamples; i++) {
		long long b;

		if (samples[i].at < start)
			continue;
		b = (samples[i].at - start) / step;
		if (b >= n)
			continue;
		if (best[b] < 0 || sum(&samples[i]) > sum(&samples[best[b]]))
			best[b] = i;
	}
	for (i = 0; i < n; i++)
		for (k = 0; k < BACKLOG_SERIES && best[i] >= 0; k++)
			v[k][i] = samples[best[i]].v[k];
	free(best);
}

void
backlog_free(void)
{
	free(samples);
	samples = NULL;
	nsamples = 0;
}
