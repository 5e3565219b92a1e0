/*
 * pages_event.c - one event: where it stands (queued, retrying, done, failed for good), every
 * attempt (outcome, error, SQLSTATE, duration, node; a webhook's status, latency and recorded
 * answer), an email's per-recipient results, attempts and traces (pg_relay_notifier), retry or
 * discard for a failed one, a waiting one's key, snoozes and cancel, and for a delivery of a
 * publication the other deliveries of it. Each part is read only where the role may read it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_query.h"

#define PAYLOAD_SHOWN 65536

static const char attempts_admin[] =
	"SELECT l.id, l.attempt, l.outcome, l.error, l.sqlstate, l.node_id,"
	" pg_catalog.to_char(l.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'),"
	" round((pg_catalog.date_part('epoch', l.finished_at - l.started_at) * 1000)::numeric, 1),"
	" pg_catalog.to_char(l.retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), l.channel, l.action_type,"
	" l.detail ->> 'status', l.detail ->> 'latency_ms', pg_catalog.left(l.detail ->> 'response', 8192),"
	" pg_catalog.left(l.detail ->> 'trace', 65536)"
	" FROM pgrelay.log l WHERE l.event_id = $1::bigint ORDER BY l.id LIMIT 1000";
static const char attempts_monitor[] =
	"SELECT l.id, l.attempt, l.outcome, l.error, l.sqlstate, l.node_id,"
	" pg_catalog.to_char(l.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'), l.duration_ms,"
	" pg_catalog.to_char(l.retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), l.channel, l.action_type,"
	" l.http_status::text, l.latency_ms::text, NULL, NULL"
	" FROM pgrelay.attempts l WHERE l.event_id = $1::bigint ORDER BY l.id LIMIT 1000";

static void
text_cell(struct WebReq *r, const char *s)
{
	buf_puts(&r->out, "<td>");
	html_esc(&r->out, s);
	buf_puts(&r->out, "</td>");
}

/*
 * waiting shows a queued event (its queue row in res): the attempt, when it is due, its key and
 * how often it snoozed, and Cancel for a role that may call pgrelay.cancel(bigint).
 */
static void
waiting(struct WebReq *r, const char *id, const PGresult *res)
{
	buf_printf(&r->out, "<p><span class=\"tag retry\">queued</span> attempt %s, %s ", web_db_value(res, 0, 0),
			   web_db_flag(res, 0, 2) ? "due since" : "due at");
	html_esc(&r->out, web_db_value(res, 0, 1));
	buf_puts(&r->out, " UTC</p>\n<p id=\"event-key\">");
	if (web_db_null(res, 0, 3))
		buf_puts(&r->out, "No key");
	else {
		buf_puts(&r->out, "Key <code>");
		html_esc(&r->out, web_db_value(res, 0, 3));
		buf_puts(&r->out, "</code> (<a href=\"/events?key=");
		url_esc(&r->out, web_db_value(res, 0, 3));
		buf_puts(&r->out, "\">events of this key</a>)");
	}
	buf_printf(&r->out, " \xC2\xB7 snoozed %s time(s)</p>", web_db_value(res, 0, 4));
	if (r->caps.act_cancel) {
		buf_puts(&r->out, "<div class=\"actions\">");
		html_form_begin(r, "/action/cancel",
						"Cancel this event? It will not run; its log keeps a cancelled attempt.");
		html_hidden(r, "event_id", id);
		html_button(r, "Cancel", true, "danger");
		buf_puts(&r->out, "</div>");
	}
}

