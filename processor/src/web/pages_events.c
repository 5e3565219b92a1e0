/*
 * pages_events.c - the attempts of pgrelay.log, newest first, by channel, outcome, event id, time
 * range and (for roles that may read payloads) payload text, a page at a time. Each page reads at
 * most SCAN_MAX rows through an index that its filters choose; filters no index serves (payload
 * text, outcome ok) are applied to those rows, and the page says how far back it looked.
 * Monitors read pgrelay.attempts, the same rows without payloads. A key lives in the queue only
 * (it goes when its event finishes): for roles that may read pgrelay.queue each attempt shows the
 * key and snoozes of its event while the event waits, and the key filter lists the events that
 * wait with the key and their attempts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_query.h"

#define PAGE_ROWS 50
#define SCAN_MAX 5000

static const char *const outcomes[] = {"ok",     "partial",   "retry",   "timeout",
									   "failed", "cancelled", "snoozed", NULL};

struct Filters {
	const char *channel, *outcome, *event, *from, *to, *text, *key, *before;
};

static bool
known_outcome(const char *o)
{
	int i;

	for (i = 0; outcomes[i]; i++)
		if (strcmp(outcomes[i], o) == 0)
			return true;
	return false;
}

/* link appends /events?... with the filters and before. */
static void
link(struct Buf *b, const struct Filters *f, const char *before)
{
	const char *names[] = {"channel", "outcome", "event", "from", "to", "q", "key", "before"};
	const char *vals[] = {f->channel, f->outcome, f->event, f->from, f->to, f->text, f->key, before};
	bool first = true;
	size_t i;

	buf_puts(b, "/events");
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (vals[i] == NULL)
			continue;
		buf_printf(b, "%s%s=", first ? "?" : "&amp;", names[i]);
		url_esc(b, vals[i]);
		first = false;
	}
}

static void
input(struct WebReq *r, const char *label, const char *name, const char *value, const char *placeholder,
	  bool enabled)
{
	buf_printf(&r->out, "<label>%s<input name=\"%s\" value=\"", label, name);
	html_esc(&r->out, value ? value : "");
	buf_printf(&r->out, "\" placeholder=\"%s\"%s%s></label>", placeholder, enabled ? "" : " disabled",
			   strcmp(name, "channel") == 0 ? " list=\"channel-names\"" : "");
}

static void
search_form(struct WebReq *r, const struct Filters *f)
{
	PGresult *res =
		web_db_query("SELECT channel FROM pgrelay.queue_depth ORDER BY channel LIMIT 500", 0, NULL);
	int i;

	buf_puts(&r->out, "<form class=\"search\" method=\"get\" action=\"/events\">");
	input(r, "Channel", "channel", f->channel, "any", true);
	buf_puts(&r->out, "<label>Outcome<select name=\"outcome\"><option value=\"\">any</option>");
	for (i = 0; outcomes[i]; i++)
		buf_printf(&r->out, "<option%s>%s</option>",
				   f->outcome && strcmp(f->outcome, outcomes[i]) == 0 ? " selected" : "", outcomes[i]);
	buf_puts(&r->out, "</select></label>");
	input(r, "Event id", "event", f->event, "any", true);
	input(r, "From (UTC)", "from", f->from, "2026-12-01 10:00", true);
	input(r, "To (UTC)", "to", f->to, "now", true);
	input(r, "Payload contains", "q", r->caps.read_log ? f->text : NULL,
		  r->caps.read_log ? "text" : "your role may not read payloads", r->caps.read_log);
	input(r, "Key", "key", r->caps.read_queue ? f->key : NULL,
		  r->caps.read_queue ? "exact" : "your role may not read the queue", r->caps.read_queue);
	buf_puts(
		&r->out,
		"<button type=\"submit\" class=\"primary\">Search</button> <a href=\"/events\">clear</a></form>\n");
	if (res != NULL) {
		buf_puts(&r->out, "<datalist id=\"channel-names\">");
		for (i = 0; i < web_db_rows(res); i++) {
			buf_puts(&r->out, "<option value=\"");
			html_esc(&r->out, web_db_value(res, i, 0));
			buf_puts(&r->out, "\">");
		}
		buf_puts(&r->out, "</datalist>\n");
		web_db_clear(res);
	}
}

