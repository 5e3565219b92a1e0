/*
 * pages_failures.c - the events that failed for good (pgrelay.failed), by channel, time and
 * error, a page at a time, with retry and discard of the whole set the filter selects
 * (pgrelay.retry_failed() and discard_failed() by filter).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_query.h"

#define PAGE_ROWS 50

struct Filters {
	const char *channel, *after, *before, *error, *below;
};

/* where appends the filter's conditions (their values as parameters). */
static void
where(struct Query *q, const struct Filters *f)
{
	buf_puts(&q->sql, " WHERE true");
	if (f->channel)
		buf_printf(&q->sql, " AND f.channel = $%d", query_param(q, f->channel));
	if (f->after)
		buf_printf(&q->sql, " AND f.failed_at >= $%d::timestamptz", query_param(q, f->after));
	if (f->before)
		buf_printf(&q->sql, " AND f.failed_at < $%d::timestamptz", query_param(q, f->before));
	if (f->error)
		buf_printf(&q->sql, " AND f.error LIKE $%d", query_param(q, f->error));
}

static void
field(struct WebReq *r, const char *label, const char *name, const char *value, const char *placeholder)
{
	buf_printf(&r->out, "<label>%s<input name=\"%s\" value=\"", label, name);
	html_esc(&r->out, value ? value : "");
	buf_printf(&r->out, "\" placeholder=\"%s\"></label>", placeholder);
}

static void
set_form(struct WebReq *r, const struct Filters *f, const char *action, const char *label, const char *count,
		 const char *cls)
{
	char confirm[160];

	snprintf(confirm, sizeof confirm, "%s %s failed event(s)%s?", label, count,
			 f->channel ? "" : " of every channel");
	html_form_begin(r, action, confirm);
	html_hidden(r, "channel", f->channel);
	html_hidden(r, "after", f->after);
	html_hidden(r, "before", f->before);
	html_hidden(r, "error", f->error);
	html_hidden(r, "all", f->channel ? "" : "1");
	html_button(r, label, r->caps.act_failed, cls);
}

static void
link(struct Buf *b, const struct Filters *f, const char *below)
{
	const char *names[] = {"channel", "after", "before", "error", "below"};
	const char *vals[] = {f->channel, f->after, f->before, f->error, below};
	size_t i;
	bool first = true;

	buf_puts(b, "/failures");
	for (i = 0; i < 5; i++) {
		if (vals[i] == NULL)
			continue;
		buf_printf(b, "%s%s=", first ? "?" : "&amp;", names[i]);
		url_esc(b, vals[i]);
		first = false;
	}
}

void
page_failures(struct WebReq *r)
{
	struct Filters f = {web_arg(r, "channel"), web_arg(r, "after"), web_arg(r, "before"), web_arg(r, "error"),
						web_arg(r, "below")};
	struct Query q = {BUF_INIT, {0}, {{0}}, 0};
	PGresult *res;
	char count[32];
	int i, n;

	html_begin(r, "Failures", "/failures", true);
	if (!r->caps.read_failed) {
		html_denied(r, "read the failed events (pgrelay.failed)",
					"members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	buf_puts(&r->out, "<form class=\"search\" method=\"get\" action=\"/failures\">");
	field(r, "Channel", "channel", f.channel, "any");
	field(r, "Failed from (UTC)", "after", f.after, "2026-12-01 10:00");
	field(r, "Failed before (UTC)", "before", f.before, "now");
	field(r, "Error LIKE", "error", f.error, "%timeout%");
	buf_puts(
		&r->out,
		"<button type=\"submit\" class=\"primary\">Filter</button> <a href=\"/failures\">clear</a></form>\n");
	if (f.below && !web_digits(f.below)) {
		html_notice(r, "warn", "below must be an event id.");
		html_end(r);
		return;
	}
	buf_puts(&q.sql, "SELECT pg_catalog.count(*) FROM pgrelay.failed f");
	where(&q, &f);
	res = query_run(&q);
	if (res == NULL) {
		html_db_error(r, "the filter");
		html_end(r);
		return;
	}
	snprintf(count, sizeof count, "%s", web_db_value(res, 0, 0));
	web_db_clear(res);
	buf_printf(&r->out, "<div id=\"failed-count\"><b>%s</b> failed event(s) match%s. ", count,
			   f.channel ? "" : " (every channel)");
	if (strcmp(count, "0") != 0) {
		set_form(r, &f, "/action/retry-failed", "Retry all", count, "primary");
		buf_puts(&r->out, " ");
		set_form(r, &f, "/action/discard-failed", "Discard all", count, "danger");
	}
	buf_puts(&r->out, "</div>\n");
	if (!r->caps.act_failed)
		html_denied(r, "retry or discard events", "members of pgrelay_admin");
	memset(&q, 0, sizeof q);
	buf_puts(
		&q.sql,
		"SELECT f.event_id, f.channel, pg_catalog.to_char(f.failed_at AT TIME ZONE 'UTC',"
		" 'YYYY-MM-DD HH24:MI:SS'), f.attempts, f.error, f.sqlstate, f.error_kind FROM pgrelay.failed f");
	where(&q, &f);
	if (f.below)
		buf_printf(&q.sql, " AND f.event_id < $%d::bigint", query_param(&q, f.below));
	buf_printf(&q.sql, " ORDER BY f.event_id DESC LIMIT %d", PAGE_ROWS + 1);
	res = query_run(&q);
	if (res == NULL) {
		html_db_error(r, "pgrelay.failed");
		html_end(r);
		return;
	}
	n = web_db_rows(res);
	buf_puts(&r->out, "<table id=\"failures\"><tr><th>Event</th><th>Channel</th><th>Failed at</th>"
					  "<th class=\"num\">Attempts</th><th>Error</th><th>SQLSTATE</th><th>Kind</th></tr>\n");
	for (i = 0; i < n && i < PAGE_ROWS; i++) {
		buf_printf(&r->out, "<tr><td><a href=\"/event?id=%s\">%s</a></td><td>", web_db_value(res, i, 0),
				   web_db_value(res, i, 0));
		html_esc(&r->out, web_db_value(res, i, 1));
		buf_puts(&r->out, "</td><td>");
		html_esc(&r->out, web_db_value(res, i, 2));
		buf_printf(&r->out, "</td><td class=\"num\">%s</td><td>", web_db_value(res, i, 3));
		html_esc_cut(&r->out, web_db_value(res, i, 4), 300);
		buf_puts(&r->out, "</td><td>");
		html_esc(&r->out, web_db_value(res, i, 5));
		buf_puts(&r->out, "</td><td>");
		html_esc(&r->out, web_db_value(res, i, 6));
		buf_puts(&r->out, "</td></tr>\n");
	}
	buf_puts(&r->out, "</table>\n<p class=\"pager\">");
	if (n > PAGE_ROWS) {
		buf_puts(&r->out, "<a id=\"older\" href=\"");
		link(&r->out, &f, web_db_value(res, PAGE_ROWS - 1, 0));
		buf_puts(&r->out, "\">Older \xE2\x86\x92</a>");
	}
	if (f.below) {
		buf_puts(&r->out, " <a href=\"");
		link(&r->out, &f, NULL);
		buf_puts(&r->out, "\">Newest</a>");
	}
	buf_puts(&r->out, "</p>\n");
	web_db_clear(res);
	html_end(r);
}