/* status says where the event stands, with retry and discard when it failed for good. */
static void
status(struct WebReq *r, const char *id, const PGresult *att)
{
	const char *vals[1] = {id};
	PGresult *res;
	int n = att ? web_db_rows(att) : 0;

	buf_puts(&r->out, "<h2>Where it stands</h2>\n<div id=\"status\">");
	res =
		r->caps.read_failed
			? web_db_query("SELECT pg_catalog.to_char(failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
						   " attempts, error, error_kind FROM pgrelay.failed WHERE event_id = $1::bigint",
						   1, vals)
			: NULL;
	if (res != NULL && web_db_rows(res) > 0) {
		buf_puts(&r->out, "<p><span class=\"tag failed\">failed for good</span> at ");
		html_esc(&r->out, web_db_value(res, 0, 0));
		buf_printf(&r->out, " UTC after %s attempt(s): ", web_db_value(res, 0, 1));
		html_esc_cut(&r->out, web_db_value(res, 0, 2), 500);
		buf_puts(&r->out, "</p><div class=\"actions\">");
		if (!r->caps.act_failed)
			html_denied(r, "retry or discard events", "members of pgrelay_admin");
		html_form_begin(r, "/action/retry", NULL);
		html_hidden(r, "event_id", id);
		html_button(r, "Retry", r->caps.act_failed, "primary");
		buf_puts(&r->out, " ");
		html_form_begin(r, "/action/discard", "Forget this failed event? Its attempts stay in the log.");
		html_hidden(r, "event_id", id);
		html_button(r, "Discard", r->caps.act_failed, "danger");
		buf_puts(&r->out, "</div>");
	} else if (r->caps.read_queue) {
		web_db_clear(res);
		/* a retried event has a new queue row of the same event id, made after the event */
		res = web_db_query(
			"SELECT attempt, pg_catalog.to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
			" run_at <= pg_catalog.now(), key, snoozes FROM pgrelay.queue"
			" WHERE id >= $1::bigint AND event_id = $1::bigint ORDER BY id DESC LIMIT 1",
			1, vals);
		if (res != NULL && web_db_rows(res) > 0)
			waiting(r, id, res);
		else if (n > 0) {
			buf_puts(&r->out, "<p>Finished: last attempt <span class=\"tag ");
			html_esc(&r->out, web_db_value(att, n - 1, 2));
			buf_puts(&r->out, "\">");
			html_esc(&r->out, web_db_value(att, n - 1, 2));
			buf_puts(&r->out, "</span></p>");
		} else
			html_notice(r, "info", "No event with this id is queued, failed or in the log.");
	} else if (n > 0) {
		buf_puts(&r->out, "<p>Last attempt: <span class=\"tag ");
		html_esc(&r->out, web_db_value(att, n - 1, 2));
		buf_puts(&r->out, "\">");
		html_esc(&r->out, web_db_value(att, n - 1, 2));
		buf_puts(&r->out, "</span>");
		if (!web_db_null(att, n - 1, 8)) {
			buf_puts(&r->out, ", retried at ");
			html_esc(&r->out, web_db_value(att, n - 1, 8));
			buf_puts(&r->out, " UTC");
		}
		buf_puts(&r->out, "</p>");
	}
	buf_puts(&r->out, "</div>\n");
	web_db_clear(res);
}

