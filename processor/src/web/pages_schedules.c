/*
 * pages_schedules.c - the recurring events (pgrelay.schedules): each schedule's channel, cron
 * expression and time zone, whether it is active, its next run and the run fired last (how, why
 * not when it failed, and the event it queued), and for a role that may call pgrelay.schedule()
 * a Pause or Resume button (schedule(name, active => ...)). The view has no payload: monitors read
 * it too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"

static const char schedules_sql[] =
	"SELECT s.name, s.channel, s.cron, s.timezone, s.active, s.catch_up,"
	" pg_catalog.to_char(s.next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
	" pg_catalog.to_char(s.last_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
	" s.last_outcome, s.last_reason, s.last_event_id, s.due"
	" FROM pgrelay.schedules s ORDER BY s.name LIMIT 500";

static void
cell(struct WebReq *r, const PGresult *res, int row, int col)
{
	buf_puts(&r->out, "<td>");
	html_esc(&r->out, web_db_value(res, row, col));
	buf_puts(&r->out, "</td>");
}

/* last_run shows the occurrence fired last: its time, how (queued, skipped, failed), and why not. */
static void
last_run(struct WebReq *r, const PGresult *res, int i)
{
	cell(r, res, i, 7);
	buf_puts(&r->out, "<td class=\"outcome\">");
	if (!web_db_null(res, i, 8)) {
		buf_puts(&r->out, "<span class=\"tag ");
		html_esc(&r->out, web_db_value(res, i, 8));
		buf_puts(&r->out, "\">");
		html_esc(&r->out, web_db_value(res, i, 8));
		buf_puts(&r->out, "</span>");
	}
	if (!web_db_null(res, i, 9)) {
		buf_puts(&r->out, " ");
		html_esc_cut(&r->out, web_db_value(res, i, 9), 300);
	}
	buf_puts(&r->out, "</td><td>");
	if (!web_db_null(res, i, 10))
		buf_printf(&r->out, "<a href=\"/event?id=%s\">%s</a>", web_db_value(res, i, 10),
				   web_db_value(res, i, 10));
	buf_puts(&r->out, "</td>");
}

static void
active_form(struct WebReq *r, const char *name, bool active)
{
	html_form_begin(r, active ? "/action/schedule-pause" : "/action/schedule-resume", NULL);
	html_hidden(r, "name", name);
	html_button(r, active ? "Pause" : "Resume", true, active ? "danger" : "primary");
}

void
page_schedules(struct WebReq *r)
{
	PGresult *res;
	int i, n;

	html_begin(r, "Schedules", "/schedules", true);
	if (!r->caps.read_schedules) {
		html_denied(r, "read the schedules (pgrelay.schedules)",
					"members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	res = web_db_query(schedules_sql, 0, NULL);
	if (res == NULL) {
		html_db_error(r, "pgrelay.schedules");
		html_end(r);
		return;
	}
	n = web_db_rows(res);
	if (n == 0) {
		html_notice(
			r, "info",
			"No schedule is defined. An admin makes one in SQL: pgrelay.schedule(name, channel, cron).");
		web_db_clear(res);
		html_end(r);
		return;
	}
	if (!r->caps.act_schedule)
		html_denied(r, "pause or resume schedules", "members of pgrelay_admin");
	buf_puts(&r->out, "<table id=\"schedules\"><tr><th>Schedule</th><th>Channel</th><th>Cron</th>"
					  "<th>Time zone</th><th>State</th><th>Catch up</th><th>Next run</th><th>Last run</th>"
					  "<th>Last outcome</th><th>Last event</th>");
	if (r->caps.act_schedule)
		buf_puts(&r->out, "<th></th>");
	buf_puts(&r->out, "</tr>\n");
	for (i = 0; i < n; i++) {
		bool active = web_db_flag(res, i, 4);

		buf_puts(&r->out, "<tr>");
		cell(r, res, i, 0);
		buf_puts(&r->out, "<td><a href=\"/events?channel=");
		url_esc(&r->out, web_db_value(res, i, 1));
		buf_puts(&r->out, "\">");
		html_esc(&r->out, web_db_value(res, i, 1));
		buf_puts(&r->out, "</a></td><td><code>");
		html_esc(&r->out, web_db_value(res, i, 2));
		buf_puts(&r->out, "</code></td>");
		cell(r, res, i, 3);
		buf_printf(&r->out, "<td class=\"state\">%s</td>",
				   active ? "active" : "<span class=\"tag warn\">paused</span>");
		cell(r, res, i, 5);
		buf_puts(&r->out, "<td>");
		html_esc(&r->out, web_db_value(res, i, 6));
		if (web_db_flag(res, i, 11))
			buf_puts(&r->out, " <span class=\"tag retry\">due</span>");
		buf_puts(&r->out, "</td>");
		last_run(r, res, i);
		if (r->caps.act_schedule) {
			buf_puts(&r->out, "<td>");
			active_form(r, web_db_value(res, i, 0), active);
			buf_puts(&r->out, "</td>");
		}
		buf_puts(&r->out, "</tr>\n");
	}
	buf_puts(&r->out, "</table>\n");
	web_db_clear(res);
	html_end(r);
}
