/*
 * pages_channels.c - the channels: state and queue of each (pgrelay.queue_depth: queued, due,
 * retrying, with a key, snoozed), the settings
 * for roles that may read pgrelay.channels, webhook endpoints (pgrelay.webhook_status, never a
 * path or a secret), and pause and resume, per channel and everywhere.
 */
#include <stdio.h>
#include <stdlib.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"

/* The same columns either way; the settings are NULL where the role may not read them. */
static const char with_settings[] =
	"SELECT d.channel, d.action_type, d.active, d.paused, d.queued, d.due, d.retrying,"
	" COALESCE(pg_catalog.date_part('epoch', d.oldest_due_age), -1),"
	" pg_catalog.to_char(d.next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
	" w.endpoint, w.state, c.max_attempts, c.timeout::text, c.backoff_base::text || ' .. ' || "
	"c.backoff_max::text,"
	" c.concurrency_mode, c.batch, c.retry_policy, c.handler, c.description, d.keyed, d.snoozed"
	" FROM pgrelay.queue_depth d LEFT JOIN pgrelay.webhook_status w USING (channel)"
	" LEFT JOIN pgrelay.channels c USING (channel) ORDER BY d.channel LIMIT 500";
static const char without_settings[] =
	"SELECT d.channel, d.action_type, d.active, d.paused, d.queued, d.due, d.retrying,"
	" COALESCE(pg_catalog.date_part('epoch', d.oldest_due_age), -1),"
	" pg_catalog.to_char(d.next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
	" w.endpoint, w.state, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, d.keyed, d.snoozed"
	" FROM pgrelay.queue_depth d LEFT JOIN pgrelay.webhook_status w USING (channel) ORDER BY d.channel LIMIT "
	"500";

static void
pause_form(struct WebReq *r, const char *channel, bool paused)
{
	html_form_begin(r, paused ? "/action/resume" : "/action/pause", NULL);
	html_hidden(r, "channel", channel ? channel : "");
	html_button(
		r, paused ? (channel ? "Resume" : "Resume everything") : (channel ? "Pause" : "Pause everything"),
		r->caps.act_pause, paused ? "primary" : "danger");
}

static void
global_state(struct WebReq *r)
{
	PGresult *res = web_db_query("SELECT paused FROM pgrelay.dispatch_state", 0, NULL);
	bool paused;

	if (res == NULL) {
		html_db_error(r, "pgrelay.dispatch_state");
		return;
	}
	paused = web_db_rows(res) > 0 && web_db_flag(res, 0, 0);
	buf_printf(&r->out, "<div id=\"dispatch\">Dispatch: <b>%s</b> ",
			   paused ? "paused everywhere" : "running");
	pause_form(r, NULL, paused);
	buf_puts(&r->out, "</div>\n");
	web_db_clear(res);
}

static void
cell(struct WebReq *r, const PGresult *res, int row, int col)
{
	buf_puts(&r->out, "<td>");
	html_esc(&r->out, web_db_value(res, row, col));
	buf_puts(&r->out, "</td>");
}

void
page_channels(struct WebReq *r)
{
	PGresult *res;
	int i, n;

	html_begin(r, "Channels", "/channels", true);
	if (!r->caps.read_views) {
		html_denied(r, "read pg_relay's views", "members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	if (!r->caps.act_pause)
		html_denied(r, "pause or resume channels", "members of pgrelay_admin");
	global_state(r);
	res = web_db_query(r->caps.read_channels ? with_settings : without_settings, 0, NULL);
	if (res == NULL) {
		html_db_error(r, "pgrelay.queue_depth");
		html_end(r);
		return;
	}
	if (!r->caps.read_channels)
		html_denied(r, "read the channels' settings (pgrelay.channels)", "members of pgrelay_admin");
	n = web_db_rows(res);
	buf_puts(&r->out, "<table id=\"channel-table\"><tr><th>Channel</th><th>Type</th><th>State</th>"
					  "<th class=\"num\">Queued</th><th class=\"num\">Due</th><th class=\"num\">Retrying</th>"
					  "<th class=\"num\">Keyed</th><th class=\"num\">Snoozed</th><th class=\"num\">Oldest "
					  "due</th><th>Next run</th><th>Endpoint</th>");
	if (r->caps.read_channels)
		buf_puts(&r->out,
				 "<th class=\"num\">Max attempts</th><th>Timeout</th><th>Backoff</th><th>Concurrency</th>"
				 "<th>Batch</th><th>Retry policy</th><th>Handler</th>");
	buf_puts(&r->out, "<th></th></tr>\n");
	for (i = 0; i < n; i++) {
		bool paused = web_db_flag(res, i, 3);

		buf_puts(&r->out, "<tr><td><a href=\"/events?channel=");
		url_esc(&r->out, web_db_value(res, i, 0));
		buf_puts(&r->out, "\">");
		html_esc(&r->out, web_db_value(res, i, 0));
		buf_puts(&r->out, "</a>");
		if (!web_db_null(res, i, 18)) {
			buf_puts(&r->out, "<br><span class=\"muted\">");
			html_esc_cut(&r->out, web_db_value(res, i, 18), 200);
			buf_puts(&r->out, "</span>");
		}
		buf_puts(&r->out, "</td>");
		cell(r, res, i, 1);
		buf_printf(&r->out,
				   "<td class=\"state\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
				   "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
				   "<td class=\"num\">",
				   paused                   ? "<span class=\"tag warn\">paused</span>"
				   : web_db_flag(res, i, 2) ? "active"
											: "<span class=\"tag\">inactive</span>",
				   web_db_value(res, i, 4), web_db_value(res, i, 5), web_db_value(res, i, 6),
				   web_db_value(res, i, 19), web_db_value(res, i, 20));
		html_age(&r->out, atof(web_db_value(res, i, 7)));
		buf_puts(&r->out, "</td>");
		cell(r, res, i, 8);
		buf_puts(&r->out, "<td>");
		if (!web_db_null(res, i, 9)) {
			html_esc(&r->out, web_db_value(res, i, 9));
			buf_puts(&r->out, " <span class=\"tag\">");
			html_esc(&r->out, web_db_value(res, i, 10));
			buf_puts(&r->out, "</span>");
		}
		buf_puts(&r->out, "</td>");
		if (r->caps.read_channels) {
			buf_printf(&r->out, "<td class=\"num\">%s</td>", web_db_value(res, i, 11));
			cell(r, res, i, 12);
			cell(r, res, i, 13);
			cell(r, res, i, 14);
			buf_printf(&r->out, "<td>%s</td>", web_db_flag(res, i, 15) ? "yes" : "no");
			cell(r, res, i, 16);
			cell(r, res, i, 17);
		}
		buf_puts(&r->out, "<td>");
		pause_form(r, web_db_value(res, i, 0), paused);
		buf_puts(&r->out, "</td></tr>\n");
	}
	buf_puts(&r->out, "</table>\n");
	if (n == 0)
		html_notice(r, "info", "No channel is registered.");
	web_db_clear(res);
	html_end(r);
}
