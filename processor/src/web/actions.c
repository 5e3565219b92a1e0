/*
 * actions.c - what the console asks the database to do, each through the function an admin would
 * call in SQL: retry_failed(), discard_failed() (one event, or a filter's set), pause(), resume(),
 * cancel() of one event, and schedule(name, active => ...) to pause or resume a schedule.
 * The database decides whether the role may; a refusal is shown as the database's answer. Every
 * action is logged (web_action) with the HTTP user and the role.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "log.h"
#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_query.h"

/*
 * finish renders the result of sql (already run: res, or NULL on failure) and logs it. show:
 * the function's answer (a count, an id, a state) follows the text in parentheses.
 */
static void
finish(struct WebReq *r, PGresult *res, const char *action, const char *target, const char *done_text,
	   bool show, const char *back, const char *back_label)
{
	bool refused = res == NULL && strcmp(web_db_sqlstate(), "42501") == 0;
	struct Buf t = BUF_INIT;

	log_info("web_action", LOG_STR("action", action), LOG_STR("target", target), LOG_OPT_STR("user", r->user),
			 LOG_STR("role", r->caps.role),
			 LOG_STR("result", res       ? "done"
							   : refused ? "refused"
										 : "failed"),
			 LOG_OPT_STR("error", res ? NULL : web_db_error()));
	if (res == NULL)
		r->status = refused ? MHD_HTTP_FORBIDDEN : MHD_HTTP_CONFLICT;
	html_begin(r, refused ? "Refused by the database" : res ? "Done" : "Not done", NULL, false);
	if (res != NULL) {
		buf_puts(&t, done_text);
		if (show && web_db_rows(res) > 0 && !web_db_null(res, 0, 0))
			buf_printf(&t, " (%s)", web_db_value(res, 0, 0));
		html_notice(r, "done", t.data);
	} else {
		buf_printf(&t, "The database refused to %s %s: %s", action, target, web_db_error());
		html_notice(r, refused ? "denied" : "warn", t.data);
		if (web_db_hint()[0] != '\0') {
			buf_reset(&t);
			buf_printf(&t, "Hint: %s", web_db_hint());
			html_notice(r, "info", t.data);
		}
		if (refused)
			html_denied(r, "do this", "members of pgrelay_admin");
	}
	buf_puts(&r->out, "<p><a id=\"back\" href=\"");
	buf_puts(&r->out, back);
	buf_puts(&r->out, "\">");
	html_esc(&r->out, back_label);
	buf_puts(&r->out, "</a></p>\n");
	html_end(r);
	buf_free(&t);
	web_db_clear(res);
}

/* event_arg is the form's event_id, or NULL after answering 400 when it is not an event id. */
static const char *
event_arg(struct WebReq *r, char *back, size_t len)
{
	const char *id = web_arg(r, "event_id");

	if (!web_digits(id)) {
		html_message_page(r, MHD_HTTP_BAD_REQUEST, "Not done", "event_id must be an event id (a number).");
		return NULL;
	}
	snprintf(back, len, "/event?id=%s", id);
	return id;
}

/* one_event runs fn(event_id) for retry and discard. */
static void
one_event(struct WebReq *r, const char *action, const char *sql, const char *done_text, bool show)
{
	char back[64];
	const char *id = event_arg(r, back, sizeof back);

	if (id != NULL)
		finish(r, web_db_query(sql, 1, (const char *const[]){id}), action, id, done_text, show, back,
			   "Back to the event");
}

void
action_retry(struct WebReq *r)
{
	one_event(r, "retry", "SELECT pgrelay.retry_failed($1::bigint)",
			  "The event is queued again with a fresh attempt budget", true);
}

void
action_discard(struct WebReq *r)
{
	one_event(r, "discard", "SELECT pgrelay.discard_failed($1::bigint)",
			  "The failed event is forgotten; its attempts stay in the log.", false);
}

/* web_cancel_text says what cancel()'s answer means for the event. */
const char *
web_cancel_text(const char *answer)
{
	if (strcmp(answer, "cancelled") == 0)
		return "The event is cancelled: it will not run, and its log has a cancelled attempt";
	if (strcmp(answer, "running") == 0)
		return "An attempt of the event runs now: nothing is cancelled, the attempt finishes as it will";
	if (strcmp(answer, "finished") == 0)
		return "The event has run already (done, failed or cancelled): nothing is cancelled";
	return "The database answered";
}

void
action_cancel(struct WebReq *r)
{
	char back[64];
	const char *id = event_arg(r, back, sizeof back);
	PGresult *res;

	if (id == NULL)
		return;
	res = web_db_query("SELECT pgrelay.cancel($1::bigint)", 1, (const char *const[]){id});
	finish(r, res, "cancel", id, res && web_db_rows(res) > 0 ? web_cancel_text(web_db_value(res, 0, 0)) : "",
		   true, back, "Back to the event");
}

/* a_set runs fn(channel, after, before, error, all_channels) for the set of a filter. */
static void
a_set(struct WebReq *r, const char *action, const char *fn, const char *done_text)
{
	const char *ch = web_arg(r, "channel");
	const char *vals[5] = {ch, web_arg(r, "after"), web_arg(r, "before"), web_arg(r, "error"),
						   ch == NULL && web_arg(r, "all") != NULL ? "t" : "f"};
	char sql[256];

	snprintf(sql, sizeof sql,
			 "SELECT %s($1, $2::timestamptz, $3::timestamptz, $4, all_channels => $5::boolean)", fn);
	finish(r, web_db_query(sql, 5, vals), action, ch ? ch : "every channel", done_text, true, "/failures",
		   "Back to Failures");
}

void
action_retry_set(struct WebReq *r)
{
	a_set(r, "retry-failed", "pgrelay.retry_failed", "Queued again: the number of events follows");
}

void
action_discard_set(struct WebReq *r)
{
	a_set(r, "discard-failed", "pgrelay.discard_failed", "Forgotten: the number of events follows");
}

static void
pause_resume(struct WebReq *r, const char *action, const char *sql, const char *done_everything,
			 const char *done_channel)
{
	const char *ch = web_arg(r, "channel");
	const char *vals[1] = {ch};

	finish(r, web_db_query(sql, 1, vals), action, ch ? ch : "everything", ch ? done_channel : done_everything,
		   false, "/channels", "Back to Channels");
}

void
action_pause(struct WebReq *r)
{
	pause_resume(r, "pause", "SELECT pgrelay.pause($1)", "Dispatch is paused everywhere.",
				 "The channel is paused: its events wait until it is resumed.");
}

void
action_resume(struct WebReq *r)
{
	pause_resume(r, "resume", "SELECT pgrelay.resume($1)", "Dispatch resumed.", "The channel is resumed.");
}

/* schedule_active runs schedule(name, active => ...): the one change of a schedule the console makes. */
static void
schedule_active(struct WebReq *r, const char *action, const char *active, const char *done_text)
{
	const char *name = web_arg(r, "name");

	finish(r,
		   web_db_query("SELECT s.name FROM pgrelay.schedule($1, active => $2::boolean) s", 2,
						(const char *const[]){name, active}),
		   action, name ? name : "(no name)", done_text, false, "/schedules", "Back to Schedules");
}

void
action_schedule_pause(struct WebReq *r)
{
	schedule_active(r, "schedule-pause", "f",
					"The schedule is paused: it fires nothing until it is resumed.");
}

void
action_schedule_resume(struct WebReq *r)
{
	schedule_active(
		r, "schedule-resume", "t",
		"The schedule is resumed: its next run is counted from now (missed runs are not caught up).");
}
