/*
 * status_doc.h - the set_status() document of one email delivery attempt (docs/interface.md) and
 * the detail pg_relay keeps in pgrelay.log for it. (The pg_relay status command is status_cmd.c.)
 */
#ifndef PGRELAY_STATUS_DOC_H
#define PGRELAY_STATUS_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"
#include "transport.h"

struct StatusDoc {
	int attempt;
	enum Outcome outcome;        /* OC_OK, OC_PARTIAL, OC_RETRY/OC_TIMEOUT or OC_FAILED */
	const char *transport;       /* smtp or graph; NULL when the document could not be read */
	const char *started_at;      /* ISO 8601 */
	const char *finished_at;     /* ISO 8601 */
	const char *next_attempt_at; /* ISO 8601 for retrying, else NULL */
	bool with_trace;             /* the profile has debug on */
};

/*
 * status_doc_json renders the document as compact JSON (malloc'd; NULL when out of memory); the
 * outcome and the recipients' statuses are written as outcome.c maps them for set_status().
 */
char *status_doc_json(const struct StatusDoc *sd, const struct DeliveryResult *r) MUSTCHECK;

/* status_doc_log_detail renders the pgrelay.log detail of an attempt (reply, counts; no trace). */
char *status_doc_log_detail(const char *transport, const struct Message *m,
							const struct DeliveryResult *r) MUSTCHECK;

#endif
