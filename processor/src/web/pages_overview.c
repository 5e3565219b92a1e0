/*
 * pages_overview.c - the overview: dispatch, the Processors in one line, the totals of the queue
 * (queued, due, retrying, failed for good, the oldest due event), the backlog and the attempts of
 * the last hour and day as charts, and per channel what is queued, due and retrying and how old,
 * how many wait with a key or have snoozed, what finished and failed, and its last error
 * (pgrelay.queue_depth, pgrelay.failed, pgrelay.last_errors, pgrelay.processors,
 * pgrelay.backlog, pgrelay.throughput()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_backlog.h"
#include "web_chart.h"
#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_rates.h"

#define HOUR_BUCKETS 60
#define DAY_BUCKETS 96

/*
 * The channels with the most events due or retrying, with the totals of all of them and the
 * last error of each one shown (looked up for these rows only).
 */
static const char channels_sql[] =
	"SELECT t.channel, t.action_type, t.active, t.paused, t.queued, t.due, t.oldest, t.total, t.keyed,"
	" t.snoozed, t.retrying, t.all_queued, t.all_due, t.all_retrying, t.all_oldest,"
	" (SELECT pg_catalog.count(*) FROM pgrelay.failed),"
	" e.ago, e.attempt, e.error_kind, e.sqlstate, e.error, e.event_id"
	" FROM (SELECT d.channel, d.action_type, d.active, d.paused, d.queued, d.due, d.retrying, d.keyed,"
	" d.snoozed, COALESCE(pg_catalog.date_part('epoch', d.oldest_due_age), -1) AS oldest,"
	" pg_catalog.count(*) OVER () AS total, pg_catalog.sum(d.queued) OVER () AS all_queued,"
	" pg_catalog.sum(d.due) OVER () AS all_due, pg_catalog.sum(d.retrying) OVER () AS all_retrying,"
	" COALESCE(pg_catalog.date_part('epoch', pg_catalog.max(d.oldest_due_age) OVER ()), -1) AS all_oldest"
	" FROM pgrelay.queue_depth d ORDER BY d.due + d.retrying DESC, d.queued DESC, d.channel LIMIT 100) t"
	" LEFT JOIN LATERAL (SELECT pg_catalog.date_part('epoch', pg_catalog.now() - l.failed_at) AS ago,"
	" l.attempt, l.error_kind, l.sqlstate, l.error, l.event_id FROM pgrelay.last_errors l"
	" WHERE l.channel = t.channel) e ON true"
	" ORDER BY t.due + t.retrying DESC, t.queued DESC, t.channel";

/* The columns of channels_sql. */
enum {
	C_CHANNEL,
	C_TYPE,
	C_ACTIVE,
	C_PAUSED,
	C_QUEUED,
	C_DUE,
	C_OLDEST,
	C_TOTAL,
	C_KEYED,
	C_SNOOZED,
	C_RETRYING,
	C_ALL_QUEUED,
	C_ALL_DUE,
	C_ALL_RETRYING,
	C_ALL_OLDEST,
	C_ALL_FAILED,
	C_ERR_AGO,
	C_ERR_ATTEMPT,
	C_ERR_KIND,
	C_ERR_SQLSTATE,
	C_ERR_TEXT,
	C_ERR_EVENT,
};

static void
dispatch_notices(struct WebReq *r)
{
	PGresult *res = web_db_query(
		"SELECT paused, COALESCE(pg_catalog.date_part('epoch', pg_catalog.now() - paused_at), -1)"
		" FROM pgrelay.dispatch_state",
		0, NULL);
	struct Buf t = BUF_INIT;

	if (res == NULL) {
		html_db_error(r, "pgrelay.dispatch_state");
		return;
	}
	if (web_db_rows(res) > 0 && web_db_flag(res, 0, 0)) {
		buf_puts(&t, "Dispatch is PAUSED everywhere (pgrelay.pause()) for ");
		html_age(&t, atof(web_db_value(res, 0, 1)));
		buf_puts(&t, ": no Processor starts an event. Channels lets an admin resume.");
		html_notice(r, "warn", t.data);
	}
	if (r->caps.standby)
		html_notice(r, "info",
					"This server is a standby: its Processors wait, and what it shows is its primary's.");
	web_db_clear(res);
	buf_free(&t);
}

