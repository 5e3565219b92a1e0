/*
 * web_query.h - a statement put together from fixed parts, its values kept apart as parameters:
 * how the pages with filters build their SQL without ever formatting a value into it.
 */
#ifndef PGRELAY_WEB_QUERY_H
#define PGRELAY_WEB_QUERY_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "buf.h"

#define QUERY_MAX_PARAMS 16

struct Query {
	struct Buf sql;
	const char *values[QUERY_MAX_PARAMS];
	char own[QUERY_MAX_PARAMS][32]; /* numbers the query formatted itself */
	int n;
};

/* query_param adds value as the next parameter and returns its number ($n). */
int query_param(struct Query *q, const char *value);
/* query_param_ll adds a number. */
int query_param_ll(struct Query *q, long long value);
/* query_run runs it (web_db_query) and frees the text. */
PGresult *query_run(struct Query *q) MUSTCHECK;

/* web_digits: s is 1 to 19 decimal digits (an id). */
bool web_digits(const char *s);
/* web_id_time writes the UTC time an id of _next_id() was made. */
void web_id_time(struct Buf *b, long long id);

#endif
