/*
 * web_chart.h - bar charts as inline SVG, drawn on the server: a page shows them without any
 * script, and each bar's <title> tells its counts on hover.
 */
#ifndef PGRELAY_WEB_CHART_H
#define PGRELAY_WEB_CHART_H

#include "buf.h"

/* One series of a chart: its word (also its class in the style sheet, for the colour) and values. */
struct ChartSeries {
	const char *name;
	const long long *v;
};

/*
 * A chart of n buckets of step seconds from start (seconds since 1970), its series stacked in
 * their order, bottom up. A bucket whose first value is negative has no data (no sample was
 * taken): no bar, and its title says so.
 */
struct Chart {
	const char *label;   /* the caption and the SVG's title */
	const char *summary; /* after the caption, muted (NULL: none) */
	long long start;
	int step, n;
	const struct ChartSeries *series;
	int nseries;
};

/* chart_bars draws c with its caption, the scale, and the first and last bucket's time. */
void chart_bars(struct Buf *b, const struct Chart *c);
/* chart_spark draws c small, without caption or labels, for a table's row. */
void chart_spark(struct Buf *b, const struct Chart *c);

#endif
