/*
 * dest_row.c - the claimed row of a destination event, read once for every destination kind.
 */
#include "dest_row.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgconn.h"

/* dup_value copies column col of row (NULL stays NULL); false when out of memory. */
static bool
dup_value(const PGresult *res, int row, int col, char **out)
{
	const char *v = pgconn_value(res, row, col);

	*out = v != NULL ? strdup(v) : NULL;
	return v == NULL || *out != NULL;
}

enum HeldClaim
dest_row_read(struct DestRow *r, int *attempt, const PGresult *res, int row)
{
	*attempt = atoi(pgconn_value(res, row, 1));
	snprintf(r->event_id, sizeof r->event_id, "%s", pgconn_value(res, row, 2));
	snprintf(r->queued_at, sizeof r->queued_at, "%s",
			 pgconn_value(res, row, 6) ? pgconn_value(res, row, 6) : "");
	r->timeout_ms = atol(pgconn_value(res, row, 8) ? pgconn_value(res, row, 8) : "0");
	snprintf(r->publication_id, sizeof r->publication_id, "%s",
			 pgconn_value(res, row, 10) ? pgconn_value(res, row, 10) : "");
	if (!dup_value(res, row, 0, &r->payload) || !dup_value(res, row, 3, &r->channel) ||
		!dup_value(res, row, 5, &r->key) || !dup_value(res, row, 7, &r->settings) ||
		!dup_value(res, row, 11, &r->event_type) || r->payload == NULL || r->channel == NULL)
		return HC_FAILED;
	if (strcmp(pgconn_value(res, row, 9) ? pgconn_value(res, row, 9) : "f", "t") == 0)
		return HC_REPLAYED;
	return HC_CLAIMED;
}

enum HeldClaim
dest_row_read_one(struct DestRow *r, int *attempt, PGresult *res)
{
	enum HeldClaim c = HC_SKIPPED;

	if (res == NULL)
		return HC_FAILED;
	if (PQntuples(res) > 0)
		c = dest_row_read(r, attempt, res, 0);
	pgconn_clear(res);
	return c;
}

void
dest_row_forget_password(struct DestRow *r)
{
	if (r->password != NULL) {
		explicit_bzero(r->password, strlen(r->password));
		free(r->password);
		r->password = NULL;
	}
}

void
dest_row_free(struct DestRow *r)
{
	dest_row_forget_password(r);
	free(r->payload);
	free(r->channel);
	free(r->key);
	free(r->event_type);
	free(r->settings);
}
