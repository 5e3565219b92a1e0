/*
 * pages_topics.c - the topics (publish()): each topic's subscribed channels, the event types each
 * takes, and the deliveries of publications waiting on it (queued, due, retrying, the oldest due
 * one's age) and failed (for good, and in the last hour), from pgrelay.topic_subscribers, which
 * has no payload: monitors read it too. A role that may read pgrelay.topics (admins) also sees
 * each topic's description and the topics nobody subscribed to yet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"

/* The same columns either way; the description is NULL where the role may not read the topics. */
#define TOPIC_COLUMNS                                                                              \
	" s.channel, s.action_type, pg_catalog.array_to_string(s.event_types, ', '), s.queued, s.due," \
	" s.retrying, COALESCE(pg_catalog.date_part('epoch', s.oldest_due_age), -1), s.failed,"        \
	" s.failed_1h, s.active, s.paused"
#define TOPIC_ORDER " ORDER BY 1, s.channel NULLS FIRST LIMIT 1000"
static const char with_topics[] =
	"SELECT t.topic, t.description," TOPIC_COLUMNS
	" FROM pgrelay.topics t LEFT JOIN pgrelay.topic_subscribers s ON s.topic = t.topic" TOPIC_ORDER;
static const char subscribers_only[] =
	"SELECT s.topic, NULL," TOPIC_COLUMNS " FROM pgrelay.topic_subscribers s" TOPIC_ORDER;

enum {
	T_TOPIC,
	T_DESCRIPTION,
	T_CHANNEL,
	T_TYPE,
	T_EVENT_TYPES,
	T_QUEUED,
	T_DUE,
	T_RETRYING,
	T_OLDEST,
	T_FAILED,
	T_FAILED_1H,
	T_ACTIVE,
	T_PAUSED,
};

/* topic_cell names the topic on the first row of its subscriptions, with its description. */
static void
topic_cell(struct WebReq *r, const PGresult *res, int i)
{
	bool first = i == 0 || strcmp(web_db_value(res, i - 1, T_TOPIC), web_db_value(res, i, T_TOPIC)) != 0;

	buf_puts(&r->out, "<td class=\"topic\">");
	if (first) {
		buf_puts(&r->out, "<strong>");
		html_esc(&r->out, web_db_value(res, i, T_TOPIC));
		buf_puts(&r->out, "</strong>");
		if (!web_db_null(res, i, T_DESCRIPTION)) {
			buf_puts(&r->out, "<br><span class=\"muted\">");
			html_esc_cut(&r->out, web_db_value(res, i, T_DESCRIPTION), 200);
			buf_puts(&r->out, "</span>");
		}
	}
	buf_puts(&r->out, "</td>");
}

/* subscriber_cells shows one subscription: its channel, filter, backlog and failures. */
static void
subscriber_cells(struct WebReq *r, const PGresult *res, int i)
{
	const char *ch = web_db_value(res, i, T_CHANNEL);
	bool failed = atoll(web_db_value(res, i, T_FAILED)) > 0;

	buf_puts(&r->out, "<td><a href=\"/events?channel=");
	url_esc(&r->out, ch);
	buf_puts(&r->out, "\">");
	html_esc(&r->out, ch);
	buf_puts(&r->out, "</a></td><td>");
	html_esc(&r->out, web_db_value(res, i, T_TYPE));
	buf_puts(&r->out, "</td><td class=\"event-types\">");
	if (web_db_null(res, i, T_EVENT_TYPES))
		buf_puts(&r->out, "<span class=\"muted\">all</span>");
	else {
		buf_puts(&r->out, "<code>");
		html_esc(&r->out, web_db_value(res, i, T_EVENT_TYPES));
		buf_puts(&r->out, "</code>");
	}
	buf_printf(&r->out, "</td><td class=\"state\">%s</td>",
			   web_db_flag(res, i, T_PAUSED)   ? "<span class=\"tag warn\">paused</span>"
			   : web_db_flag(res, i, T_ACTIVE) ? "active"
											   : "<span class=\"tag\">inactive</span>");
	buf_printf(
		&r->out,
		"<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num%s\">%s</td><td class=\"num\">",
		web_db_value(res, i, T_QUEUED), web_db_value(res, i, T_DUE),
		atoll(web_db_value(res, i, T_RETRYING)) > 0 ? " warn" : "", web_db_value(res, i, T_RETRYING));
	html_age(&r->out, atof(web_db_value(res, i, T_OLDEST)));
	buf_printf(&r->out, "</td><td class=\"num%s\">", failed ? " failed" : "");
	if (failed) {
		buf_puts(&r->out, "<a href=\"/failures?channel=");
		url_esc(&r->out, ch);
		buf_printf(&r->out, "\">%s</a>", web_db_value(res, i, T_FAILED));
	} else
		buf_puts(&r->out, web_db_value(res, i, T_FAILED));
	buf_printf(&r->out, "</td><td class=\"num\">%s</td>", web_db_value(res, i, T_FAILED_1H));
}

void
page_topics(struct WebReq *r)
{
	PGresult *res;
	int i, n;

	html_begin(r, "Topics", "/topics", true);
	if (!r->caps.read_topics) {
		html_denied(r, "read the topics' subscribers (pgrelay.topic_subscribers)",
					"members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	res = web_db_query(r->caps.read_topiclist ? with_topics : subscribers_only, 0, NULL);
	if (res == NULL) {
		html_db_error(r, "pgrelay.topic_subscribers");
		html_end(r);
		return;
	}
	n = web_db_rows(res);
	if (n == 0) {
		html_notice(r, "info",
					r->caps.read_topiclist
						? "No topic is defined. An admin makes one in SQL: pgrelay.create_topic(topic), then "
						  "pgrelay.subscribe(topic, channel)."
						: "No channel is subscribed to a topic.");
		web_db_clear(res);
		html_end(r);
		return;
	}
	if (!r->caps.read_topiclist)
		html_denied(r, "read the topics' descriptions and the topics without a subscriber (pgrelay.topics)",
					"members of pgrelay_admin");
	buf_puts(&r->out,
			 "<p class=\"muted\">Each publication is one event on every subscribed channel whose event "
			 "types take it; the counts are the deliveries of publications on the channel.</p>\n");
	buf_puts(&r->out,
			 "<table id=\"topics\"><tr><th>Topic</th><th>Channel</th><th>Type</th><th>Event types</th>"
			 "<th>State</th><th class=\"num\">Queued</th><th class=\"num\">Due</th>"
			 "<th class=\"num\">Retrying</th><th class=\"num\">Oldest due</th>"
			 "<th class=\"num\">Failed</th><th class=\"num\">Failed 1h</th></tr>\n");
	for (i = 0; i < n; i++) {
		buf_puts(&r->out, "<tr>");
		topic_cell(r, res, i);
		if (web_db_null(res, i, T_CHANNEL))
			buf_puts(&r->out, "<td colspan=\"10\" class=\"muted\">no subscriber</td>");
		else
			subscriber_cells(r, res, i);
		buf_puts(&r->out, "</tr>\n");
	}
	buf_puts(&r->out, "</table>\n");
	web_db_clear(res);
	html_end(r);
}
