/*
 * rates.c - the attempts per minute and channel of the last day: the settled minutes (older
 * than five minutes) read once from pgrelay.throughput() and kept, the last minutes read at each
 * refresh. A log row is written at the end of its attempt, in the transaction that commits it, so
 * five minutes is ample; an attempt whose transaction commits later than that is missed. The day
 * before the first refresh is read backwards a quarter of an hour at a time, each refresh for at
 * most FILL_BUDGET_US, so that no page waits for a whole day of the log to be read.
 */
#include "web_rates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "web_db.h"

#define DAY 86400
#define SETTLE 300
#define FILL_CHUNK 600
#define FILL_BUDGET_US 20000

struct RateRow {
	long long minute; /* seconds since 1970, a multiple of 60 */
	char *channel;
	long long done, retried, failed;
};

struct Rows {
	struct RateRow *v;
	int n, cap;
};

static struct Rows settled; /* minutes in [filled_from, settled_upto) */
static struct Rows live;    /* minutes from settled_upto on */
static long long settled_upto, filled_from;

static void
rows_clear(struct Rows *r, long long before)
{
	int i, k = 0;

	for (i = 0; i < r->n; i++) {
		if (before == 0 || r->v[i].minute < before)
			free(r->v[i].channel);
		else
			r->v[k++] = r->v[i];
	}
	r->n = k;
}

/* fetch appends throughput() of [from, until) to r (until 0: until now). */
static bool
fetch(struct Rows *r, long long from, long long until)
{
	char a[32], b[32];
	const char *vals[2] = {a, b};
	PGresult *res;
	int i, n;

	snprintf(a, sizeof a, "%lld", from);
	snprintf(b, sizeof b, "%lld", until);
	res = web_db_query(
		until > 0 ? "SELECT pg_catalog.date_part('epoch', bucket_start)::bigint, channel, done, retried,"
					" failed FROM pgrelay.throughput(pg_catalog.to_timestamp($1::float8),"
					" pg_catalog.to_timestamp($2::float8))"
				  : "SELECT pg_catalog.date_part('epoch', bucket_start)::bigint, channel, done, retried,"
					" failed FROM pgrelay.throughput(pg_catalog.to_timestamp($1::float8))",
		until > 0 ? 2 : 1, vals);
	if (res == NULL)
		return false;
	n = web_db_rows(res);
	for (i = 0; i < n; i++) {
		struct RateRow *row;

		if (r->n == r->cap) {
			int cap = r->cap ? r->cap * 2 : 256;
			struct RateRow *v = realloc(r->v, (size_t) cap * sizeof *v);

			if (v == NULL)
				break;
			r->v = v;
			r->cap = cap;
		}
		row = &r->v[r->n];
		row->channel = strdup(web_db_value(res, i, 1));
		if (row->channel == NULL)
			break;
		row->minute = atoll(web_db_value(res, i, 0));
		row->done = atoll(web_db_value(res, i, 2));
		row->retried = atoll(web_db_value(res, i, 3));
		row->failed = atoll(web_db_value(res, i, 4));
		r->n++;
	}
	web_db_clear(res);
	return true;
}

bool
rates_refresh(double now)
{
	long long t = (long long) now, settle = (t - SETTLE) / 60 * 60;
	long long from = (t - DAY) / 900 * 900 - 900, lo, t0 = now_us(), chunk = FILL_CHUNK;

	/* the first refresh, or one after more than a day: start over from the settled edge */
	if (settled_upto < from) {
		rows_clear(&settled, 0);
		settled_upto = filled_from = settle;
	}
	if (settled_upto < settle) {
		if (!fetch(&settled, settled_upto, settle))
			return false;
		settled_upto = settle;
	}
	/* forget what the last day's chart no longer shows */
	rows_clear(&settled, from);
	if (filled_from < from)
		filled_from = from;
	/* the rest of the day, newest first, while the budget lasts; a quiet stretch in bigger steps */
	while (filled_from > from && now_us() - t0 < FILL_BUDGET_US) {
		int had = settled.n;

		lo = filled_from - chunk < from ? from : filled_from - chunk;
		if (!fetch(&settled, lo, filled_from))
			return false;
		filled_from = lo;
		chunk = settled.n == had ? chunk * 4 : FILL_CHUNK;
	}
	rows_clear(&live, 0);
	return fetch(&live, settled_upto, 0);
}

long long
rates_counted_from(void)
{
	return filled_from;
}

static void
fold_rows(const struct Rows *r, long long start, int step, int n, const char *channel, long long *done,
		  long long *retried, long long *failed)
{
	int i;

	for (i = 0; i < r->n; i++) {
		long long k;

		if (r->v[i].minute < start || (channel != NULL && strcmp(channel, r->v[i].channel) != 0))
			continue;
		k = (r->v[i].minute - start) / step;
		if (k >= n)
			continue;
		done[k] += r->v[i].done;
		retried[k] += r->v[i].retried;
		failed[k] += r->v[i].failed;
	}
}

void
rates_fold(long long start, int step, int n, const char *channel, long long *done, long long *retried,
		   long long *failed)
{
	memset(done, 0, (size_t) n * sizeof *done);
	memset(retried, 0, (size_t) n * sizeof *retried);
	memset(failed, 0, (size_t) n * sizeof *failed);
	fold_rows(&settled, start, step, n, channel, done, retried, failed);
	fold_rows(&live, start, step, n, channel, done, retried, failed);
}

void
rates_free(void)
{
	rows_clear(&settled, 0);
	rows_clear(&live, 0);
	free(settled.v);
	free(live.v);
	memset(&settled, 0, sizeof settled);
	memset(&live, 0, sizeof live);
}