static void
attempts_table(struct WebReq *r, const PGresult *res)
{
	int i, n = web_db_rows(res);
	bool hook = n > 0 && strcmp(web_db_value(res, 0, 10), "webhook") == 0;

	buf_puts(
		&r->out,
		"<h2>Attempts</h2>\n<table id=\"attempts\"><tr><th class=\"num\">#</th><th>Started</th>"
		"<th class=\"num\">ms</th><th>Outcome</th><th>Error</th><th>SQLSTATE</th><th class=\"num\">Node</th>"
		"<th>Retry at</th>");
	if (hook)
		buf_puts(&r->out, "<th class=\"num\">HTTP</th><th class=\"num\">Latency ms</th>");
	buf_puts(&r->out, "</tr>\n");
	for (i = 0; i < n; i++) {
		buf_printf(&r->out, "<tr><td class=\"num\">%s</td>", web_db_value(res, i, 1));
		text_cell(r, web_db_value(res, i, 6));
		buf_printf(&r->out, "<td class=\"num\">%s</td><td><span class=\"tag ", web_db_value(res, i, 7));
		html_esc(&r->out, web_db_value(res, i, 2));
		buf_puts(&r->out, "\">");
		html_esc(&r->out, web_db_value(res, i, 2));
		buf_puts(&r->out, "</span></td><td>");
		html_esc_cut(&r->out, web_db_value(res, i, 3), 2000);
		buf_puts(&r->out, "</td>");
		text_cell(r, web_db_value(res, i, 4));
		buf_printf(&r->out, "<td class=\"num\">%s</td>", web_db_value(res, i, 5));
		text_cell(r, web_db_value(res, i, 8));
		if (hook)
			buf_printf(&r->out, "<td class=\"num\">%s</td><td class=\"num\">%s</td>",
					   web_db_value(res, i, 11), web_db_value(res, i, 12));
		buf_puts(&r->out, "</tr>\n");
	}
	buf_puts(&r->out, "</table>\n");
	if (n == 0)
		html_notice(r, "info", "No attempt yet.");
	/* the recorded answers and traces of a webhook's attempts (admins: pgrelay.log's detail) */
	for (i = 0; i < n && hook; i++) {
		if (web_db_null(res, i, 13) && web_db_null(res, i, 14))
			continue;
		buf_printf(&r->out, "<details class=\"answer\"><summary>Attempt %s: the answer (HTTP %s)</summary>",
				   web_db_value(res, i, 1), web_db_null(res, i, 11) ? "none" : web_db_value(res, i, 11));
		if (!web_db_null(res, i, 13)) {
			buf_puts(&r->out, "<pre>");
			html_esc(&r->out, web_db_value(res, i, 13));
			buf_puts(&r->out, "</pre>");
		}
		if (!web_db_null(res, i, 14)) {
			buf_puts(&r->out, "<p>Trace (redacted by the Processor)</p><pre>");
			html_esc(&r->out, web_db_value(res, i, 14));
			buf_puts(&r->out, "</pre>");
		}
		buf_puts(&r->out, "</details>\n");
	}
}

/*
 * The publication an event is a delivery of (publish()): from its waiting row, else its last log
 * row, for an admin (a keyed publish() may have made a waiting event another publication's); from
 * pgrelay.attempts for a monitor (which cannot read the queue: a delivery that has not run yet
 * shows no publication to it).
 */
static const char publication_admin[] =
	"SELECT COALESCE((SELECT q.publication_id FROM pgrelay.queue q WHERE q.id >= $1::bigint"
	" AND q.event_id = $1::bigint AND q.publication_id IS NOT NULL LIMIT 1), (SELECT l.publication_id"
	" FROM pgrelay.log l WHERE l.event_id = $1::bigint AND l.publication_id IS NOT NULL ORDER BY l.id DESC"
	" LIMIT 1))";
static const char publication_monitor[] =
	"SELECT (SELECT l.publication_id FROM pgrelay.attempts l WHERE l.event_id = $1::bigint"
	" AND l.publication_id IS NOT NULL ORDER BY l.id DESC LIMIT 1)";
static const char siblings_sql[] =
	"SELECT s.event_id, s.channel, s.action_type, s.state, s.attempts, s.last_error,"
	" pg_catalog.to_char(s.last_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
	" pg_catalog.to_char(s.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
	" FROM pgrelay.publication_status($1::bigint) s LIMIT 1000";

/* state_tag is the tag class of a delivery's state (publication_status()). */
static const char *
state_tag(const char *state)
{
	if (strcmp(state, "done") == 0)
		return "ok";
	if (strcmp(state, "failed") == 0)
		return "failed";
	if (strcmp(state, "retrying") == 0)
		return "retry";
	return "";
}

static void
sibling_row(struct WebReq *r, const char *id, const PGresult *res, int i)
{
	const char *ev = web_db_value(res, i, 0);
	bool self = atoll(ev) == atoll(id); /* "007" is event 7 */

	buf_printf(&r->out, "<tr%s><td>", self ? " class=\"current\"" : "");
	if (self)
		buf_printf(&r->out, "%s (this event)", ev);
	else
		buf_printf(&r->out, "<a href=\"/event?id=%s\">%s</a>", ev, ev);
	buf_puts(&r->out, "</td>");
	text_cell(r, web_db_value(res, i, 1));
	text_cell(r, web_db_value(res, i, 2));
	buf_printf(&r->out, "<td><span class=\"tag %s\">", state_tag(web_db_value(res, i, 3)));
	html_esc(&r->out, web_db_value(res, i, 3));
	buf_printf(&r->out, "</span></td><td class=\"num\">%s</td><td>", web_db_value(res, i, 4));
	html_esc_cut(&r->out, web_db_value(res, i, 5), 500);
	buf_puts(&r->out, "</td>");
	text_cell(r, web_db_value(res, i, 6));
	text_cell(r, web_db_value(res, i, 7));
	buf_puts(&r->out, "</tr>\n");
}

