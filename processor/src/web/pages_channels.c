/*
 * pages_channels.c - the channels: state and queue of each (pgrelay.queue_depth: queued, due,
 * retrying, with a key, snoozed), the handler and settings (durations in words) for roles that may
 * read pgrelay.channels, webhook endpoints (pgrelay.webhook_status, never a path or a secret), the
 * last error (pgrelay.last_errors), and pause and resume, per channel and everywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"

/*
 * The same columns either way; the settings are NULL where the role may not read them. Durations
 * in seconds, to be said in words; the last error of each channel (pgrelay.last_errors).
 */
#define CHANNEL_COLUMNS                                                                 \
	"SELECT d.channel, d.action_type, d.active, d.paused, d.queued, d.due, d.retrying," \
	" COALESCE(pg_catalog.date_part('epoch', d.oldest_due_age), -1),"                   \
	" pg_catalog.date_part('epoch', d.next_run_at - pg_catalog.now()),"                 \
	" pg_catalog.to_char(d.next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), w.endpoint, w.state,"
#define CHANNEL_ERROR                                                                                   \
	" d.keyed, d.snoozed, pg_catalog.date_part('epoch', pg_catalog.now() - e.failed_at), e.error_kind," \
	" e.sqlstate, e.error, e.event_id"                                                                  \
	" FROM pgrelay.queue_depth d LEFT JOIN pgrelay.webhook_status w USING (channel)"                    \
	" LEFT JOIN pgrelay.last_errors e USING (channel)"
static const char with_settings[] = CHANNEL_COLUMNS
	" c.max_attempts, pg_catalog.date_part('epoch', c.timeout),"
	" pg_catalog.date_part('epoch', c.backoff_base), pg_catalog.date_part('epoch', c.backoff_max),"
	" c.concurrency_mode, c.batch, c.retry_policy, c.handler, c.description," CHANNEL_ERROR
	" LEFT JOIN pgrelay.channels c USING (channel) ORDER BY d.channel LIMIT 500";
static const char without_settings[] = CHANNEL_COLUMNS
	" NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL," CHANNEL_ERROR " ORDER BY d.channel LIMIT 500";

/* The columns of both. */
enum {
	C_CHANNEL,
	C_TYPE,
	C_ACTIVE,
	C_PAUSED,
	C_QUEUED,
	C_DUE,
	C_RETRYING,
	C_OLDEST,
	C_NEXT_IN,
	C_NEXT_AT,
	C_ENDPOINT,
	C_ENDPOINT_STATE,
	C_MAX_ATTEMPTS,
	C_TIMEOUT,
	C_BACKOFF_BASE,
	C_BACKOFF_MAX,
	C_CONCURRENCY,
	C_BATCH,
	C_RETRY_POLICY,
	C_HANDLER,
	C_DESCRIPTION,
	C_KEYED,
	C_SNOOZED,
	C_ERR_AGO,
	C_ERR_KIND,
	C_ERR_SQLSTATE,
	C_ERR_TEXT,
	C_ERR_EVENT,
};

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

/* next_run writes when the next event that waits is due: "in 59m58s", its time on hover. */
static void
next_run(struct WebReq *r, const PGresult *res, int i)
{
	buf_puts(&r->out, "<td>");
	if (!web_db_null(res, i, C_NEXT_IN)) {
		buf_puts(&r->out, "<span title=\"");
		html_esc(&r->out, web_db_value(res, i, C_NEXT_AT));
		buf_puts(&r->out, " UTC\">in ");
		html_age(&r->out, atof(web_db_value(res, i, C_NEXT_IN)));
		buf_puts(&r->out, "</span>");
	}
	buf_puts(&r->out, "</td>");
}

/* settings writes a channel's settings in words: "5 attempts, timeout 30 s, backoff 10 s – 1 h, ...". */
static void
settings(struct WebReq *r, const PGresult *res, int i)
{
	buf_printf(&r->out, "<div class=\"settings\">%s attempts, timeout ",
			   web_db_value(res, i, C_MAX_ATTEMPTS));
	html_duration(&r->out, atof(web_db_value(res, i, C_TIMEOUT)));
	buf_puts(&r->out, ", backoff ");
	html_duration(&r->out, atof(web_db_value(res, i, C_BACKOFF_BASE)));
	buf_puts(&r->out, " \xE2\x80\x93 ");
	html_duration(&r->out, atof(web_db_value(res, i, C_BACKOFF_MAX)));
	buf_printf(&r->out, ", %s, retry ",
			   strcmp(web_db_value(res, i, C_CONCURRENCY), "channel") == 0 ? "one at a time (channel)"
																		   : "parallel");
	html_esc(&r->out, web_db_value(res, i, C_RETRY_POLICY));
	buf_puts(&r->out, web_db_flag(res, i, C_BATCH) ? ", batch</div>" : "</div>");
}

