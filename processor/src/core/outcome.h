/*
 * outcome.h - the one vocabulary of results: what became of an event, of an attempt, of a
 * delivery and of each recipient, the names they have in the database and the notifier, and how
 * one maps onto the next. docs/interface.md ("Outcomes") has the same table in words.
 */
#ifndef PGRELAY_OUTCOME_H
#define PGRELAY_OUTCOME_H

#include <stdbool.h>

/* What became of one event handed to a worker: pgrelay.log's outcome, plus the Processor's own. */
enum Outcome {
	OC_SKIPPED,   /* the claim failed: gone, locked, not due, channel busy or inactive */
	OC_OK,        /* done */
	OC_PARTIAL,   /* done; some recipients failed for good */
	OC_CANCELLED, /* done without delivery: the work was withdrawn */
	OC_RETRY,     /* failed, retried later */
	OC_TIMEOUT,   /* timed out, retried later */
	OC_FAILED,    /* failed for good */
	OC_DEFERRED,  /* moved to a later time without an attempt (rate limit) */
	OC_REPLAYED,  /* finished without an attempt: its attempt was recorded already (a replayed row) */
	OC_SNOOZED,   /* the handler asked to run again later (SQLSTATE PGSNZ): no attempt spent */
	OC_LOST       /* not finished: the statement or the connection failed; offered again later */
};

/* The result of one notify attempt as _write_log() takes it; the database turns it into an Outcome. */
enum AttemptResult {
	AR_OK,        /* delivered */
	AR_PARTIAL,   /* delivered to some recipients; the others failed for good */
	AR_TRANSIENT, /* not delivered; another attempt may succeed */
	AR_PERMANENT, /* not delivered; another attempt cannot help */
	AR_CANCELLED  /* not delivered because the notification was cancelled */
};

/* A transport's verdict on one delivery (struct DeliveryResult). */
enum DeliveryStatus {
	DS_SENT,      /* every envelope recipient accepted */
	DS_PARTIAL,   /* some accepted; the others failed permanently; nothing to retry */
	DS_TRANSIENT, /* retry later: nothing accepted, or some recipients got a 4xx */
	DS_PERMANENT  /* nothing accepted and retrying cannot help */
};

/* One recipient's state, as fetch() reports it and set_status() records it. */
enum RcptStatus {
	RS_PENDING, /* not attempted yet */
	RS_SENT,    /* accepted by the server on an earlier or this attempt */
	RS_FAILED,  /* rejected permanently */
	RS_RETRYING /* rejected transiently; goes into the next attempt's envelope */
};

/*
 * A failed attempt's configuration error: one that lasts until someone changes the set-up, whose
 * attempt_failed line says what to fix (pgrelay._config_hint for a sql event).
 */
enum ConfigError {
	CE_NONE,
	CE_MISSING_HANDLER,      /* the handler, or its schema, does not exist */
	CE_NOT_SECURITY_DEFINER, /* the handler is no longer SECURITY DEFINER */
	CE_MISSING_GRANT,        /* the Processor may not use the handler's schema or execute it */
	CE_IN_HANDLER,           /* the handler met it, as its owner: a missing object or privilege */
	CE_SECRET,               /* a secret of an email profile, webhook or destination could not be read */
	CE_DESTINATION,          /* a destination refused the message for its settings or its set-up */
	CE_COUNT
};

/* config_error_name: the kind as the log lines and the metrics spell it ("" for CE_NONE). */
const char *config_error_name(enum ConfigError e);
/* config_error_parse maps a kind of pgrelay._config_hint(); unknown text or NULL is CE_NONE. */
enum ConfigError config_error_parse(const char *s);

/* outcome_name: the outcome as pgrelay.log and the log lines spell it. */
const char *outcome_name(enum Outcome o);
/* outcome_parse maps the outcome text of process_one()/_write_log(); unknown text is OC_LOST. */
enum Outcome outcome_parse(const char *s);

/* outcome_failed: an attempt was made and failed (retry, timeout, failed). */
bool outcome_failed(enum Outcome o);

/* attempt_result_name: the result argument of _write_log(). */
const char *attempt_result_name(enum AttemptResult r);
/* delivery_result: the attempt result a transport's verdict stands for. */
enum AttemptResult delivery_result(enum DeliveryStatus s);
/*
 * attempt_result_outcome is the outcome _write_log() gives r while the event has attempts left
 * (when they are spent, a transient result becomes OC_FAILED: the database decides that).
 */
enum Outcome attempt_result_outcome(enum AttemptResult r);

/*
 * outcome_status_name: the set_status() outcome that records an attempt which came to o (sent,
 * partially_sent, retrying, failed); NULL for outcomes that record no delivery attempt.
 */
const char *outcome_status_name(enum Outcome o);

/*
 * notification_settled says whether a notification whose status (fetch()'s "status") is s needs
 * no delivery, and with which result its event then finishes: cancelled → AR_CANCELLED; sent or
 * partially_sent (a duplicate queue event) → AR_OK.
 */
bool notification_settled(const char *s, enum AttemptResult *result);

/* rcpt_status_name / rcpt_status_parse: pending, sent, failed, retrying. */
const char *rcpt_status_name(enum RcptStatus s);
bool rcpt_status_parse(const char *s, enum RcptStatus *out);
/*
 * rcpt_status_reported is the status set_status() records for a recipient of an attempt that came
 * to o: after a final outcome (failed, partial) nothing will be retried, so a recipient the
 * transport left retrying or pending is failed.
 */
enum RcptStatus rcpt_status_reported(enum RcptStatus s, enum Outcome o);

#endif