/*
 * publication shows, for a delivery of a publication, the publication's id and every delivery of
 * it (pgrelay.publication_status()), each linked to its page. Nothing for an event of notify().
 */
static void
publication(struct WebReq *r, const char *id)
{
	const char *vals[1] = {id};
	PGresult *res;
	bool admin = r->caps.read_log && r->caps.read_queue;
	char pub[24];
	int i;

	if (!r->caps.read_pubs || (!admin && !r->caps.read_attempts))
		return;
	res = web_db_query(admin ? publication_admin : publication_monitor, 1, vals);
	if (res == NULL) {
		html_db_error(r, "the event's publication");
		return;
	}
	if (web_db_rows(res) == 0 || web_db_null(res, 0, 0)) {
		web_db_clear(res);
		return;
	}
	snprintf(pub, sizeof pub, "%s", web_db_value(res, 0, 0));
	web_db_clear(res);
	vals[0] = pub;
	buf_printf(&r->out,
			   "<h2>Publication</h2>\n<p id=\"publication\">A delivery of publication <code>%s</code>"
			   " (published ",
			   pub);
	web_id_time(&r->out, atoll(pub));
	buf_puts(&r->out, " UTC): one event on each channel subscribed to its topic.</p>\n");
	res = web_db_query(siblings_sql, 1, vals);
	if (res == NULL) {
		html_db_error(r, "the deliveries of the publication");
		return;
	}
	buf_puts(&r->out,
			 "<table id=\"siblings\"><tr><th>Event</th><th>Channel</th><th>Type</th><th>State</th>"
			 "<th class=\"num\">Attempts</th><th>Last error</th><th>Last attempt</th><th>Due</th></tr>\n");
	for (i = 0; i < web_db_rows(res); i++)
		sibling_row(r, id, res, i);
	buf_puts(&r->out, "</table>\n");
	web_db_clear(res);
}

static void
payload(struct WebReq *r, const char *id, char *notification, size_t len)
{
	const char *vals[1] = {id};
	PGresult *res;

	notification[0] = '\0';
	buf_puts(&r->out, "<h2>Payload</h2>\n");
	if (!r->caps.read_log) {
		html_denied(r, "read payloads (pgrelay.log)", "members of pgrelay_admin");
		return;
	}
	res = web_db_query("SELECT pg_catalog.left(payload, 65536), pg_catalog.octet_length(payload), action_type"
					   " FROM pgrelay.log WHERE event_id = $1::bigint ORDER BY id LIMIT 1",
					   1, vals);
	if (res != NULL && web_db_rows(res) == 0 && r->caps.read_queue) {
		web_db_clear(res);
		res = web_db_query(
			"SELECT pg_catalog.left(payload, 65536), pg_catalog.octet_length(payload), action_type"
			" FROM pgrelay.queue WHERE id = $1::bigint",
			1, vals);
	}
	if (res == NULL) {
		html_db_error(r, "the payload");
		return;
	}
	if (web_db_rows(res) == 0)
		buf_puts(&r->out, "<p class=\"muted\">No payload recorded.</p>\n");
	else {
		buf_printf(&r->out, "<p class=\"muted\">%s bytes%s</p><pre id=\"payload\">", web_db_value(res, 0, 1),
				   atoll(web_db_value(res, 0, 1)) > PAYLOAD_SHOWN ? ", the first 64 KiB shown" : "");
		html_esc(&r->out, web_db_value(res, 0, 0));
		buf_puts(&r->out, "</pre>\n");
		if (strcmp(web_db_value(res, 0, 2), "notify") == 0)
			snprintf(notification, len, "%s", web_db_value(res, 0, 0));
	}
	web_db_clear(res);
}

