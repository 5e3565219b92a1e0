/*
 * install_state.c - which pg_relay a database has, by CREATE EXTENSION or by `pg_relay install`:
 * the catalog first (pg_extension, the schemas, whether installation() exists), then the version
 * installation() reports. Nothing here needs a right the monitor role lacks.
 */
#include "install_state.h"

#include <stdio.h>
#include <string.h>

#include "pgconn.h"

const char *
install_kind_name(enum InstallKind k)
{
	switch (k) {
	case IK_NONE:
		return "none";
	case IK_EXTENSION:
		return "extension";
	case IK_SCRIPT:
		return "script";
	case IK_HALF:
		return "incomplete";
	}
	return "?";
}

void
install_classify(const char *extversion, bool schema_used, const char *fn_version, struct InstallPart *p)
{
	memset(p, 0, sizeof(*p));
	if (extversion != NULL) {
		p->kind =
			IK_EXTENSION; /* pg_extension is the authority (a version before 1.3 has no installation()) */
		snprintf(p->version, sizeof p->version, "%s", extversion);
	} else if (!schema_used)
		p->kind = IK_NONE;
	else if (fn_version != NULL) {
		p->kind = IK_SCRIPT;
		snprintf(p->version, sizeof p->version, "%s", fn_version);
	} else
		p->kind = IK_HALF;
}

/*
 * fn_version runs installation() of a schema that has it; false with c->error set. A role that may
 * not run it (no USAGE on the schema, no EXECUTE) gets "?": the check of its rights that follows
 * says what it lacks.
 */
static bool
fn_version(struct PgConn *c, enum StmtId id, char *out, size_t len)
{
	PGresult *res = pgconn_query(c, id, NULL);
	const char *v;

	if (res == NULL && !c->lost && strcmp(c->sqlstate, "42501") == 0) {
		snprintf(out, len, "?");
		return true;
	}
	if (res == NULL)
		return false;
	v = PQntuples(res) > 0 ? pgconn_value(res, 0, 0) : NULL;
	snprintf(out, len, "%s", v ? v : "");
	pgconn_clear(res);
	return true;
}

bool
install_state_read(struct PgConn *c, struct InstallState *st)
{
	PGresult *res = pgconn_query(c, STMT_INSTALL_PROBE, NULL);
	char relay_fn[32] = "", notifier_fn[32] = "";
	char ext_relay[32], ext_notifier[32];
	bool relay_schema, notifier_schema, relay_has_fn, notifier_has_fn, relay_ext, notifier_ext;

	if (res == NULL)
		return false;
	relay_ext = pgconn_value(res, 0, 0) != NULL;
	snprintf(ext_relay, sizeof ext_relay, "%s", relay_ext ? pgconn_value(res, 0, 0) : "");
	relay_schema = strcmp(pgconn_value(res, 0, 1), "t") == 0;
	relay_has_fn = strcmp(pgconn_value(res, 0, 2), "t") == 0;
	notifier_ext = pgconn_value(res, 0, 3) != NULL;
	snprintf(ext_notifier, sizeof ext_notifier, "%s", notifier_ext ? pgconn_value(res, 0, 3) : "");
	notifier_schema = strcmp(pgconn_value(res, 0, 4), "t") == 0;
	notifier_has_fn = strcmp(pgconn_value(res, 0, 5), "t") == 0;
	pgconn_clear(res);
	/* pg_extension says the version of an extension; only a plain install needs installation() */
	if (!relay_ext && relay_has_fn && !fn_version(c, STMT_INSTALL_RELAY, relay_fn, sizeof relay_fn))
		return false;
	if (!notifier_ext && notifier_has_fn &&
		!fn_version(c, STMT_INSTALL_NOTIFIER, notifier_fn, sizeof notifier_fn))
		return false;
	install_classify(relay_ext ? ext_relay : NULL, relay_schema, relay_has_fn ? relay_fn : NULL, &st->relay);
	install_classify(notifier_ext ? ext_notifier : NULL, notifier_schema,
					 notifier_has_fn ? notifier_fn : NULL, &st->notifier);
	return true;
}

bool
install_state_problem(const struct InstallState *st, char *err, size_t errlen, char *hint, size_t hintlen)
{
	const struct InstallPart *r = &st->relay, *n = &st->notifier;

	if (r->kind == IK_NONE) {
		snprintf(err, errlen, "pg_relay is not installed in this database");
		snprintf(
			hint, hintlen,
			"a superuser runs CREATE EXTENSION pg_relay, or the database's owner runs pg_relay install -d "
			"CONNINFO (no superuser, no server files)");
		return true;
	}
	if (r->kind == IK_HALF || n->kind == IK_HALF) {
		const char *schema = r->kind == IK_HALF ? "pgrelay" : "pgrelay_notifier";

		snprintf(err, errlen, "schema %s exists but holds no complete install of %s", schema,
				 r->kind == IK_HALF ? "pg_relay" : "pg_relay_notifier");
		snprintf(
			hint, hintlen,
			"pg_relay install runs in one transaction: run it again%s, or drop the schema and install anew",
			r->kind == IK_HALF ? "" : " with --notifier");
		return true;
	}
	if (n->kind != IK_NONE && n->kind != r->kind) {
		snprintf(err, errlen,
				 "pg_relay is installed by %s and pg_relay_notifier by %s: both must come the same way",
				 r->kind == IK_EXTENSION ? "CREATE EXTENSION" : "pg_relay install",
				 n->kind == IK_EXTENSION ? "CREATE EXTENSION" : "pg_relay install");
		snprintf(hint, hintlen, "drop pg_relay_notifier and install it the way pg_relay was installed");
		return true;
	}
	return false;
}

void
install_state_describe(const struct InstallState *st, char *buf, size_t len)
{
	int n = snprintf(buf, len, "pg_relay %s (%s)", st->relay.version[0] ? st->relay.version : "-",
					 install_kind_name(st->relay.kind));

	if (st->notifier.kind != IK_NONE && n > 0 && (size_t) n < len)
		snprintf(buf + n, len - (size_t) n, ", pg_relay_notifier %s (%s)",
				 st->notifier.version[0] ? st->notifier.version : "-", install_kind_name(st->notifier.kind));
}