/*
 * scan finds the ids of the page: the newest SCAN_MAX rows the indexed filters select, the hits
 * among them. Fills the hit ids (as an array literal) and how far the scan went.
 */
static PGresult *
scan(struct WebReq *r, const struct Filters *f, const char *src)
{
	struct Query q = {BUF_INIT, {0}, {{0}}, 0};
	struct Buf hit = BUF_INIT;

	buf_printf(&q.sql, "WITH scan AS MATERIALIZED (SELECT l.id, true");
	if (f->outcome && strcmp(f->outcome, "ok") == 0)
		buf_puts(&hit, " AND l.outcome = 'ok'");
	if (f->text && r->caps.read_log)
		buf_printf(&hit, " AND pg_catalog.strpos(pg_catalog.lower(l.payload), pg_catalog.lower($%d)) > 0",
				   query_param(&q, f->text));
	buf_puts(&q.sql, hit.data ? hit.data : "");
	buf_free(&hit);
	buf_printf(&q.sql, " AS hit FROM %s l WHERE l.id < $%d::bigint", src,
			   query_param(&q, f->before ? f->before : "9223372036854775807"));
	/* a time as the smallest log id made then, as pgrelay._id_floor() (which monitors may not run) */
	if (f->from)
		buf_printf(&q.sql,
				   " AND l.id >= (GREATEST(pg_catalog.floor(pg_catalog.date_part('epoch', $%d::timestamptz)"
				   " * 1000)::bigint - 1767225600000, 0) << 22)",
				   query_param(&q, f->from));
	if (f->to)
		buf_printf(&q.sql,
				   " AND l.id < (GREATEST(pg_catalog.floor(pg_catalog.date_part('epoch', $%d::timestamptz)"
				   " * 1000)::bigint - 1767225600000, 0) << 22)",
				   query_param(&q, f->to));
	if (f->channel)
		buf_printf(&q.sql, " AND l.channel = $%d", query_param(&q, f->channel));
	if (f->outcome && strcmp(f->outcome, "ok") != 0)
		buf_printf(&q.sql, " AND l.outcome = $%d", query_param(&q, f->outcome));
	if (f->event)
		buf_printf(&q.sql, " AND l.event_id = $%d::bigint", query_param(&q, f->event));
	if (f->key)
		buf_printf(&q.sql, " AND l.event_id IN (SELECT w.event_id FROM pgrelay.queue w WHERE w.key = $%d)",
				   query_param(&q, f->key));
	buf_printf(&q.sql,
			   " ORDER BY l.id DESC LIMIT %d)"
			   " SELECT (SELECT pg_catalog.count(*) FROM scan), (SELECT pg_catalog.min(id) FROM scan),"
			   " ARRAY(SELECT id FROM scan WHERE hit ORDER BY id DESC LIMIT %d)::text",
			   SCAN_MAX, PAGE_ROWS + 1);
	return query_run(&q);
}

/*
 * waiting lists the events that wait with the filter's key (and channel): a key's event may not
 * have run yet, so the log alone would not show it.
 */