static void
processors_line(struct WebReq *r)
{
	PGresult *res =
		web_db_query("SELECT count(*) FILTER (WHERE alive), count(*) FROM pgrelay.processors", 0, NULL);

	if (res == NULL) {
		html_db_error(r, "pgrelay.processors");
		return;
	}
	buf_printf(&r->out,
			   "<p id=\"processors-line\">%s Processor(s) alive of %s reported \xC2\xB7 "
			   "<a href=\"/processors\">Processors</a></p>\n",
			   web_db_value(res, 0, 0), web_db_value(res, 0, 1));
	if (atoll(web_db_value(res, 0, 0)) == 0)
		html_notice(r, "warn", "No Processor is alive on this node: nothing runs the events.");
	web_db_clear(res);
}

/* tile writes one of the totals: a number and its word, marked when it needs a look. */
static void
tile(struct WebReq *r, const char *id, const char *value, const char *word, const char *mark,
	 const char *href)
{
	buf_printf(&r->out, "<a class=\"tile%s%s\" id=\"%s\" href=\"%s\"><b>", mark ? " " : "", mark ? mark : "",
			   id, href);
	html_esc(&r->out, value);
	buf_printf(&r->out, "</b><span>%s</span></a>", word);
}

/* totals writes the queue's totals of every channel (the first row carries them). */
static void
totals(struct WebReq *r, const PGresult *res)
{
	bool any = web_db_rows(res) > 0;
	const char *retrying = any ? web_db_value(res, 0, C_ALL_RETRYING) : "0";
	const char *failed = any ? web_db_value(res, 0, C_ALL_FAILED) : "0";
	struct Buf oldest = BUF_INIT;

	html_age(&oldest, any ? atof(web_db_value(res, 0, C_ALL_OLDEST)) : -1);
	buf_puts(&r->out, "<div class=\"tiles\" id=\"totals\">");
	tile(r, "total-queued", any ? web_db_value(res, 0, C_ALL_QUEUED) : "0", "queued", NULL, "/channels");
	tile(r, "total-due", any ? web_db_value(res, 0, C_ALL_DUE) : "0", "due", NULL, "/channels");
	tile(r, "total-retrying", retrying, "retrying", atoll(retrying) > 0 ? "warn" : NULL,
		 "/events?outcome=retry");
	tile(r, "total-failed", failed, "failed for good", atoll(failed) > 0 ? "bad" : NULL, "/failures");
	tile(r, "total-oldest", oldest.data ? oldest.data : "-", "oldest due", NULL, "/channels");
	buf_puts(&r->out, "</div>\n");
	buf_free(&oldest);
}

static long long
sum(const long long *v, int n)
{
	long long s = 0;
	int i;

	for (i = 0; i < n; i++)
		s += v[i];
	return s;
}

/* attempts_chart draws the attempts of n buckets of step seconds from start, of every channel. */
static void
attempts_chart(struct WebReq *r, const char *label, long long start, int step, int n)
{
	long long d[DAY_BUCKETS], t[DAY_BUCKETS], f[DAY_BUCKETS];
	const struct ChartSeries s[] = {{"done", d}, {"retried", t}, {"failed", f}};
	char summary[128];
	struct Chart c = {label, summary, start, step, n, s, 3};

	rates_fold(start, step, n, NULL, d, t, f);
	snprintf(summary, sizeof summary, "%lld done, %lld retried, %lld failed", sum(d, n), sum(t, n),
			 sum(f, n));
	chart_bars(&r->out, &c);
}

/* backlog_chart draws the backlog of n buckets of step seconds from start. */
static void
backlog_chart(struct WebReq *r, const char *label, const char *summary, long long start, int step, int n)
{
	long long due[DAY_BUCKETS], waiting[DAY_BUCKETS], retrying[DAY_BUCKETS], failed[DAY_BUCKETS];
	long long *v[BACKLOG_SERIES] = {due, waiting, retrying, failed};
	const struct ChartSeries s[] = {
		{"due", due}, {"waiting", waiting}, {"retrying", retrying}, {"failed", failed}};
	struct Chart c = {label, summary, start, step, n, s, BACKLOG_SERIES};

	backlog_fold(start, step, n, v);
	chart_bars(&r->out, &c);
}

