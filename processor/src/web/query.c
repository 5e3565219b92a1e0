/*
 * query.c - statements of fixed parts and parameters (web_query.h), and small helpers for ids.
 */
#include "web_query.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "web_db.h"

int
query_param(struct Query *q, const char *value)
{
	if (q->n == QUERY_MAX_PARAMS) {
		q->sql.oom = true; /* a page asked for more than it can: fail the statement */
		return 1;
	}
	q->values[q->n] = value;
	return ++q->n;
}

int
query_param_ll(struct Query *q, long long value)
{
	if (q->n == QUERY_MAX_PARAMS) {
		q->sql.oom = true;
		return 1;
	}
	snprintf(q->own[q->n], sizeof q->own[q->n], "%lld", value);
	return query_param(q, q->own[q->n]);
}

PGresult *
query_run(struct Query *q)
{
	PGresult *res = NULL;

	if (!q->sql.oom && q->sql.data != NULL)
		res = web_db_query(q->sql.data, q->n, q->values);
	buf_free(&q->sql);
	return res;
}

bool
web_digits(const char *s)
{
	size_t n = s ? strlen(s) : 0, i;

	if (n == 0 || n > 19)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n < 19 || strcmp(s, "9223372036854775807") <= 0;
}

void
web_id_time(struct Buf *b, long long id)
{
	long long ms = (id >> 22) + 1767225600000LL;
	time_t t = (time_t) (ms / 1000);
	struct tm tm;
	char s[32];

	gmtime_r(&t, &tm);
	strftime(s, sizeof s, "%Y-%m-%d %H:%M:%S", &tm);
	buf_puts(b, s);
}
