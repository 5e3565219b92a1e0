/*
 * statements.h - every SQL statement the Processor sends, in one table: name, text, parameter
 * count, and whether it is prepared once per session. Callers name a statement by its id and pass
 * only the values; pgconn.c looks the rest up here. The one script (the held transaction's BEGIN)
 * is made here too.
 */
#ifndef PGRELAY_STATEMENTS_H
#define PGRELAY_STATEMENTS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * NOTIFIER_TRUSTED: may pg_relay_notifier's schema be used, from the catalog alone: it belongs to
 * pg_relay's owner or to a superuser, and no other role may create objects in it. A schema of that
 * name that another role made holds her functions; a statement naming them is not even planned
 * (planning may run an immutable function of hers that an inlined SQL function calls).
 */
#define NOTIFIER_TRUSTED                                                                \
	"EXISTS (SELECT FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_namespace r"      \
	" ON r.nspname = 'pgrelay' JOIN pg_catalog.pg_roles o ON o.oid = n.nspowner"        \
	" WHERE n.nspname = 'pgrelay_notifier' AND (o.rolsuper OR n.nspowner = r.nspowner)" \
	" AND NOT EXISTS (SELECT FROM pg_catalog.aclexplode(n.nspacl) a"                    \
	" WHERE a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner))"

enum StmtId {
	STMT_SESSION_SETUP,     /* after connecting: pg_relay.mode, client_connection_check_interval */
	STMT_SET_TIMEOUT,       /* statement_timeout of the session */
	STMT_WHOAMI,            /* startup: the role and database, for messages */
	STMT_INSTALL_PROBE,     /* startup, status, install: what the catalog says of both extensions */
	STMT_INSTALL_RELAY,     /* ... pgrelay.installation(): the version of a script install */
	STMT_INSTALL_NOTIFIER,  /* ... pgrelay_notifier.installation() */
	STMT_SCHEMA_OID,        /* startup: which schema is pgrelay (its oid) */
	STMT_SCHEMA_GUARD,      /* each probe, first: an error unless pgrelay is the trusted schema */
	STMT_PRIVILEGES,        /* startup: may this role run the dispatch functions */
	STMT_INTERFACE_VERSION, /* startup: pgrelay.interface_version() */
	STMT_PROBE,             /* each tick: queue_probe() and the mode gate */
	STMT_QUEUE_FETCH,       /* the fetch: _queue_fetch(), queue_pending_ids() without row locks */
	STMT_PROCESS_ONE,       /* a SQL event, whole */
	STMT_PROCESS_BATCH,     /* several SQL events in one transaction */
	STMT_CONFIG_HINT,       /* an attempt failed with a configuration error: what to fix */
	STMT_NOTIFIER_TRUSTED,  /* a notify event: may the notifier's schema be used (NOTIFIER_TRUSTED) */
	STMT_CLAIM_FETCH,       /* ... claim its row and fetch its message */
	STMT_ROLLBACK_FETCH,    /* ... the fetch raised: back to the savepoint before it */
	STMT_CLAIM,             /* ... and claim the row alone */
	STMT_FINISH,            /* the log row, the retry decision, the row finished (held.c) */
	STMT_SET_STATUS,        /* the attempt, recorded in the notifier */
	STMT_DEFER,             /* the row moved past the rate limit, no attempt spent */
	STMT_WEBHOOK_CLAIM,     /* a webhook event: claim its row, with the channel's endpoint */
	STMT_DESTINATION_CLAIM, /* a destination's event (redis): claim its row, with the channel's settings */
	STMT_DESTINATION_CLAIM_MANY, /* several events of a destination: claimed in one statement (held.c) */
	STMT_FINISH_MANY,            /* their log rows and rows finished in one statement (held.c) */
	STMT_HA_TICK,                /* each tick in multi-node and leader mode: heartbeat, decision, probe */
	STMT_HA_REHOME,              /* start and reload in multi-node and leader mode: _startup_queue_check() */
	STMT_HA_STOP,                /* a clean stop in multi-node and leader mode: the heartbeat says stopped */
	STMT_SET_LEADER,             /* pg_relay.is_leader of a worker session, between events */
	STMT_QUEUE_STATS,            /* a scrape of --metrics: pgrelay.queue_depth, topic_subscribers */
	STMT_PROCESSOR_REPORT,       /* every 10 s: this Processor's row of pgrelay.processors */
	STMT_SCHEDULE_FIRE,          /* a tick whose probe says a schedule is due: _schedule_fire() */
	STMT_PROCESSOR_STOP,         /* a clean stop: the row goes */
	STMT_STATUS_RIGHTS,          /* pg_relay status: the views it reads that this role may not */
	STMT_STATUS_DISPATCH,        /* ... pause, standby, node */
	STMT_STATUS_PROCESSORS,      /* ... the Processors */
	STMT_STATUS_CLUSTER,         /* ... the nodes of a multi-master cluster */
	STMT_STATUS_CHANNELS,        /* ... the channels */
	STMT_STATUS_SCHEDULES,       /* ... the recurring events */
	STMT_STATUS_TOPICS,          /* ... the topics' subscribers */
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_COUNT
};

struct Statement {
	const char *name; /* the prepared statement's name, and the statement's name in messages */
	const char *sql;  /* the text; values only ever travel as parameters $1..$n */
	int nparams;
	bool prepared; /* run often enough to be prepared once per session */
};

/* statement returns the table row of id. */
const struct Statement *statement(enum StmtId id);

/*
 * statement_begin_held writes the script that opens a notify event's held transaction: BEGIN, an
 * idle_in_transaction_session_timeout of idle_ms for this transaction, and the savepoint a failing
 * fetch rolls back to, for pgconn_script (one round trip; SET takes no parameters, so our own
 * integer is the one value formatted into SQL anywhere).
 */
void statement_begin_held(char *buf, size_t len, long idle_ms);
#define STMT_SCRIPT_MAX 160

#endif