static void
legend(struct WebReq *r, const char *const *names, int n)
{
	int i;

	buf_puts(&r->out, "<p class=\"legend\">");
	for (i = 0; i < n; i++)
		buf_printf(&r->out, "<span><i class=\"%s\"></i>%s</span>", names[i], names[i]);
	buf_puts(&r->out, "</p>\n");
}

static void
backlog_charts(struct WebReq *r, long long hour_start, long long day_start)
{
	static const char *const names[] = {"due", "waiting", "retrying", "failed"};

	if (!backlog_read(day_start)) {
		html_db_error(r, "pgrelay.backlog");
		return;
	}
	buf_puts(&r->out, "<div class=\"charts\" id=\"backlog\">");
	backlog_chart(r, "Backlog, last hour", "a sample a minute", hour_start, 60, HOUR_BUCKETS);
	backlog_chart(r, "Backlog, last day", "the largest of each 15 minutes", day_start, 900, DAY_BUCKETS);
	buf_puts(&r->out, "</div>");
	legend(r, names, 4);
	backlog_free();
}

static void
attempt_charts(struct WebReq *r, long long now, long long hour_start, long long day_start)
{
	static const char *const names[] = {"done", "retried", "failed"};

	if (!rates_refresh(r->caps.now)) {
		if (strcmp(web_db_sqlstate(), "42501") == 0)
			html_denied(r, "read the attempts per minute (pgrelay.throughput())",
						"pgrelay_monitor and pgrelay_admin");
		else
			html_db_error(r, "pgrelay.throughput()");
		return;
	}
	buf_puts(&r->out, "<div class=\"charts\" id=\"attempts\">");
	attempts_chart(r, "Attempts per minute, last hour", hour_start, 60, HOUR_BUCKETS);
	attempts_chart(r, "Attempts per 15 minutes, last day", day_start, 900, DAY_BUCKETS);
	buf_puts(&r->out, "</div>");
	legend(r, names, 3);
	if (rates_counted_from() > day_start) {
		buf_puts(&r->out, "<p class=\"muted\" id=\"counting\">The last day is counted from ");
		html_age(&r->out, (double) (now - rates_counted_from()));
		buf_puts(&r->out, " ago on: older attempts are read a little at each refresh.</p>\n");
	}
}

/*
 * last_error writes a channel's last error: when (linked to its event), its kind and SQLSTATE, its
 * text cut short. Muted when it is older than an hour and no event of the channel retries.
 */
static void
last_error(struct WebReq *r, const PGresult *res, int i)
{
	bool old = atof(web_db_value(res, i, C_ERR_AGO)) >= 3600 && atoll(web_db_value(res, i, C_RETRYING)) == 0;

	buf_printf(&r->out, "<td class=\"err%s\">", old ? " muted" : "");
	if (web_db_null(res, i, C_ERR_AGO)) {
		buf_puts(&r->out, "</td>");
		return;
	}
	html_last_error(&r->out, atof(web_db_value(res, i, C_ERR_AGO)), web_db_value(res, i, C_ERR_EVENT),
					web_db_value(res, i, C_ERR_KIND),
					web_db_null(res, i, C_ERR_SQLSTATE) ? NULL : web_db_value(res, i, C_ERR_SQLSTATE),
					web_db_value(res, i, C_ERR_TEXT));
	buf_puts(&r->out, "</td>");
}