static void
waiting(struct WebReq *r, const struct Filters *f)
{
	struct Query q = {BUF_INIT, {0}, {{0}}, 0};
	PGresult *res;
	int i, n;

	buf_printf(&q.sql,
			   "SELECT w.event_id, w.channel, w.attempt,"
			   " pg_catalog.to_char(w.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), w.snoozes"
			   " FROM pgrelay.queue w WHERE w.key = $%d",
			   query_param(&q, f->key));
	if (f->channel)
		buf_printf(&q.sql, " AND w.channel = $%d", query_param(&q, f->channel));
	buf_printf(&q.sql, " ORDER BY w.id LIMIT %d", PAGE_ROWS);
	res = query_run(&q);
	if (res == NULL) {
		html_db_error(r, "the events of the key");
		return;
	}
	n = web_db_rows(res);
	buf_puts(&r->out, "<h2>Waiting with this key</h2>\n");
	if (n == 0)
		html_notice(r, "info", "No event waits with this key (a key goes when its event finishes).");
	else {
		buf_puts(&r->out,
				 "<table id=\"key-waiting\"><tr><th>Event</th><th>Channel</th>"
				 "<th class=\"num\">Attempt</th><th>Due at</th><th class=\"num\">Snoozes</th></tr>\n");
		for (i = 0; i < n; i++) {
			buf_printf(&r->out, "<tr><td><a href=\"/event?id=%s\">%s</a></td><td>", web_db_value(res, i, 0),
					   web_db_value(res, i, 0));
			html_esc(&r->out, web_db_value(res, i, 1));
			buf_printf(&r->out, "</td><td class=\"num\">%s</td><td>", web_db_value(res, i, 2));
			html_esc(&r->out, web_db_value(res, i, 3));
			buf_printf(&r->out, "</td><td class=\"num\">%s</td></tr>\n", web_db_value(res, i, 4));
		}
		buf_puts(&r->out, "</table>\n");
	}
	buf_puts(&r->out, "<h2>Their attempts</h2>\n");
	web_db_clear(res);
}

/*
 * rows_sql reads the page's attempts; for a role that may read the queue, with the key and snoozes
 * of each event that still waits (one range of the queue's primary key: a retry's row is made
 * after its event, so from the page's oldest event on).
 */
static void
rows_sql(struct WebReq *r, struct Query *q, const char *src, const char *ids)
{
	buf_printf(
		&q->sql,
		"WITH page AS (SELECT l.id, l.event_id, l.channel, l.action_type, l.attempt, l.outcome, l.error,"
		" l.sqlstate, l.node_id,"
		" pg_catalog.to_char(l.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS finished,"
		" round((pg_catalog.date_part('epoch', l.finished_at - l.started_at) * 1000)::numeric, 1) AS ms"
		" FROM %s l WHERE l.id = ANY ($%d::bigint[]))",
		src, query_param(q, ids));
	if (r->caps.read_queue)
		buf_puts(&q->sql,
				 ", w AS (SELECT DISTINCT ON (x.event_id) x.event_id, x.key, x.snoozes"
				 " FROM pgrelay.queue x WHERE x.id >= (SELECT pg_catalog.min(p.event_id) FROM page p)"
				 " AND x.event_id IN (SELECT p.event_id FROM page p) ORDER BY x.event_id, x.id DESC)"
				 " SELECT p.*, w.key, w.snoozes FROM page p LEFT JOIN w USING (event_id)");
	else
		buf_puts(&q->sql, " SELECT p.*, NULL, NULL FROM page p");
	buf_puts(&q->sql, " ORDER BY id DESC");
}

