/*
 * pages_overview.c - the overview: dispatch, the Processors in one line, the attempts of the
 * last hour and day as charts, and per channel what is queued, due and how old, how many wait with
 * a key or have snoozed, and what finished and failed (pgrelay.queue_depth, pgrelay.processors,
 * pgrelay.throughput()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_chart.h"
#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_rates.h"

#define HOUR_BUCKETS 60
#define DAY_BUCKETS 96
#define MAX_CHANNELS 100

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

static void
charts(struct WebReq *r, long long now, long long hour_start, long long day_start)
{
	long long d[DAY_BUCKETS], t[DAY_BUCKETS], f[DAY_BUCKETS];

	buf_puts(&r->out, "<div class=\"charts\">");
	rates_fold(hour_start, 60, HOUR_BUCKETS, NULL, d, t, f);
	chart_bars(&r->out, "Attempts per minute, last hour", hour_start, 60, HOUR_BUCKETS, d, t, f);
	rates_fold(day_start, 900, DAY_BUCKETS, NULL, d, t, f);
	chart_bars(&r->out, "Attempts per 15 minutes, last day", day_start, 900, DAY_BUCKETS, d, t, f);
	buf_puts(
		&r->out,
		"</div><p class=\"legend\"><span><i class=\"done\"></i>done</span>"
		"<span><i class=\"retried\"></i>retried</span><span><i class=\"failed\"></i>failed</span></p>\n");
	if (rates_counted_from() > day_start) {
		buf_puts(&r->out, "<p class=\"muted\" id=\"counting\">The last day is counted from ");
		html_age(&r->out, (double) (now - rates_counted_from()));
		buf_puts(&r->out, " ago on: older attempts are read a little at each refresh.</p>\n");
	}
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

static void
channel_rows(struct WebReq *r, long long hour_start, long long day_start)
{
	PGresult *res = web_db_query(
		"SELECT d.channel, d.action_type, d.active, d.paused, d.queued, d.due,"
		" COALESCE(pg_catalog.date_part('epoch', d.oldest_due_age), -1), pg_catalog.count(*) OVER (),"
		" d.keyed, d.snoozed FROM pgrelay.queue_depth d ORDER BY d.due DESC, d.queued DESC, d.channel LIMIT "
		"100",
		0, NULL);
	long long hd[HOUR_BUCKETS], hr[HOUR_BUCKETS], hf[HOUR_BUCKETS], dd[DAY_BUCKETS], dr[DAY_BUCKETS],
		df[DAY_BUCKETS];
	int i, n;

	if (res == NULL) {
		html_db_error(r, "pgrelay.queue_depth");
		return;
	}
	n = web_db_rows(res);
	buf_puts(&r->out, "<h2>Channels</h2>\n");
	if (n == 0) {
		html_notice(r, "info", "No channel is registered.");
		web_db_clear(res);
		return;
	}
	if (atoll(web_db_value(res, 0, 7)) > n)
		buf_printf(&r->out, "<p class=\"muted\">The %d of %s channels with the most due events.</p>", n,
				   web_db_value(res, 0, 7));
	buf_puts(
		&r->out,
		"<table id=\"channels\"><tr><th>Channel</th><th>Type</th><th>State</th><th class=\"num\">Queued</th>"
		"<th class=\"num\">Due</th><th class=\"num\">Oldest due</th><th class=\"num\">Keyed</th>"
		"<th class=\"num\">Snoozed</th><th class=\"num\">Done 1h</th>"
		"<th class=\"num\">Failed 1h</th><th class=\"num\">Done 24h</th><th class=\"num\">Failed 24h</th>"
		"<th>Last hour</th></tr>\n");
	for (i = 0; i < n; i++) {
		const char *ch = web_db_value(res, i, 0);

		rates_fold(hour_start, 60, HOUR_BUCKETS, ch, hd, hr, hf);
		rates_fold(day_start, 900, DAY_BUCKETS, ch, dd, dr, df);
		buf_puts(&r->out, "<tr><td><a href=\"/events?channel=");
		url_esc(&r->out, ch);
		buf_puts(&r->out, "\">");
		html_esc(&r->out, ch);
		buf_puts(&r->out, "</a></td><td>");
		html_esc(&r->out, web_db_value(res, i, 1));
		buf_printf(&r->out,
				   "</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">",
				   web_db_flag(res, i, 3)   ? "<span class=\"tag warn\">paused</span>"
				   : web_db_flag(res, i, 2) ? "active"
											: "<span class=\"tag\">inactive</span>",
				   web_db_value(res, i, 4), web_db_value(res, i, 5));
		html_age(&r->out, atof(web_db_value(res, i, 6)));
		buf_printf(&r->out, "</td><td class=\"num\">%s</td><td class=\"num\">%s", web_db_value(res, i, 8),
				   web_db_value(res, i, 9));
		buf_printf(&r->out,
				   "</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td>"
				   "<td class=\"num\">%lld</td><td>",
				   sum(hd, HOUR_BUCKETS), sum(hf, HOUR_BUCKETS), sum(dd, DAY_BUCKETS), sum(df, DAY_BUCKETS));
		chart_spark(&r->out, HOUR_BUCKETS, hd, hr, hf);
		buf_puts(&r->out, "</td></tr>\n");
	}
	buf_puts(&r->out, "</table>\n");
	web_db_clear(res);
}

void
page_overview(struct WebReq *r)
{
	long long now = (long long) r->caps.now;
	long long hour_start = now / 60 * 60 - (HOUR_BUCKETS - 1) * 60;
	long long day_start = now / 900 * 900 - (DAY_BUCKETS - 1) * 900;

	html_begin(r, "Overview", "/", true);
	if (!r->caps.read_views) {
		html_denied(r, "read pg_relay's views", "members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	dispatch_notices(r);
	processors_line(r);
	if (rates_refresh(r->caps.now))
		charts(r, now, hour_start, day_start);
	else if (strcmp(web_db_sqlstate(), "42501") == 0)
		html_denied(r, "read the attempts per minute (pgrelay.throughput())",
					"pgrelay_monitor and pgrelay_admin");
	else
		html_db_error(r, "pgrelay.throughput()");
	channel_rows(r, hour_start, day_start);
	html_end(r);
}