static void
recipients(struct WebReq *r, const char *nid)
{
	const char *vals[1] = {nid};
	PGresult *res = web_db_query("SELECT kind, address, name, status, code, pg_catalog.left(reply, 500)"
								 " FROM pgrelay_notifier.recipients WHERE notification_id = $1::bigint"
								 " ORDER BY recipient_id LIMIT 500",
								 1, vals);
	int i;

	if (res == NULL) {
		html_db_error(r, "the recipients");
		return;
	}
	buf_puts(&r->out,
			 "<h3>Recipients</h3><table id=\"recipients\"><tr><th>Kind</th><th>Address</th><th>Name</th>"
			 "<th>Status</th><th class=\"num\">Code</th><th>Reply</th></tr>\n");
	for (i = 0; i < web_db_rows(res); i++) {
		buf_puts(&r->out, "<tr>");
		text_cell(r, web_db_value(res, i, 0));
		text_cell(r, web_db_value(res, i, 1));
		text_cell(r, web_db_value(res, i, 2));
		text_cell(r, web_db_value(res, i, 3));
		buf_printf(&r->out, "<td class=\"num\">%s</td>", web_db_value(res, i, 4));
		text_cell(r, web_db_value(res, i, 5));
		buf_puts(&r->out, "</tr>\n");
	}
	buf_puts(&r->out, "</table>\n");
	web_db_clear(res);
}

static void
deliveries(struct WebReq *r, const char *nid)
{
	PGresult *res =
		web_db_query("SELECT a.attempt, a.outcome, a.transport, a.reply_code, pg_catalog.left(a.reply, 1000),"
					 " a.provider_message_id, a.error, a.unknown_outcome,"
					 " pg_catalog.to_char(a.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
					 " CASE WHEN $2::boolean THEN (SELECT pg_catalog.left(t.trace, 65536) FROM "
					 "pgrelay_notifier.attempt_traces t"
					 " WHERE t.attempt_id = a.attempt_id) END"
					 " FROM pgrelay_notifier.attempts a WHERE a.notification_id = $1::bigint ORDER BY "
					 "a.attempt_id LIMIT 100",
					 2, (const char *const[]){nid, r->caps.read_traces ? "t" : "f"});
	int i;

	if (res == NULL) {
		html_db_error(r, "the delivery attempts");
		return;
	}
	buf_puts(
		&r->out,
		"<h3>Delivery attempts</h3><table id=\"deliveries\"><tr><th class=\"num\">#</th><th>Finished</th>"
		"<th>Outcome</th><th>Transport</th><th class=\"num\">Reply code</th><th>Reply</th>"
		"<th>Provider id</th><th>Error</th></tr>\n");
	for (i = 0; i < web_db_rows(res); i++) {
		buf_printf(&r->out, "<tr><td class=\"num\">%s</td>", web_db_value(res, i, 0));
		text_cell(r, web_db_value(res, i, 8));
		buf_puts(&r->out, "<td>");
		html_esc(&r->out, web_db_value(res, i, 1));
		if (web_db_flag(res, i, 7))
			buf_puts(&r->out, " <span class=\"tag warn\">unknown outcome</span>");
		buf_puts(&r->out, "</td>");
		text_cell(r, web_db_value(res, i, 2));
		buf_printf(&r->out, "<td class=\"num\">%s</td>", web_db_value(res, i, 3));
		text_cell(r, web_db_value(res, i, 4));
		text_cell(r, web_db_value(res, i, 5));
		text_cell(r, web_db_value(res, i, 6));
		buf_puts(&r->out, "</tr>\n");
	}
	buf_puts(&r->out, "</table>\n");
	for (i = 0; i < web_db_rows(res); i++) {
		if (web_db_null(res, i, 9))
			continue;
		buf_printf(&r->out,
				   "<details class=\"trace\"><summary>Attempt %s: the trace (redacted)</summary><pre>",
				   web_db_value(res, i, 0));
		html_esc(&r->out, web_db_value(res, i, 9));
		buf_puts(&r->out, "</pre></details>\n");
	}
	if (!r->caps.read_traces)
		html_denied(r, "read the delivery traces (pgrelay_notifier.attempt_traces)",
					"members of pgrelay_admin");
	web_db_clear(res);
}

