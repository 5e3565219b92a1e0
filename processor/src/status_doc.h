/*
 * status_doc.h - the set_status() document of one delivery attempt (docs/interface.md) and the
 * detail pg_relay keeps in pgrelay.log for it.
 */
#ifndef PGRELAY_STATUS_DOC_H
#define PGRELAY_STATUS_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include "transport.h"

struct StatusDoc {
	int attempt;
	const char *outcome;         /* sent, partially_sent, retrying or failed */
	const char *transport;       /* smtp or graph */
	const char *started_at;      /* ISO 8601 */
	const char *finished_at;     /* ISO 8601 */
	const char *next_attempt_at; /* ISO 8601 for retrying, else NULL */
	bool with_trace;             /* the profile has debug on */
};

/*
 * status_doc_json renders the document as compact JSON (malloc'd; NULL when out of memory). With
 * a final outcome (failed, partially_sent) a recipient the transport marked retrying is written as
 * failed: there will be no next attempt for it.
 */
char *status_doc_json(const struct StatusDoc *sd, const struct DeliveryResult *r) MUSTCHECK;

/* status_log_detail renders the pgrelay.log detail of an attempt (reply, counts; no trace). */
char *status_log_detail(const char *transport, const struct Message *m,
						const struct DeliveryResult *r) MUSTCHECK;

/* status_outcome_name: the set_status outcome a DeliveryStatus stands for on its own. */
const char *status_outcome_name(enum DeliveryStatus s);

/* iso8601_now writes the current UTC time as 2026-11-29T19:20:50.123Z. */
void iso8601_now(char *buf, size_t len);

#endif