static void
rows(struct WebReq *r, const struct Filters *f, const char *src, const char *ids, long long scanned,
	 const char *scanned_to)
{
	struct Query q = {BUF_INIT, {0}, {{0}}, 0};
	PGresult *res;
	int i, n;

	rows_sql(r, &q, src, ids);
	res = query_run(&q);
	if (res == NULL) {
		html_db_error(r, "the attempts");
		return;
	}
	n = web_db_rows(res);
	if (n == 0)
		html_notice(r, "info", "No attempt matches.");
	else {
		buf_puts(&r->out,
				 "<table id=\"events\"><tr><th>Finished</th><th>Event</th><th>Channel</th><th>Type</th>"
				 "<th class=\"num\">Attempt</th><th>Outcome</th><th>Error</th><th>SQLSTATE</th>"
				 "<th class=\"num\">ms</th><th class=\"num\">Node</th>");
		if (r->caps.read_queue)
			buf_puts(&r->out, "<th>Key (waiting)</th><th class=\"num\">Snoozes</th>");
		buf_puts(&r->out, "</tr>\n");
		for (i = 0; i < n && i < PAGE_ROWS; i++) {
			buf_puts(&r->out, "<tr><td>");
			html_esc(&r->out, web_db_value(res, i, 9));
			buf_printf(&r->out, "</td><td><a href=\"/event?id=%s\">%s</a></td><td>", web_db_value(res, i, 1),
					   web_db_value(res, i, 1));
			html_esc(&r->out, web_db_value(res, i, 2));
			buf_puts(&r->out, "</td><td>");
			html_esc(&r->out, web_db_value(res, i, 3));
			buf_printf(&r->out, "</td><td class=\"num\">%s</td><td><span class=\"tag ",
					   web_db_value(res, i, 4));
			html_esc(&r->out, web_db_value(res, i, 5));
			buf_puts(&r->out, "\">");
			html_esc(&r->out, web_db_value(res, i, 5));
			buf_puts(&r->out, "</span></td><td>");
			html_esc_cut(&r->out, web_db_value(res, i, 6), 160);
			buf_puts(&r->out, "</td><td>");
			html_esc(&r->out, web_db_value(res, i, 7));
			buf_printf(&r->out, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td>",
					   web_db_value(res, i, 10), web_db_value(res, i, 8));
			if (r->caps.read_queue) {
				buf_puts(&r->out, "<td>");
				html_esc_cut(&r->out, web_db_value(res, i, 11), 80);
				buf_printf(&r->out, "</td><td class=\"num\">%s</td>", web_db_value(res, i, 12));
			}
			buf_puts(&r->out, "</tr>\n");
		}
		buf_puts(&r->out, "</table>\n");
	}
	buf_puts(&r->out, "<p class=\"pager\">");
	if (n > PAGE_ROWS) {
		buf_puts(&r->out, "<a id=\"older\" href=\"");
		link(&r->out, f, web_db_value(res, PAGE_ROWS - 1, 0));
		buf_puts(&r->out, "\">Older \xE2\x86\x92</a>");
	} else if (scanned >= SCAN_MAX) {
		buf_printf(&r->out, "Looked through %lld attempts back to ", scanned);
		web_id_time(&r->out, atoll(scanned_to));
		buf_puts(&r->out, " UTC. <a id=\"older\" href=\"");
		link(&r->out, f, scanned_to);
		buf_puts(&r->out, "\">Look further back \xE2\x86\x92</a>");
	} else
		buf_puts(&r->out, "<span class=\"muted\">No older attempts.</span>");
	if (f->before) {
		buf_puts(&r->out, " \xC2\xB7 <a href=\"");
		link(&r->out, f, NULL);
		buf_puts(&r->out, "\">Newest</a>");
	}
	buf_puts(&r->out, "</p>\n");
	web_db_clear(res);
}

void
page_events(struct WebReq *r)
{
	struct Filters f = {web_arg(r, "channel"), web_arg(r, "outcome"), web_arg(r, "event"),
						web_arg(r, "from"),    web_arg(r, "to"),      web_arg(r, "q"),
						web_arg(r, "key"),     web_arg(r, "before")};
	const char *src = r->caps.read_log ? "pgrelay.log" : "pgrelay.attempts";
	PGresult *res;

	html_begin(r, "Events", "/events", false);
	if (!r->caps.read_log && !r->caps.read_attempts) {
		html_denied(r, "read the attempts (pgrelay.attempts)",
					"members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	if (!r->caps.read_log)
		html_denied(r, "read payloads or the attempts' details (pgrelay.log)", "members of pgrelay_admin");
	search_form(r, &f);
	if ((f.outcome && !known_outcome(f.outcome)) || (f.event && !web_digits(f.event)) ||
		(f.before && !web_digits(f.before))) {
		html_notice(r, "warn", "The outcome must be one of the list, and an event id a number.");
		html_end(r);
		return;
	}
	if (f.text && !r->caps.read_log)
		f.text = NULL;
	if (f.key && !r->caps.read_queue)
		f.key = NULL;
	if (f.key && !f.before)
		waiting(r, &f);
	res = scan(r, &f, src);
	if (res == NULL) {
		if (strncmp(web_db_sqlstate(), "22", 2) == 0)
			html_notice(r, "warn",
						"A filter is not valid: times are written 2026-12-01 10:00 (UTC unless +02 and the "
						"like follow).");
		html_db_error(r, "the search");
	} else {
		rows(r, &f, src, web_db_value(res, 0, 2), atoll(web_db_value(res, 0, 0)), web_db_value(res, 0, 1));
		web_db_clear(res);
	}
	html_end(r);
}
