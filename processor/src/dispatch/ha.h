/*
 * ha.h - the multi-node and leader modes on the control connection: the tick that writes this
 * node's heartbeat and applies the cluster's rules, the re-homing of orphaned rows, the clean
 * stop. The rules live in the extension (docs/ha.md); this module acts on their answers.
 */
#ifndef PGRELAY_HA_H
#define PGRELAY_HA_H

#include <stdbool.h>

#include "compiler.h"
#include "config.h"
#include "tick.h"

/* What the Processor knows of its node's place in the cluster, between ticks. */
struct Ha {
	enum Mode mode;        /* MODE_MULTI_NODE or MODE_LEADER */
	bool first;            /* no heartbeat of this run written yet: the next one re-arms the watch */
	int leader;            /* leader mode: -1 not decided yet, 0 not leading, 1 leading */
	bool holding;          /* the heartbeat says this node leads: it does, or events it began as leader run */
	int contact;           /* -1 not decided yet, 0 waiting for peers to hear from it, 1 in contact */
	int standby;           /* -1 unknown, 0 a writable node, 1 in recovery */
	bool dispatch;         /* the gate as last decided (a drain round keeps it) */
	int node;              /* this node's pg_relay node id, as the database reported it */
	char waiting[128];     /* the peers last reported as not having heard from this node */
	char why[200];         /* leader mode: why it did not lead, as last logged ("" when it leads) */
	unsigned long session; /* the control session (pgconn sessions) the decisions above were made on */
};

/* One "node:rows" of a tick's answer: the rows this node adopted from a dead node. */
struct HaAdoption {
	int node;
	long long rows;
};

/*
 * ha_parse_adopted reads "2:10,3:0" (the adopted column of pgrelay._ha_tick) into at most max
 * entries and returns how many; it stops at the first malformed entry.
 */
int ha_parse_adopted(const char *text, struct HaAdoption *out, int max);

/* ha_enabled: does the mode run heartbeats (multi-node, leader)? */
bool ha_enabled(enum Mode mode);

void ha_init(struct Ha *h, enum Mode mode);

/*
 * ha_probe runs one tick of the mode (pgrelay._ha_tick): with beat, the heartbeat and the
 * decision (adoption, leadership, contact) and then the probe; without (a drain round), the probe
 * only. in_flight is the number of events running now (a node that stopped leading says it still
 * leads until they are done). Fills r (r->leader: this node's leadership in leader mode, else -1)
 * and logs what changed. Returns false when the statement failed (t->pg says why).
 */
bool ha_probe(struct Ha *h, struct Ticker *t, bool beat, int in_flight, struct ProbeResult *r) MUSTCHECK;

/*
 * ha_rehome runs pgrelay._startup_queue_check() (at start and on every reload) and logs each owner
 * whose rows moved here. Returns false when the statement failed (t->pg says why).
 */
bool ha_rehome(struct Ha *h, struct Ticker *t) MUSTCHECK;

/*
 * ha_lost: the control connection was lost. Whatever this node decided rests on a session that is
 * gone (its server may have restarted): it leads nothing from now on, and the next session starts
 * as a new Processor does (ha_probe re-arms it).
 */
void ha_lost(struct Ha *h);

/*
 * ha_stop tells the cluster that this Processor stopped cleanly with nothing left running, so that
 * another node may lead at once. Best effort: a failure is logged and changes nothing else.
 */
void ha_stop(struct Ha *h, struct Ticker *t);

#endif
