/*
 * presence.c - the Processor reports itself in pgrelay.processors (host, pid, version, mode,
 * workers, connected workers, busy, started, last tick) through pgrelay._processor_report(). The report is a
 * statement of its own every 10 s rather than part of every probe: the probe stays a read, and an
 * idle Processor's single write every 10 s is committed asynchronously (docs/monitoring.md has the
 * measured cost).
 */
#include "presence.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

void
presence_init(struct Presence *p)
{
	memset(p, 0, sizeof *p);
	if (gethostname(p->host, sizeof p->host) != 0 || p->host[0] == '\0')
		snprintf(p->host, sizeof p->host, "unknown");
	p->host[sizeof p->host - 1] = '\0';
	p->pid = (int) getpid();
	iso8601_now(p->started_at, sizeof p->started_at);
}

void
presence_soon(struct Presence *p)
{
	p->next_us = 0;
}

bool
presence_tick(struct Presence *p, struct Ticker *t, int workers, int connected, int in_flight,
			  long poll_interval_ms)
{
	char pid[16], nworkers[16], nconnected[16], busy[16], every[24];
	const char *values[8] = {p->host, pid, PGRELAY_VERSION, nworkers, busy, p->started_at, every, nconnected};
	long every_ms = poll_interval_ms > PRESENCE_EVERY_MS ? poll_interval_ms : PRESENCE_EVERY_MS;
	long long now = now_us();

	/* a new session reports at once: a report of the old one says a backend that is gone */
	if (now < p->next_us && t->pg.sessions == p->session)
		return true;
	p->next_us = now + (long long) every_ms * 1000;
	snprintf(pid, sizeof pid, "%d", p->pid);
	snprintf(nworkers, sizeof nworkers, "%d", workers);
	snprintf(nconnected, sizeof nconnected, "%d", connected);
	/* in_flight counts events, and a batch is many events on one worker: no more workers are busy */
	snprintf(busy, sizeof busy, "%d", in_flight < workers ? in_flight : workers);
	snprintf(every, sizeof every, "%ld", every_ms);
	if (pgconn_exec(&t->pg, STMT_PROCESSOR_REPORT, values)) {
		p->session = t->pg.sessions;
		p->reported = true;
		p->warned = false;
		return true;
	}
	if (t->pg.lost)
		return false;
	if (!p->warned)
		log_warn_c(&t->pg, "report_failed", LOG_STR("sqlstate", t->pg.sqlstate),
				   LOG_STR("error", t->pg.error));
	p->warned = true;
	return true;
}

void
presence_stop(struct Presence *p, struct Ticker *t)
{
	char pid[16];
	const char *values[2] = {p->host, pid};

	if (!p->reported || !pgconn_is_up(&t->pg))
		return;
	snprintf(pid, sizeof pid, "%d", p->pid);
	if (!pgconn_exec(&t->pg, STMT_PROCESSOR_STOP, values))
		log_warn_c(&t->pg, "report_failed", LOG_STR("sqlstate", t->pg.sqlstate),
				   LOG_STR("error", t->pg.error));
}
