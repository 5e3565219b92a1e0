/*
 * ha.c - the multi-node and leader modes on the control connection. Each tick is one statement,
 * pgrelay._ha_tick(): heartbeat, watch or leadership, probe. The extension applies the rules
 * (docs/ha.md); this file carries the Processor's side of them from tick to tick (its first beat,
 * whether it still holds leadership) and logs what changed.
 */
#include "ha.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

bool
ha_enabled(enum Mode mode)
{
	return mode == MODE_MULTI_NODE || mode == MODE_LEADER;
}

void
ha_init(struct Ha *h, enum Mode mode)
{
	memset(h, 0, sizeof *h);
	h->mode = mode;
	h->first = true;
	h->leader = -1;
	h->contact = -1;
	h->standby = -1;
	h->node = -1;
}

/* flag reads a boolean column of the one-row result: 1 true, 0 false, -1 NULL. */
static int
flag(const PGresult *res, int col)
{
	const char *v = pgconn_value(res, 0, col);

	if (v == NULL)
		return -1;
	return strcmp(v, "t") == 0 ? 1 : 0;
}

/* The columns of STMT_HA_TICK, copied out of the result. */
struct HaAnswer {
	int dispatch;      /* -1: not decided this round */
	int leader;        /* -1: not decided this round */
	bool in_recovery;  /* the server is a standby */
	char waiting[128]; /* peers that have not acknowledged this node, "" when none */
	char adopted[256]; /* "node:rows,..." adopted just now, "" when none */
	char why[200];     /* why this node does not lead */
};

static void
read_answer(const PGresult *res, struct Ha *h, struct ProbeResult *r, struct HaAnswer *a)
{
	const char *v;

	r->has_work = flag(res, 0) == 1;
	r->reload_requested = flag(res, 1) == 1;
	r->paused = flag(res, 2) == 1;
	v = pgconn_value(res, 0, 3);
	r->generation = v ? atoll(v) : 0;
	a->dispatch = flag(res, 4);
	a->leader = flag(res, 5);
	v = pgconn_value(res, 0, 6);
	snprintf(a->waiting, sizeof a->waiting, "%s", v ? v : "");
	v = pgconn_value(res, 0, 7);
	snprintf(a->adopted, sizeof a->adopted, "%s", v ? v : "");
	a->in_recovery = flag(res, 8) == 1;
	v = pgconn_value(res, 0, 9);
	h->node = v ? atoi(v) : -1;
	v = pgconn_value(res, 0, 10);
	snprintf(a->why, sizeof a->why, "%s", v ? v : "");
	r->schedule_due = flag(res, 11) == 1;
}

/* note_standby logs the edges of recovery, as single mode does. */
static void
note_standby(struct Ha *h, bool in_recovery)
{
	const char *mode = config_mode_name(h->mode);

	if (in_recovery && h->standby != 1)
		log_info("standby_waiting", LOG_STR("mode", mode), LOG_STR("reason", "in_recovery"));
	else if (!in_recovery && h->standby == 1)
		log_info("primary_active", LOG_STR("mode", mode), LOG_STR("reason", "promoted"));
	h->standby = in_recovery ? 1 : 0;
}

/*
 * note_contact logs when this node starts waiting for peers to hear from it (and which), and when
 * they all have. A node waits after it starts, after a gap in its heartbeats, and whenever a peer
 * it hears from stops acknowledging it; meanwhile it dispatches nothing of its own (multi-node)
 * and does not lead.
 */
static void
note_contact(struct Ha *h, const char *waiting)
{
	const char *mode = config_mode_name(h->mode);

	if (waiting[0] != '\0') {
		if (h->contact != 0 || strcmp(h->waiting, waiting) != 0)
			log_info("peers_waiting", LOG_STR("mode", mode), LOG_INT("node", h->node),
					 LOG_STR("peers", waiting));
		h->contact = 0;
	} else {
		if (h->contact == 0)
			log_info("peers_in_contact", LOG_STR("mode", mode), LOG_INT("node", h->node));
		h->contact = 1;
	}
	snprintf(h->waiting, sizeof h->waiting, "%s", waiting);
}

/*
 * note_leader logs leadership changes. A node that acquires leadership holds it in its heartbeat at
 * once; one that yields keeps holding it until the events it started have finished (ha_probe), so
 * that no other node leads while they run. A node that does not lead says why when it starts and
 * whenever the reason changes (leader_waiting): a node started alone waits for its peers to be
 * heard from or found dead, and its log says so before it leads.
 */
static void
note_leader(struct Ha *h, int leader, const char *why)
{
	if (leader == 1 && h->leader != 1) {
		log_info("leader_acquired", LOG_STR("mode", "leader"), LOG_INT("node", h->node));
		h->holding = true;
	} else if (leader == 0 && h->leader == 1) {
		log_info("leader_yielded", LOG_STR("mode", "leader"), LOG_INT("node", h->node),
				 LOG_STR("reason", why));
	} else if (leader == 0 && why[0] != '\0' && strcmp(h->why, why) != 0) {
		log_info("leader_waiting", LOG_STR("mode", "leader"), LOG_INT("node", h->node),
				 LOG_STR("reason", why));
	}
	snprintf(h->why, sizeof h->why, "%s", leader == 1 ? "" : why);
	h->leader = leader;
}

