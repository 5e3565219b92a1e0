/*
 * chart.c - stacked bar charts in SVG (web_chart.h). Colours come from the style sheet (a class
 * per series: done, retried, failed; due, waiting, retrying): the Content-Security-Policy allows
 * no inline style.
 */
#include "web_chart.h"

#include <stdio.h>
#include <time.h>

#include "web_html.h"

#define BARS_WIDTH 600
#define BARS_HEIGHT 110
#define SPARK_WIDTH 150
#define SPARK_HEIGHT 32

/* total is the height of bucket i, all series stacked (0 without data). */
static long long
total(const struct Chart *c, int i)
{
	long long t = 0;
	int k;

	if (c->series[0].v[i] < 0)
		return 0;
	for (k = 0; k < c->nseries; k++)
		if (c->series[k].v[i] > 0)
			t += c->series[k].v[i];
	return t;
}

static long long
peak(const struct Chart *c)
{
	long long m = 0;
	int i;

	for (i = 0; i < c->n; i++)
		if (total(c, i) > m)
			m = total(c, i);
	return m;
}

/* bar draws bucket i at x, w wide, bottom at y0, h pixels for max. */
static void
bar(struct Buf *b, const struct Chart *c, int i, double x, double w, double y0, double h, long long max)
{
	double y = y0, part;
	int k;

	if (max <= 0 || c->series[0].v[i] < 0)
		return;
	for (k = 0; k < c->nseries; k++) {
		long long v = c->series[k].v[i];

		if (v <= 0)
			continue;
		part = h * (double) v / (double) max;
		if (part < 1)
			part = 1;
		y -= part;
		buf_printf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>",
				   c->series[k].name, x, y, w, part);
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

/* bucket_title writes what a bar's hover says: its time and each series' value. */
static void
bucket_title(struct Buf *b, const struct Chart *c, int i)
{
	int k;

	buf_puts(b, "<title>");
	hhmm(b, c->start + (long long) i * c->step, c->step);
	buf_puts(b, " UTC: ");
	if (c->series[0].v[i] < 0)
		buf_puts(b, "no sample (no Processor reported)");
	for (k = 0; k < c->nseries && c->series[0].v[i] >= 0; k++)
		buf_printf(b, "%s%lld %s", k ? ", " : "", c->series[k].v[i], c->series[k].name);
	buf_puts(b, "</title>");
}

void
chart_bars(struct Buf *b, const struct Chart *c)
{
	const double width = BARS_WIDTH, height = BARS_HEIGHT, left = 44, top = 10, bottom = 22;
	double h = height - top - bottom, w = (width - left - 6) / c->n;
	long long max = peak(c);
	int i;

	buf_puts(b, "<figure class=\"chartbox\"><figcaption>");
	html_esc(b, c->label);
	if (c->summary != NULL) {
		buf_puts(b, " \xC2\xB7 <span class=\"muted\">");
		html_esc(b, c->summary);
		buf_puts(b, "</span>");
	}
	buf_printf(b,
			   "</figcaption><svg class=\"chart\" role=\"img\" width=\"%.0f\" height=\"%.0f\" "
			   "viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\"><title>",
			   width, height, width, height);
	html_esc(b, c->label);
	buf_printf(b, "</title><line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>", left,
			   top + h, width - 4, top + h);
	buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%lld</text>", left - 4, top + 9, max);
	buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>", left - 4, top + h);
	for (i = 0; i < c->n; i++) {
		buf_puts(b, "<g>");
		bucket_title(b, c, i);
		bar(b, c, i, left + i * w + 0.5, w > 2 ? w - 1 : w, top + h, h, max);
		buf_puts(b, "</g>");
	}
	buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\">", left, height - 6);
	hhmm(b, c->start, c->step);
	buf_printf(b, "</text><text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">", width - 4, height - 6);
	hhmm(b, c->start + (long long) c->n * c->step, c->step);
	buf_puts(b, " UTC</text></svg></figure>\n");
}

void
chart_spark(struct Buf *b, const struct Chart *c)
{
	const double width = SPARK_WIDTH, height = SPARK_HEIGHT;
	double w = width / c->n;
	long long max = peak(c);
	int i;

	buf_printf(b,
			   "<svg class=\"spark\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
			   "xmlns=\"http://www.w3.org/2000/svg\" aria-hidden=\"true\">",
			   width, height, width, height);
	for (i = 0; i < c->n; i++)
		bar(b, c, i, i * w, w, height, height - 1, max);
	buf_puts(b, "</svg>");
}
