/*
 * install_state.c - which pg_relay a database has, by CREATE EXTENSION or by `pg_relay install`:
 * the catalog first (pg_extension, the schemas, whose they are, whether installation() exists),
 * then, only in a schema the session may trust, the version installation() reports. Nothing here
 * needs a right the monitor role lacks.
 *
 * Trust: a schema named pgrelay is not pg_relay because of its name. Any role that may create
 * schemas in the database may have made it, with functions, views and operators in it; whoever
 * calls them runs her code with its own rights. So nothing in a schema is used before the catalog
 * says its owner is one whose code may run as this role, and that no other role may create in it.
 */
#include "install_state.h"

#include <stdio.h>
#include <string.h>

#include "pgconn.h"
#include "utf8.h"

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
	case IK_FOREIGN:
		return "ignored";
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

/* owner_ok: may reader run code of the owner of o? */
static bool
owner_ok(enum InstallReader reader, const struct SchemaOwner *o)
{
	return reader == IR_INSTALLER ? o->owner_super || o->owner_is_me : o->owner_acts_as_me;
}

bool
install_schema_trust(enum InstallReader reader, const char *schema, const struct SchemaOwner *o,
					 const struct SchemaOwner *notifier_of, char *why, size_t whylen, char *hint,
					 size_t hintlen)
{
	if (!o->exists)
		return true;
	if (notifier_of != NULL && reader == IR_USER) {
		/* the notifier is pg_relay's owner's (who is trusted) or a superuser's, or nobody's to use */
		if (!o->owner_super && strcmp(o->owner, notifier_of->owner) != 0) {
			snprintf(why, whylen, "schema %s belongs to role %s, not to the owner of pg_relay (%s)", schema,
					 o->owner, notifier_of->owner);
			snprintf(hint, hintlen,
					 "pg_relay_notifier is ignored: if the schema is not an install of it, drop it; install "
					 "pg_relay_notifier as %s",
					 notifier_of->owner);
			return false;
		}
	} else if (!owner_ok(reader, o)) {
		if (reader == IR_INSTALLER) {
			snprintf(why, whylen,
					 "schema %s belongs to role %s, which is neither a superuser nor the role installing; "
					 "nothing in it was used",
					 schema, o->owner);
			snprintf(hint, hintlen,
					 "if the schema is not yours, have its owner or a superuser drop it (DROP SCHEMA %s "
					 "CASCADE), then install again; if %s is to own it, install as %s",
					 schema, o->owner, o->owner);
		} else {
			snprintf(why, whylen,
					 "schema %s belongs to role %s, which is not a superuser and could not act as this role: "
					 "its functions would run with this role's rights, so nothing in it was used",
					 schema, o->owner);
			snprintf(hint, hintlen,
					 "if %s installed pg_relay, connect as a role %s made or is a member of; if not, have a "
					 "superuser drop the schema",
					 o->owner, o->owner);
		}
		return false;
	}
	if (o->creators[0] != '\0') {
		snprintf(why, whylen,
				 "role(s) %s may create objects in schema %s, so what it holds may be theirs; nothing in "
				 "it was used",
				 o->creators, schema);
		snprintf(hint, hintlen, "REVOKE CREATE ON SCHEMA %s FROM %s;", schema, o->creators);
		return false;
	}
	return true;
}