static void
channel_row(struct WebReq *r, const PGresult *res, int i, long long hour_start, long long day_start)
{
	long long hd[HOUR_BUCKETS], hr[HOUR_BUCKETS], hf[HOUR_BUCKETS], dd[DAY_BUCKETS], dr[DAY_BUCKETS],
		df[DAY_BUCKETS];
	const struct ChartSeries s[] = {{"done", hd}, {"retried", hr}, {"failed", hf}};
	const struct Chart spark = {"", NULL, hour_start, 60, HOUR_BUCKETS, s, 3};
	const char *ch = web_db_value(res, i, C_CHANNEL);
	bool retrying = atoll(web_db_value(res, i, C_RETRYING)) > 0;

	rates_fold(hour_start, 60, HOUR_BUCKETS, ch, hd, hr, hf);
	rates_fold(day_start, 900, DAY_BUCKETS, ch, dd, dr, df);
	buf_puts(&r->out, "<tr><td><a href=\"/events?channel=");
	url_esc(&r->out, ch);
	buf_puts(&r->out, "\">");
	html_esc(&r->out, ch);
	buf_puts(&r->out, "</a></td><td>");
	html_esc(&r->out, web_db_value(res, i, C_TYPE));
	buf_printf(&r->out,
			   "</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num%s\">%s</td>"
			   "<td class=\"num\">",
			   web_db_flag(res, i, C_PAUSED)   ? "<span class=\"tag warn\">paused</span>"
			   : web_db_flag(res, i, C_ACTIVE) ? "active"
											   : "<span class=\"tag\">inactive</span>",
			   web_db_value(res, i, C_QUEUED), web_db_value(res, i, C_DUE), retrying ? " warn" : "",
			   web_db_value(res, i, C_RETRYING));
	html_age(&r->out, atof(web_db_value(res, i, C_OLDEST)));
	buf_printf(&r->out,
			   "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%lld</td>"
			   "<td class=\"num\">%lld</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td><td>",
			   web_db_value(res, i, C_KEYED), web_db_value(res, i, C_SNOOZED), sum(hd, HOUR_BUCKETS),
			   sum(hf, HOUR_BUCKETS), sum(dd, DAY_BUCKETS), sum(df, DAY_BUCKETS));
	chart_spark(&r->out, &spark);
	buf_puts(&r->out, "</td>");
	last_error(r, res, i);
	buf_puts(&r->out, "</tr>\n");
}

static void
channel_table(struct WebReq *r, const PGresult *res, long long hour_start, long long day_start)
{
	int i, n = web_db_rows(res);

	buf_puts(&r->out, "<h2>Channels</h2>\n");
	if (n == 0) {
		html_notice(r, "info", "No channel is registered.");
		return;
	}
	if (atoll(web_db_value(res, 0, C_TOTAL)) > n)
		buf_printf(&r->out,
				   "<p class=\"muted\">The %d of %s channels with the most events due or retrying.</p>", n,
				   web_db_value(res, 0, C_TOTAL));
	buf_puts(
		&r->out,
		"<table id=\"channels\"><tr><th>Channel</th><th>Type</th><th>State</th><th class=\"num\">Queued</th>"
		"<th class=\"num\">Due</th><th class=\"num\">Retrying</th><th class=\"num\">Oldest due</th>"
		"<th class=\"num\">Keyed</th><th class=\"num\">Snoozed</th><th class=\"num\">Done 1h</th>"
		"<th class=\"num\">Failed 1h</th><th class=\"num\">Done 24h</th><th class=\"num\">Failed 24h</th>"
		"<th>Last hour</th><th>Last error</th></tr>\n");
	for (i = 0; i < n; i++)
		channel_row(r, res, i, hour_start, day_start);
	buf_puts(&r->out, "</table>\n");
}

void
page_overview(struct WebReq *r)
{
	long long now = (long long) r->caps.now;
	long long hour_start = now / 60 * 60 - (HOUR_BUCKETS - 1) * 60;
	long long day_start = now / 900 * 900 - (DAY_BUCKETS - 1) * 900;
	PGresult *res;

	html_begin(r, "Overview", "/", true);
	if (!r->caps.read_views) {
		html_denied(r, "read pg_relay's views", "members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	dispatch_notices(r);
	processors_line(r);
	res = web_db_query(channels_sql, 0, NULL);
	if (res == NULL)
		html_db_error(r, "pgrelay.queue_depth");
	else
		totals(r, res);
	backlog_charts(r, hour_start, day_start);
	attempt_charts(r, now, hour_start, day_start);
	if (res != NULL)
		channel_table(r, res, hour_start, day_start);
	web_db_clear(res);
	html_end(r);
}
