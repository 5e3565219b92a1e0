/*
 * web_chart.h - bar charts as inline SVG, drawn on the server: a page shows them without any
 * script, and each bar's <title> tells its counts on hover.
 */
#ifndef PGRELAY_WEB_CHART_H
#define PGRELAY_WEB_CHART_H

#include "buf.h"

/*
 * chart_bars draws n buckets of step seconds from start (seconds since 1970): done, retried and
 * failed stacked, with the scale and the first and last bucket's time.
 */
void chart_bars(struct Buf *b, const char *label, long long start, int step, int n, const long long *done,
				const long long *retried, const long long *failed);
/* chart_spark draws a small chart of the same (no labels), for a table's row. */
void chart_spark(struct Buf *b, int n, const long long *done, const long long *retried,
				 const long long *failed);

#endif