/* owner_read reads whose a schema is from row r of the install probe. */
static void
owner_read(PGresult *res, int r, struct SchemaOwner *o)
{
	const char *v;

	memset(o, 0, sizeof(*o));
	o->exists = strcmp(pgconn_value(res, r, 1), "t") == 0;
	if (!o->exists)
		return;
	v = pgconn_value(res, r, 4);
	snprintf(o->owner, sizeof o->owner, "%s", v ? v : "?");
	o->owner_super = pgconn_value(res, r, 5) && strcmp(pgconn_value(res, r, 5), "t") == 0;
	o->owner_is_me = pgconn_value(res, r, 6) && strcmp(pgconn_value(res, r, 6), "t") == 0;
	o->owner_acts_as_me = pgconn_value(res, r, 7) && strcmp(pgconn_value(res, r, 7), "t") == 0;
	v = pgconn_value(res, r, 8);
	snprintf(o->creators, sizeof o->creators, "%s", v ? v : "");
	utf8_no_controls(o->owner);
	utf8_no_controls(o->creators);
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

/* What the probe says of one extension before its installation() is asked. */
struct Probed {
	bool ext;
	char extversion[32];
	bool used, has_fn;
};

/*
 * part_read classifies one extension: trusted first (IK_FOREIGN when not: nothing in it runs),
 * then the version of a script install from its installation().
 */
static bool
part_read(struct PgConn *c, enum InstallReader reader, const char *schema, const struct Probed *pr,
		  const struct SchemaOwner *notifier_of, enum StmtId fn, struct InstallPart *p)
{
	struct SchemaOwner o = p->schema;
	char version[32] = "", why[sizeof p->why], hint[sizeof p->hint];

	if (!install_schema_trust(reader, schema, &o, notifier_of, why, sizeof why, hint, sizeof hint)) {
		memset(p, 0, sizeof(*p));
		p->kind = IK_FOREIGN;
		p->schema = o;
		snprintf(p->why, sizeof p->why, "%s", why);
		snprintf(p->hint, sizeof p->hint, "%s", hint);
		return true;
	}
	/* pg_extension says the version of an extension; only a plain install needs installation() */
	if (!pr->ext && pr->has_fn && !fn_version(c, fn, version, sizeof version))
		return false;
	install_classify(pr->ext ? pr->extversion : NULL, pr->used, pr->has_fn ? version : NULL, p);
	p->schema = o;
	return true;
}

bool
install_state_read(struct PgConn *c, enum InstallReader reader, struct InstallState *st)
{
	PGresult *res = pgconn_query(c, STMT_INSTALL_PROBE, NULL);
	struct Probed pr[2];
	int i;

	if (res == NULL)
		return false;
	memset(st, 0, sizeof(*st));
	for (i = 0; i < 2 && i < PQntuples(res); i++) {
		const char *v = pgconn_value(res, i, 0);

		pr[i].ext = v != NULL;
		snprintf(pr[i].extversion, sizeof pr[i].extversion, "%s", v ? v : "");
		pr[i].used = pgconn_value(res, i, 2) && strcmp(pgconn_value(res, i, 2), "t") == 0;
		pr[i].has_fn = pgconn_value(res, i, 3) && strcmp(pgconn_value(res, i, 3), "t") == 0;
		owner_read(res, i, i == 0 ? &st->relay.schema : &st->notifier.schema);
	}
	pgconn_clear(res);
	if (i < 2) {
		snprintf(c->error, sizeof c->error, "the install probe returned %d rows, not 2", i);
		return false;
	}
	if (!part_read(c, reader, "pgrelay", &pr[0], NULL, STMT_INSTALL_RELAY, &st->relay))
		return false;
	/* the notifier's schema is checked against pg_relay's owner only when pg_relay's may be used */
	return part_read(c, reader, "pgrelay_notifier", &pr[1],
					 st->relay.kind == IK_FOREIGN ? NULL : &st->relay.schema, STMT_INSTALL_NOTIFIER,
					 &st->notifier);
}

bool
install_state_problem(const struct InstallState *st, char *err, size_t errlen, char *hint, size_t hintlen)
{
	const struct InstallPart *r = &st->relay, *n = &st->notifier;

	if (r->kind == IK_FOREIGN) {
		snprintf(err, errlen, "%s", r->why);
		snprintf(hint, hintlen, "%s", r->hint);
		return true;
	}
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
	if (n->kind != IK_NONE && n->kind != IK_FOREIGN && n->kind != r->kind) {
		snprintf(err, errlen,
				 "pg_relay is installed by %s and pg_relay_notifier by %s: both must come the same way",
				 r->kind == IK_EXTENSION ? "CREATE EXTENSION" : "pg_relay install",
				 n->kind == IK_EXTENSION ? "CREATE EXTENSION" : "pg_relay install");
		snprintf(hint, hintlen, "drop pg_relay_notifier and install it the way pg_relay was installed");
		return true;
	}
	return false;
}

bool
install_state_ignored(const struct InstallState *st, char *why, size_t whylen, char *hint, size_t hintlen)
{
	if (st->notifier.kind != IK_FOREIGN)
		return false;
	snprintf(why, whylen, "%s", st->notifier.why);
	snprintf(hint, hintlen, "%s", st->notifier.hint);
	return true;
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