/* email shows the notification an email event delivers (its payload is the notification's id). */
static void
email(struct WebReq *r, const char *nid)
{
	const char *vals[1] = {nid};
	PGresult *res;

	buf_puts(&r->out, "<h2>Email</h2>\n");
	if (!r->caps.read_mail) {
		html_denied(r, "read the notifier's deliveries (recipients, replies)", "members of pgrelay_admin");
		return;
	}
	if (strspn(nid, "0123456789") != strlen(nid) || strlen(nid) == 0 || strlen(nid) > 18) {
		html_notice(r, "warn", "The payload is not a notification id.");
		return;
	}
	res = web_db_query(
		"SELECT notification_id, status, subject, from_address, message_id, attempts, last_error,"
		" pg_catalog.to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), profile"
		" FROM pgrelay_notifier.notifications WHERE notification_id = $1::bigint",
		1, vals);
	if (res == NULL) {
		html_db_error(r, "the notification");
		return;
	}
	if (web_db_rows(res) == 0) {
		html_notice(r, "info", "The notification is gone (purged or never made).");
		web_db_clear(res);
		return;
	}
	buf_puts(&r->out, "<table id=\"notification\"><tr><th>Notification</th><td>");
	html_esc(&r->out, web_db_value(res, 0, 0));
	buf_puts(&r->out, "</td></tr><tr><th>Status</th><td><span class=\"tag\">");
	html_esc(&r->out, web_db_value(res, 0, 1));
	buf_puts(&r->out, "</span></td></tr><tr><th>Subject</th><td>");
	html_esc(&r->out, web_db_value(res, 0, 2));
	buf_puts(&r->out, "</td></tr><tr><th>From</th><td>");
	html_esc(&r->out, web_db_value(res, 0, 3));
	buf_puts(&r->out, "</td></tr><tr><th>Profile</th><td>");
	html_esc(&r->out, web_db_value(res, 0, 8));
	buf_puts(&r->out, "</td></tr><tr><th>Message-ID</th><td>");
	html_esc(&r->out, web_db_value(res, 0, 4));
	buf_puts(&r->out, "</td></tr><tr><th>Sent</th><td>");
	html_esc(&r->out, web_db_value(res, 0, 7));
	buf_puts(&r->out, "</td></tr></table>\n");
	web_db_clear(res);
	recipients(r, nid);
	deliveries(r, nid);
}

void
page_event(struct WebReq *r)
{
	const char *id = web_arg(r, "id");
	const char *vals[1] = {id};
	char notification[32], title[64];
	PGresult *att = NULL;

	if (id == NULL || strspn(id, "0123456789") != strlen(id) || strlen(id) > 18) {
		html_message_page(r, 400, "Event", "An event id is a number: /event?id=123.");
		return;
	}
	snprintf(title, sizeof title, "Event %s", id);
	html_begin(r, title, "/events", false);
	if (!r->caps.read_log && !r->caps.read_attempts)
		html_denied(r, "read the attempts (pgrelay.attempts)",
					"members of pgrelay_monitor and pgrelay_admin");
	else {
		att = web_db_query(r->caps.read_log ? attempts_admin : attempts_monitor, 1, vals);
		if (att == NULL)
			html_db_error(r, "the attempts");
		else if (web_db_rows(att) > 0) {
			buf_puts(&r->out, "<p id=\"event-channel\">Channel <a href=\"/events?channel=");
			url_esc(&r->out, web_db_value(att, 0, 9));
			buf_puts(&r->out, "\">");
			html_esc(&r->out, web_db_value(att, 0, 9));
			buf_puts(&r->out, "</a>, action type ");
			html_esc(&r->out, web_db_value(att, 0, 10));
			buf_puts(&r->out, "</p>\n");
		}
	}
	status(r, id, att);
	payload(r, id, notification, sizeof notification);
	if (att != NULL)
		attempts_table(r, att);
	publication(r, id);
	if (notification[0] || (att != NULL && web_db_rows(att) > 0 &&
							strcmp(web_db_value(att, 0, 10), "notify") == 0 && !r->caps.read_log))
		email(r, notification);
	web_db_clear(att);
	html_end(r);
}