int
ha_parse_adopted(const char *text, struct HaAdoption *out, int max)
{
	const char *p = text;
	int n = 0;

	while (p != NULL && *p != '\0' && n < max) {
		char *end;
		long node = strtol(p, &end, 10);
		long long rows;

		if (end == p || *end != ':')
			break;
		p = end + 1;
		rows = strtoll(p, &end, 10);
		if (end == p || (*end != ',' && *end != '\0'))
			break;
		out[n].node = (int) node;
		out[n].rows = rows;
		n++;
		p = *end == ',' ? end + 1 : NULL;
	}
	return n;
}

/* log_adopted writes a node_adopted line per "node:rows" of the tick's answer. */
static void
log_adopted(const struct Ha *h, const char *adopted)
{
	struct HaAdoption a[32];
	int i, n = ha_parse_adopted(adopted, a, 32);

	for (i = 0; i < n; i++)
		log_info("node_adopted", LOG_INT("node", a[i].node), LOG_INT("rows", a[i].rows),
				 LOG_INT("by", h->node));
}

/* apply acts on one answer: the edges of recovery, contact and leadership, and adoptions. */
static void
apply(struct Ha *h, bool beat, const struct HaAnswer *a)
{
	note_standby(h, a->in_recovery);
	if (a->dispatch >= 0)
		h->dispatch = a->dispatch == 1;
	if (beat && !a->in_recovery) {
		h->first = false;
		note_contact(h, a->waiting);
	}
	if (h->mode == MODE_LEADER && a->leader >= 0)
		note_leader(h, a->leader, a->in_recovery ? "in_recovery" : a->why);
	if (a->adopted[0] != '\0')
		log_adopted(h, a->adopted);
}

void
ha_lost(struct Ha *h)
{
	if (h->mode == MODE_LEADER && h->leader == 1)
		log_info("leader_yielded", LOG_STR("mode", "leader"), LOG_INT("node", h->node),
				 LOG_STR("reason", "the control connection was lost"));
	if (h->leader == 1)
		h->leader = 0;
	snprintf(h->why, sizeof h->why, "%s", "");
	h->first = true;
}

/*
 * new_session: the control connection is a new session (the first, or one opened after the last
 * was lost, whatever the gap: the server may have restarted). The Processor starts over as at its
 * start: the next beat re-arms the observation of the peers, and this node leads and dispatches
 * its own rows again only once they acknowledged a beat written since (_verdicts), never on an
 * acknowledgement from before.
 */
static void
new_session(struct Ha *h, const struct Ticker *t)
{
	if (h->session != 0)
		ha_lost(h);
	h->session = t->pg.sessions;
	h->first = true;
}

bool
ha_probe(struct Ha *h, struct Ticker *t, bool beat, int in_flight, struct ProbeResult *r)
{
	char gen[32];
	const char *params[5];
	struct HaAnswer a;
	PGresult *res;

	if (t->pg.sessions != h->session)
		new_session(h, t);

	/* Everything started while leading has finished: the heartbeat may stop saying it leads. */
	if (h->leader != 1 && in_flight == 0)
		h->holding = false;
	snprintf(gen, sizeof gen, "%lld", t->seen_generation);
	params[0] = gen;
	params[1] = beat ? "t" : "f";
	params[2] = h->first ? "t" : "f";
	params[3] = h->holding ? "t" : "f";
	params[4] = t->bound ? t->bound : "{}";
	res = tick_query(t, STMT_HA_TICK, params);
	if (res == NULL)
		return false;
	read_answer(res, h, r, &a);
	tick_keep_bound(t, pgconn_value(res, 0, 12));
	pgconn_clear(res);

	if (t->seen_generation < 0)
		t->seen_generation = r->generation;
	apply(h, beat, &a);
	tick_note_paused(t, r->paused);
	r->dispatch = h->dispatch;
	r->leader = h->mode == MODE_LEADER ? (h->leader == 1) : -1;
	log_debug("probe", LOG_BOOL("has_work", r->has_work), LOG_BOOL("paused", r->paused),
			  LOG_BOOL("dispatch", r->dispatch), LOG_BOOL("beat", beat), LOG_INT("leader", r->leader));
	return true;
}

bool
ha_rehome(struct Ha *h, struct Ticker *t)
{
	PGresult *res;
	int i;

	/*
	 * Rows moved onto this node keep the run_at they had: the floors start again from none, before
	 * the statement, so that an answer lost after its commit cannot leave the old floors in place.
	 */
	tick_keep_bound(t, NULL);
	res = pgconn_query(&t->pg, STMT_HA_REHOME, NULL);
	if (res == NULL)
		return false;
	for (i = 0; i < PQntuples(res); i++)
		log_info("queue_rehomed", LOG_STR("mode", config_mode_name(h->mode)),
				 LOG_INT("owner_node", atoi(PQgetvalue(res, i, 0))),
				 LOG_INT("rows", atoll(PQgetvalue(res, i, 1))));
	pgconn_clear(res);
	return true;
}

void
ha_stop(struct Ha *h, struct Ticker *t)
{
	(void) h;
	if (!pgconn_is_up(&t->pg))
		return;
	if (!pgconn_exec(&t->pg, STMT_HA_STOP, NULL))
		log_warn_c(&t->pg, "heartbeat_stop_failed", LOG_STR("error", t->pg.error));
}
