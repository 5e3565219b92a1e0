/*
 * pages_processors.c - the Processors and the cluster: each running Processor as it reports
 * itself (pgrelay.processors: mode, workers, leader, heartbeat), dispatch (pgrelay.dispatch_state),
 * and in multi-node and leader mode every node as this node's Processor saw it
 * (pgrelay.cluster_status: link, silence, dead by the rule, leader).
 */
#include <stdio.h>
#include <stdlib.h>

#include "web_db.h"
#include "web_html.h"
#include "web_pages.h"

static void
cell(struct WebReq *r, const char *s)
{
	buf_puts(&r->out, "<td>");
	html_esc(&r->out, s);
	buf_puts(&r->out, "</td>");
}

static const char *
yes_no(const PGresult *res, int row, int col)
{
	if (web_db_null(res, row, col))
		return "-";
	return web_db_flag(res, row, col) ? "yes" : "no";
}

static void
processors(struct WebReq *r)
{
	PGresult *res = web_db_query("SELECT host, pid, node_id, version, mode, workers, busy, leader,"
								 " pg_catalog.date_part('epoch', pg_catalog.now() - started_at), "
								 "pg_catalog.date_part('epoch', silent_for), alive"
								 " FROM pgrelay.processors ORDER BY alive DESC, node_id, host, pid LIMIT 200",
								 0, NULL);
	int i, n;

	buf_puts(&r->out, "<h2>Processors on this node</h2>\n");
	if (res == NULL) {
		html_db_error(r, "pgrelay.processors");
		return;
	}
	n = web_db_rows(res);
	if (n == 0)
		html_notice(r, "warn",
					"No Processor has reported on this node (pgrelay.processors): nothing runs the events.");
	else {
		buf_puts(
			&r->out,
			"<table id=\"processors\"><tr><th>Host</th><th class=\"num\">PID</th><th class=\"num\">Node</th>"
			"<th>Version</th><th>Mode</th><th class=\"num\">Workers</th><th class=\"num\">Busy</th>"
			"<th>Leader</th><th>Up</th><th>Last report</th><th>State</th></tr>\n");
		for (i = 0; i < n; i++) {
			buf_puts(&r->out, "<tr>");
			cell(r, web_db_value(res, i, 0));
			buf_printf(&r->out, "<td class=\"num\">%s</td><td class=\"num\">%s</td>", web_db_value(res, i, 1),
					   web_db_value(res, i, 2));
			cell(r, web_db_value(res, i, 3));
			cell(r, web_db_value(res, i, 4));
			buf_printf(&r->out, "<td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>",
					   web_db_value(res, i, 5), web_db_value(res, i, 6), yes_no(res, i, 7));
			html_age(&r->out, atof(web_db_value(res, i, 8)));
			buf_puts(&r->out, "</td><td>");
			html_age(&r->out, atof(web_db_value(res, i, 9)));
			buf_printf(&r->out, " ago</td><td>%s</td></tr>\n",
					   web_db_flag(res, i, 10) ? "<span class=\"tag ok\">alive</span>"
											   : "<span class=\"tag failed\">silent</span>");
		}
		buf_puts(&r->out, "</table>\n");
	}
	web_db_clear(res);
}

static void
cluster(struct WebReq *r)
{
	PGresult *res = web_db_query(
		"SELECT node_id, node_name, COALESCE(engine, '-'), is_local, link_up, link, COALESCE(mode, '-'), "
		"leader,"
		" pg_catalog.to_char(beat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
		" COALESCE(pg_catalog.date_part('epoch', silent_for), -1), dead, acknowledged, stopped_at IS NOT NULL"
		" FROM pgrelay.cluster_status ORDER BY node_id LIMIT 1024",
		0, NULL);
	int i, n;

	buf_puts(&r->out, "<h2>Cluster nodes</h2>\n");
	if (res == NULL) {
		html_db_error(r, "pgrelay.cluster_status");
		return;
	}
	n = web_db_rows(res);
	if (n == 0)
		buf_puts(
			&r->out,
			"<p class=\"muted\">No multi-master cluster: the Processors run in single mode (or this is a "
			"standby).</p>\n");
	else {
		buf_puts(
			&r->out,
			"<table id=\"cluster\"><tr><th class=\"num\">Node</th><th>Name</th><th>Engine</th><th>Mode</th>"
			"<th>Leader</th><th>Link</th><th>Last heartbeat</th><th>Silent for</th><th>Acknowledges us</th>"
			"<th>State</th></tr>\n");
		for (i = 0; i < n; i++) {
			const char *state = web_db_flag(res, i, 3) ? "this node"
								: web_db_flag(res, i, 10)
									? "<span class=\"tag failed\">dead: its events are adopted</span>"
								: web_db_flag(res, i, 12) ? "stopped"
														  : "<span class=\"tag ok\">alive</span>";

			buf_printf(&r->out, "<tr><td class=\"num\">%s</td>", web_db_value(res, i, 0));
			cell(r, web_db_value(res, i, 1));
			cell(r, web_db_value(res, i, 2));
			cell(r, web_db_value(res, i, 6));
			buf_printf(&r->out, "<td>%s</td><td>%s", yes_no(res, i, 7),
					   web_db_null(res, i, 4) ? "-" : (web_db_flag(res, i, 4) ? "up" : "<b>down</b>"));
			if (!web_db_null(res, i, 5)) {
				buf_puts(&r->out, " <span class=\"muted\">");
				html_esc(&r->out, web_db_value(res, i, 5));
				buf_puts(&r->out, "</span>");
			}
			buf_puts(&r->out, "</td>");
			cell(r, web_db_value(res, i, 8));
			buf_puts(&r->out, "<td>");
			html_age(&r->out, atof(web_db_value(res, i, 9)));
			buf_printf(&r->out, "</td><td>%s</td><td>%s</td></tr>\n", yes_no(res, i, 11), state);
		}
		buf_puts(&r->out, "</table>\n");
	}
	web_db_clear(res);
}

void
page_processors(struct WebReq *r)
{
	PGresult *res;

	html_begin(r, "Processors", "/processors", true);
	if (!r->caps.read_views) {
		html_denied(r, "read pg_relay's views", "members of pgrelay_monitor and pgrelay_admin");
		html_end(r);
		return;
	}
	res = web_db_query("SELECT paused, in_recovery, node_id FROM pgrelay.dispatch_state", 0, NULL);
	if (res != NULL && web_db_rows(res) > 0)
		buf_printf(&r->out, "<p id=\"dispatch\">This server: %s, pg_relay node %s; dispatch %s.</p>\n",
				   web_db_flag(res, 0, 1) ? "a standby (its Processors wait)" : "a primary",
				   web_db_value(res, 0, 2), web_db_flag(res, 0, 0) ? "<b>paused everywhere</b>" : "running");
	else
		html_db_error(r, "pgrelay.dispatch_state");
	web_db_clear(res);
	processors(r);
	cluster(r);
	html_end(r);
}
