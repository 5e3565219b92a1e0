/*
 * schedule.c - fires the recurring events. The SQL function decides everything (which node
 * fires, which occurrence, on time or late, caught up or skipped) and records it in
 * pgrelay.schedule_runs in the same transaction as the event it queues, so that an occurrence is
 * queued once whatever happens to this Processor; here we only run it and say what it did.
 */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pgconn.h"
#include "statements.h"

/* log_row: one occurrence fired; a refused one (failed) is a warning, it queued nothing. */
static void
log_row(const PGresult *res, int i)
{
	const char *name = PQgetvalue(res, i, 0);
	const char *occurrence = PQgetvalue(res, i, 1);
	const char *outcome = PQgetvalue(res, i, 2);
	bool late = strcmp(PQgetvalue(res, i, 3), "t") == 0;
	const char *event_id = pgconn_value(res, i, 4);
	const char *reason = pgconn_value(res, i, 5);

	if (strcmp(outcome, "failed") == 0) {
		log_warn("schedule_failed", LOG_STR("schedule", name), LOG_STR("occurrence", occurrence),
				 LOG_BOOL("late", late), LOG_OPT_STR("reason", reason));
		return;
	}
	if (event_id == NULL) { /* skipped: missed, and its schedule catches nothing up */
		log_info("schedule_fired", LOG_STR("schedule", name), LOG_STR("occurrence", occurrence),
				 LOG_STR("outcome", outcome), LOG_BOOL("late", late), LOG_OPT_STR("reason", reason));
		return;
	}
	log_info("schedule_fired", LOG_STR("schedule", name), LOG_STR("occurrence", occurrence),
			 LOG_STR("outcome", outcome), LOG_BOOL("late", late), LOG_ID("event_id", atoll(event_id)));
}

bool
schedule_fire(struct Ticker *t, int *queued)
{
	PGresult *res = pgconn_query(&t->pg, STMT_SCHEDULE_FIRE, NULL);
	int i, n;

	*queued = 0;
	if (res == NULL)
		return false;
	n = PQntuples(res);
	for (i = 0; i < n; i++) {
		log_row(res, i);
		if (strcmp(PQgetvalue(res, i, 2), "queued") == 0)
			(*queued)++;
	}
	pgconn_clear(res);
	return true;
}
