/*
 * dest_row.h - the row a destination kind (redis, kafka, rabbitmq) claims: _destination_claim()
 * and _destination_claim_many() return the same columns for every kind, so one reader serves them
 * (statements.c: payload, attempt, event_id, channel, action_type, key, queued_at, settings,
 * timeout_ms, replayed, publication_id, event_type).
 */
#ifndef PGRELAY_DEST_ROW_H
#define PGRELAY_DEST_ROW_H

#include <libpq-fe.h>

#include "attempt.h"

/* One claimed destination event: the columns of its claim, and the password its kind resolved. */
struct DestRow {
	char *payload;
	char event_id[24];
	char *channel;
	char *key; /* NULL: the event has none */
	char queued_at[40];
	char publication_id[24]; /* the publication (publish()) delivered; "" for an event of notify() */
	char *event_type;        /* the publication's event type; NULL without one */
	char *settings;          /* the channel's settings (JSON), NULL when it has none */
	long timeout_ms;
	char *password; /* resolved for the channel (dest_event.c), wiped by dest_row_free */
};

/* dest_row_read reads row of a claim's result into r, and the attempt it starts into *attempt. */
enum HeldClaim dest_row_read(struct DestRow *r, int *attempt, const PGresult *res, int row);

/* dest_row_read_one reads the one-row claim res (NULL when it failed) and clears it. */
enum HeldClaim dest_row_read_one(struct DestRow *r, int *attempt, PGresult *res);

/*
 * dest_row_forget_password wipes and frees r's resolved password, if any: before it is resolved
 * again (a batch that falls back to one event at a time resolves the first event's twice).
 */
void dest_row_forget_password(struct DestRow *r);

/* dest_row_free frees what r holds, the password wiped first. */
void dest_row_free(struct DestRow *r);

#endif
