/*
 * chart.c - stacked bar charts in SVG (web_chart.h). Colours come from the style sheet (classes
 * done, retried, failed): the Content-Security-Policy allows no inline style.
 */
#include "web_chart.h"

#include <stdio.h>
#include <time.h>

#include "web_html.h"

static long long
peak(int n, const long long *done, const long long *retried, const long long *failed)
{
	long long m = 0;
	int i;

	for (i = 0; i < n; i++)
		if (done[i] + retried[i] + failed[i] > m)
			m = done[i] + retried[i] + failed[i];
	return m;
}

/* bar draws one stacked bar at x of width w, bottom at y0, h pixels for max. */
static void
bar(struct Buf *b, double x, double w, double y0, double h, long long max, long long d, long long r,
	long long f)
{
	double y = y0, part;
	const long long v[3] = {d, r, f};
	const char *cls[3] = {"done", "retried", "failed"};
	int k;

	for (k = 0; k < 3; k++) {
		if (v[k] <= 0 || max <= 0)
			continue;
		part = h * (double) v[k] / (double) max;
		if (part < 1)
			part = 1;
		y -= part;
		buf_printf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", cls[k], x,
				   y, w, part);
	}
}

/* hhmm writes a time of day, with the date when the chart spans days (a bucket of 15 minutes or more) */
static void
hhmm(struct Buf *b, long long t, int step)
{
	time_t tt = (time_t) t;
	struct tm tm;
	char s[32];

	gmtime_r(&tt, &tm);
	strftime(s, sizeof s, step >= 900 ? "%m-%d %H:%M" : "%H:%M", &tm);
	buf_puts(b, s);
}

void
chart_bars(struct Buf *b, const char *label, long long start, int step, int n, const long long *done,
		   const long long *retried, const long long *failed)
{
	const double width = 540, height = 150, left = 44, top = 10, bottom = 22;
	double h = height - top - bottom, w = (width - left - 6) / n;
	long long max = peak(n, done, retried, failed), total_d = 0, total_f = 0, total_r = 0;
	int i;

	for (i = 0; i < n; i++) {
		total_d += done[i];
		total_r += retried[i];
		total_f += failed[i];
	}
	buf_puts(b, "<figure class=\"chartbox\"><figcaption>");
	html_esc(b, label);
	buf_printf(b, " \xC2\xB7 <span class=\"muted\">%lld done, %lld retried, %lld failed</span></figcaption>",
			   total_d, total_r, total_f);
	buf_printf(b,
			   "<svg class=\"chart\" role=\"img\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
			   "xmlns=\"http://www.w3.org/2000/svg\"><title>",
			   width, height, width, height);
	html_esc(b, label);
	buf_printf(b, "</title><line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>", left,
			   top + h, width - 4, top + h);
	buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%lld</text>", left - 4, top + 9, max);
	buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>", left - 4, top + h);
	for (i = 0; i < n; i++) {
		buf_puts(b, "<g><title>");
		hhmm(b, start + (long long) i * step, step);
		buf_printf(b, " UTC: %lld done, %lld retried, %lld failed</title>", done[i], retried[i], failed[i]);
		bar(b, left + i * w + 0.5, w > 2 ? w - 1 : w, top + h, h, max, done[i], retried[i], failed[i]);
		buf_puts(b, "</g>");
	}
	buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\">", left, height - 6);
	hhmm(b, start, step);
	buf_printf(b, "</text><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">", width - 4, height - 6);
	hhmm(b, start + (long long) n * step, step);
	buf_puts(b, " UTC</text></svg></figure>\n");
}

void
chart_spark(struct Buf *b, int n, const long long *done, const long long *retried, const long long *failed)
{
	const double width = 120, height = 24;
	double w = width / n;
	long long max = peak(n, done, retried, failed);
	int i;

	buf_printf(b,
			   "<svg class=\"spark\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
			   "xmlns=\"http://www.w3.org/2000/svg\" aria-hidden=\"true\">",
			   width, height, width, height);
	for (i = 0; i < n; i++)
		bar(b, i * w, w, height, height - 1, max, done[i], retried[i], failed[i]);
	buf_puts(b, "</svg>");
}