/*
 * runs writes what runs the events, a sql channel's handler (for admins) or a webhook's endpoint,
 * and under it the settings for roles that may read them.
 */
static void
runs(struct WebReq *r, const PGresult *res, int i)
{
	buf_puts(&r->out, "<td class=\"runs\">");
	if (!web_db_null(res, i, C_ENDPOINT)) {
		html_esc(&r->out, web_db_value(res, i, C_ENDPOINT));
		buf_puts(&r->out, " <span class=\"tag\">");
		html_esc(&r->out, web_db_value(res, i, C_ENDPOINT_STATE));
		buf_puts(&r->out, "</span>");
	} else if (!web_db_null(res, i, C_HANDLER)) {
		buf_puts(&r->out, "<code>");
		html_esc(&r->out, web_db_value(res, i, C_HANDLER));
		buf_puts(&r->out, "</code>");
	}
	if (r->caps.read_channels)
		settings(r, res, i);
	buf_puts(&r->out, "</td>");
}

/*
 * last_error writes a channel's last error: when (linked to its event), its kind and SQLSTATE, its
 * text cut short.
 */
static void
last_error(struct WebReq *r, const PGresult *res, int i)
{
	buf_puts(&r->out, "<td class=\"err\">");
	if (!web_db_null(res, i, C_ERR_AGO))
		html_last_error(&r->out, atof(web_db_value(res, i, C_ERR_AGO)), web_db_value(res, i, C_ERR_EVENT),
						web_db_value(res, i, C_ERR_KIND),
						web_db_null(res, i, C_ERR_SQLSTATE) ? NULL : web_db_value(res, i, C_ERR_SQLSTATE),
						web_db_value(res, i, C_ERR_TEXT));
	buf_puts(&r->out, "</td>");
}

static void
channel_row(struct WebReq *r, const PGresult *res, int i)
{
	bool paused = web_db_flag(res, i, C_PAUSED);

	buf_puts(&r->out, "<tr><td><a href=\"/events?channel=");
	url_esc(&r->out, web_db_value(res, i, C_CHANNEL));
	buf_puts(&r->out, "\">");
	html_esc(&r->out, web_db_value(res, i, C_CHANNEL));
	buf_puts(&r->out, "</a>");
	if (!web_db_null(res, i, C_DESCRIPTION)) {
		buf_puts(&r->out, "<br><span class=\"muted\">");
		html_esc_cut(&r->out, web_db_value(res, i, C_DESCRIPTION), 200);
		buf_puts(&r->out, "</span>");
	}
	buf_puts(&r->out, "</td><td>");
	html_esc(&r->out, web_db_value(res, i, C_TYPE));
	buf_printf(
		&r->out,
		"</td><td class=\"state\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
		"<td class=\"num%s\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">",
		paused                          ? "<span class=\"tag warn\">paused</span>"
		: web_db_flag(res, i, C_ACTIVE) ? "active"
										: "<span class=\"tag\">inactive</span>",
		web_db_value(res, i, C_QUEUED), web_db_value(res, i, C_DUE),
		atoll(web_db_value(res, i, C_RETRYING)) > 0 ? " warn" : "", web_db_value(res, i, C_RETRYING),
		web_db_value(res, i, C_KEYED), web_db_value(res, i, C_SNOOZED));
	html_age(&r->out, atof(web_db_value(res, i, C_OLDEST)));
	buf_puts(&r->out, "</td>");
	next_run(r, res, i);
	runs(r, res, i);
	last_error(r, res, i);
	buf_puts(&r->out, "<td>");
	pause_form(r, web_db_value(res, i, C_CHANNEL), paused);
	buf_puts(&r->out, "</td></tr>\n");
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
		html_denied(r, "read the channels' settings and handlers (pgrelay.channels)",
					"members of pgrelay_admin");
	n = web_db_rows(res);
	buf_puts(&r->out, "<table id=\"channel-table\"><tr><th>Channel</th><th>Type</th><th>State</th>"
					  "<th class=\"num\">Queued</th><th class=\"num\">Due</th><th class=\"num\">Retrying</th>"
					  "<th class=\"num\">Keyed</th><th class=\"num\">Snoozed</th><th class=\"num\">Oldest "
					  "due</th><th>Next run</th>");
	buf_puts(&r->out, r->caps.read_channels ? "<th>Handler or endpoint, settings</th>" : "<th>Endpoint</th>");
	buf_puts(&r->out, "<th>Last error</th><th></th></tr>\n");
	for (i = 0; i < n; i++)
		channel_row(r, res, i);
	buf_puts(&r->out, "</table>\n");
	if (n == 0)
		html_notice(r, "info", "No channel is registered.");
	web_db_clear(res);
	html_end(r);
}
