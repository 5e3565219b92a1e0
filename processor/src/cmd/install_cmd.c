/*
 * install_cmd.c - `pg_relay install` and `pg_relay upgrade`: both extensions installed and upgraded
 * over a plain connection, without CREATE EXTENSION: no superuser and no files on the server, as a
 * managed service (RDS, Cloud SQL, Azure, Supabase, Neon) allows. The SQL is the extensions' own,
 * built into this program (install_sql.h); each extension goes in one transaction.
 */
#include "install_cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "install_sql.h"
#include "install_state.h"
#include "log.h"
#include "pgconn.h"
#include "pgrelay.h"

static const char install_usage[] =
	"pg_relay install - installs pg_relay (and pg_relay_notifier) in a database over a plain connection,\n"
	"without CREATE EXTENSION: no superuser and no files on the server are needed. Run it as the role\n"
	"that is to own pg_relay's objects (on a managed service, the database's owner); it needs CREATEROLE\n"
	"unless pgrelay_producer, pgrelay_processor, pgrelay_admin and pgrelay_monitor exist already.\n"
	"Running it again is harmless: an install of this version is left as it is, an older one upgraded.\n"
	"\n"
	"Usage: pg_relay install [-d CONNINFO] [--notifier]\n"
	"       pg_relay install --print [--notifier]\n"
	"\n"
	"  -d, --dbname=CONNINFO   libpq connection string or URI (default: the PG* environment variables)\n"
	"      --notifier          also pg_relay_notifier (email), after pg_relay\n"
	"      --print             write the SQL of pg_relay (with --notifier: of pg_relay_notifier) to\n"
	"                          stdout instead, for psql --single-transaction -f\n"
	"  -h, --help              show this help and exit\n"
	"\n"
	"Exit status: 0 installed (or installed already), 1 the database refused, 2 usage.\n";

static const char upgrade_usage[] =
	"pg_relay upgrade - brings pg_relay (and pg_relay_notifier) installed by `pg_relay install` to this\n"
	"version, each in one transaction. An install made by CREATE EXTENSION is upgraded with ALTER\n"
	"EXTENSION ... UPDATE instead.\n"
	"\n"
	"Usage: pg_relay upgrade [-d CONNINFO] [--notifier]\n"
	"       pg_relay upgrade --print --from=VERSION [--notifier]\n"
	"\n"
	"  -d, --dbname=CONNINFO   libpq connection string or URI (default: the PG* environment variables)\n"
	"      --notifier          also pg_relay_notifier, after pg_relay\n"
	"      --print             write the SQL that upgrades from --from to stdout instead\n"
	"      --from=VERSION      with --print: the version installed now\n"
	"  -h, --help              show this help and exit\n"
	"\n"
	"Exit status: 0 upgraded (or at this version already), 1 the database refused, 2 usage.\n";

struct InstallArgs {
	bool upgrade;         /* pg_relay upgrade, not install */
	const char *conninfo; /* NULL: the PG* environment */
	bool notifier;        /* pg_relay_notifier too */
	bool print;           /* write the SQL, do not connect */
	const char *from;     /* upgrade --print: the version installed */
};

/* bundle finds the SQL of an extension by name. */
static const struct SqlBundle *
bundle(const char *ext)
{
	int i;

	for (i = 0; i < sql_bundle_count; i++)
		if (strcmp(sql_bundles[i].ext, ext) == 0)
			return &sql_bundles[i];
	return NULL;
}

/* version_cmp compares dotted versions numerically ("1.10" after "1.9"). */
static int
version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		char *end_a, *end_b;
		long x = strtol(a, &end_a, 10), y = strtol(b, &end_b, 10);

		a = end_a;
		b = end_b;
		if (x != y)
			return x < y ? -1 : 1;
		if (*a == '.')
			a++;
		if (*b == '.')
			b++;
		if ((*a && (*a < '0' || *a > '9')) || (*b && (*b < '0' || *b > '9')))
			return strcmp(a, b);
	}
	return 0;
}

/*
 * header: what every script starts with: the schema's path, and a check of what it needs.
 *
 * The path names the schema and pg_temp only: pg_catalog, left out, is searched first, as in
 * CREATE EXTENSION. With the schema first, an operator someone put in a schema of that name before
 * the install would be picked over the built-in one by the statements that check whose the schema
 * is (the guard section), and would stay bound into the views made after them. It is set for the
 * session, not the transaction (SET LOCAL does nothing outside a transaction block, so a script
 * run by psql -f without -1 would run on the installer's own path), and reset at the end
 * (trailer); a transaction that fails undoes it.
 */
static bool
header(const struct SqlBundle *b, struct Buf *out)
{
	bool ok = buf_printf(out,
						 "/* %s %s, installed over a plain connection (pg_relay install): run it in one "
						 "transaction, stopping at the first error (psql -1 -v ON_ERROR_STOP=1 -f) */\n"
						 "SET search_path = %s, pg_temp;\n",
						 b->ext, b->version, b->schema);

	/* what it builds on must be there, and be the installer's or a superuser's (as its guard says) */
	if (ok && b->requires != NULL)
		ok = buf_printf(
			out,
			"DO $pgrelay_requires$ BEGIN\n"
			"    IF pg_catalog.to_regprocedure('pgrelay.installation()') IS NULL THEN\n"
			"        RAISE EXCEPTION '%s needs %s: install it first (pg_relay install)';\n"
			"    END IF;\n"
			"    IF NOT EXISTS (SELECT FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r\n"
			"                   ON r.oid OPERATOR(pg_catalog.=) n.nspowner\n"
			"                   WHERE n.nspname OPERATOR(pg_catalog.=) 'pgrelay'::pg_catalog.name\n"
			"                     AND (r.rolsuper OR r.rolname OPERATOR(pg_catalog.=) current_user)) THEN\n"
			"        RAISE EXCEPTION 'schema pgrelay belongs to another role: install %s as the role that "
			"owns pg_relay';\n"
			"    END IF;\n"
			"END $pgrelay_requires$;\n",
			b->ext, b->requires, b->ext);
	return ok;
}

/* trailer: what every script ends with: the installer's own path back (header). */
static bool
trailer(struct Buf *out)
{
	return buf_printf(out, "\nRESET search_path;\n");
}

/* section finds a section of b by name; NULL when it has none. */
static const struct SqlSection *
section(const struct SqlBundle *b, const char *name)
{
	int i;

	for (i = 0; i < b->n_sections; i++)
		if (strcmp(b->sections[i].name, name) == 0)
			return &b->sections[i];
	return NULL;
}

/* install_sql writes the SQL of a fresh install of b: the schema, then every section in order. */
static bool
install_sql(const struct SqlBundle *b, struct Buf *out)
{
	int i;

	if (!header(b, out) || !buf_printf(out, "CREATE SCHEMA IF NOT EXISTS %s;\n", b->schema))
		return false;
	for (i = 0; i < b->n_sections; i++)
		if (!buf_printf(out, "\n%s", b->sections[i].sql))
			return false;
	return trailer(out);
}

/*
 * upgrade_sql writes the SQL that brings b from version from to its version: the schema steps on
 * the way, in order, then the code sections (as an upgrade by ALTER EXTENSION runs them). False
 * with err when there is no way from from.
 */
static bool
upgrade_sql(const struct SqlBundle *b, const char *from, struct Buf *out, char *err, size_t errlen)
{
	const struct SqlSection *guard = section(b, "guard");
	const char *v = from;
	int i, steps = 0;

	/* whose the schema is, before its installation() is asked which version it is */
	if (!header(b, out) || (guard != NULL && !buf_printf(out, "\n%s", guard->sql)) ||
		!buf_printf(
			out,
			"DO $pgrelay_from$ BEGIN\n"
			"    IF (SELECT version FROM %s.installation()) IS DISTINCT FROM '%s' THEN\n"
			"        RAISE EXCEPTION 'this upgrade of %s is from version %s, not the one installed';\n"
			"    END IF;\n"
			"END $pgrelay_from$;\n",
			b->schema, from, b->ext, from))
		return false;
	while (strcmp(v, b->version) != 0) {
		const struct SqlStep *s = NULL;

		for (i = 0; i < b->n_steps; i++)
			if (b->steps[i].from != NULL && strcmp(b->steps[i].from, v) == 0)
				s = &b->steps[i];
		if (s == NULL || ++steps > b->n_steps) {
			snprintf(err, errlen, "there is no upgrade of %s from version %s to %s", b->ext, from,
					 b->version);
			return false;
		}
		if (!buf_printf(out, "\n%s", s->sql))
			return false;
		v = s->to;
	}
	for (i = 0; i < b->n_sections; i++)
		if (!b->sections[i].only_install && !buf_printf(out, "\n%s", b->sections[i].sql))
			return false;
	return trailer(out);
}

/* run_transaction runs sql in a transaction of its own; false with the server's error on c. */
static bool
run_transaction(struct PgConn *c, const char *sql)
{
	if (!pgconn_exec(c, STMT_BEGIN, NULL))
		return false;
	if (!pgconn_script(c, sql)) {
		char error[sizeof c->error], hint[sizeof c->hint];

		/* keep the failure: the rollback would overwrite it */
		memcpy(error, c->error, sizeof error);
		memcpy(hint, c->hint, sizeof hint);
		if (!c->lost)
			pgconn_rollback(c);
		memcpy(c->error, error, sizeof error);
		memcpy(c->hint, hint, sizeof hint);
		return false;
	}
	return pgconn_exec(c, STMT_COMMIT, NULL);
}

/*
 * bring brings one extension to this version on c as its install part p says, and says what it
 * did. Returns 0, or 1 with the reason on stderr.
 */
static int
bring(struct PgConn *c, const struct InstallArgs *a, const struct SqlBundle *b, const struct InstallPart *p)
{
	const char *cmd = a->upgrade ? "upgrade" : "install";
	struct Buf sql = BUF_INIT;
	char err[256] = "";
	bool ok;

	switch (p->kind) {
	case IK_EXTENSION:
		if (version_cmp(p->version, b->version) == 0) {
			printf("pg_relay %s: %s %s is installed as an extension (CREATE EXTENSION) already\n", cmd,
				   b->ext, p->version);
			return 0;
		}
		fprintf(stderr,
				"pg_relay %s: %s %s is installed as an extension (CREATE EXTENSION)\n"
				"hint: upgrade it with ALTER EXTENSION %s UPDATE\n",
				cmd, b->ext, p->version, b->ext);
		return 1;
	case IK_FOREIGN:
		fprintf(stderr, "pg_relay %s: %s\nhint: %s\n", cmd, p->why, p->hint);
		return 1;
	case IK_HALF:
		fprintf(stderr,
				"pg_relay %s: schema %s exists but holds no complete install of %s\n"
				"hint: drop the schema (DROP SCHEMA %s CASCADE) if it is nobody's, then install again\n",
				cmd, b->schema, b->ext, b->schema);
		return 1;
	case IK_NONE:
		if (a->upgrade) {
			fprintf(stderr, "pg_relay upgrade: %s is not installed\nhint: pg_relay install%s\n", b->ext,
					a->notifier ? " --notifier" : "");
			return 1;
		}
		ok = install_sql(b, &sql);
		break;
	case IK_SCRIPT:
		if (version_cmp(p->version, b->version) == 0) {
			printf("pg_relay %s: %s %s is installed already\n", cmd, b->ext, p->version);
			return 0;
		}
		if (version_cmp(p->version, b->version) > 0) {
			fprintf(stderr,
					"pg_relay %s: %s %s is newer than this pg_relay (%s)\nhint: use the pg_relay of %s\n",
					cmd, b->ext, p->version, b->version, p->version);
			return 1;
		}
		ok = upgrade_sql(b, p->version, &sql, err, sizeof err);
		break;
	default:
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "pg_relay %s: %s\n", cmd, err[0] ? err : "out of memory");
		buf_free(&sql);
		return 1;
	}
	ok = run_transaction(c, sql.data);
	buf_free(&sql);
	if (!ok) {
		fprintf(stderr, "pg_relay %s: %s %s failed, nothing was changed: %s\n", cmd, b->ext, b->version,
				c->error);
		if (c->hint[0])
			fprintf(stderr, "hint: %s\n", c->hint);
		return 1;
	}
	if (p->kind == IK_NONE)
		printf("pg_relay %s: %s %s installed\n", cmd, b->ext, b->version);
	else
		printf("pg_relay %s: %s upgraded from %s to %s\n", cmd, b->ext, p->version, b->version);
	return 0;
}

/* print_sql writes the SQL of --print: an install, or an upgrade from --from. */
static int
print_sql(const struct InstallArgs *a)
{
	const struct SqlBundle *b = bundle(a->notifier ? "pg_relay_notifier" : "pg_relay");
	struct Buf sql = BUF_INIT;
	char err[256] = "";
	bool ok = a->upgrade ? upgrade_sql(b, a->from, &sql, err, sizeof err) : install_sql(b, &sql);

	if (ok)
		fputs(sql.data, stdout);
	else
		fprintf(stderr, "pg_relay %s: %s\n", a->upgrade ? "upgrade" : "install",
				err[0] ? err : "out of memory");
	buf_free(&sql);
	return ok ? 0 : 1;
}

/* parse_args: 0 go on, 1 help printed, 2 usage error (said). */
static int
parse_args(int argc, char **argv, struct InstallArgs *a)
{
	static const struct option lo[] = {
		{"dbname", required_argument, NULL, 'd'}, {"notifier", no_argument, NULL, 'n'},
		{"print", no_argument, NULL, 'p'},        {"from", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	const char *cmd = a->upgrade ? "upgrade" : "install";
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			a->conninfo = optarg;
			break;
		case 'n':
			a->notifier = true;
			break;
		case 'p':
			a->print = true;
			break;
		case 'f':
			if (!a->upgrade) {
				fprintf(stderr, "pg_relay install: --from is for pg_relay upgrade --print\n");
				return 2;
			}
			a->from = optarg;
			break;
		case 'h':
			fputs(a->upgrade ? upgrade_usage : install_usage, stdout);
			return 1;
		case ':':
			fprintf(stderr, "pg_relay %s: option \"%s\" needs a value\n", cmd, argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "pg_relay %s: unknown option \"%s\"\n", cmd, argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pg_relay %s: unexpected argument \"%s\"\n", cmd, argv[optind]);
		return 2;
	}
	if (a->upgrade && a->print != (a->from != NULL)) {
		fprintf(stderr, "pg_relay upgrade: --print and --from=VERSION go together\n");
		return 2;
	}
	if (a->print && a->conninfo != NULL) {
		fprintf(stderr, "pg_relay %s: --print connects to nothing: leave out -d\n", cmd);
		return 2;
	}
	return 0;
}

/* connect_to opens the one session of the command; false (said) when it cannot. */
static bool
connect_to(struct PgConn *c, const struct InstallArgs *a)
{
	const char *cmd = a->upgrade ? "upgrade" : "install";
	long wait_ms;
	bool config;

	pgconn_init(c, cmd, a->conninfo, "single");
	c->one_attempt = true;
	c->session_timeout_ms = -1;
	if (pgconn_session(c, 1000, &wait_ms))
		return true;
	fprintf(stderr, "pg_relay %s: could not connect: %s\n", cmd, c->error);
	if (pgconn_connect_hint(c->error, &config))
		fprintf(stderr, "hint: %s\n", pgconn_connect_hint(c->error, &config));
	return false;
}

int
install_main(int argc, char **argv, bool upgrade)
{
	struct InstallArgs a = {upgrade, NULL, false, false, NULL};
	const char *cmd = upgrade ? "upgrade" : "install";
	struct InstallState st;
	struct PgConn c;
	char err[512];
	int rc = parse_args(argc, argv, &a);

	if (rc != 0) {
		if (rc == 2)
			fprintf(stderr, "Try \"pg_relay %s --help\" for more information.\n", cmd);
		return rc == 1 ? 0 : 2;
	}
	if (a.print)
		return print_sql(&a);
	if (!pgconn_check_conninfo(a.conninfo, err, sizeof err)) {
		fprintf(stderr, "pg_relay %s: %s\n", cmd, err);
		return 2;
	}
	log_configure(LL_WARN, LF_TEXT);
	if (!connect_to(&c, &a)) {
		pgconn_destroy(&c);
		return 1;
	}
	if (!install_state_read(&c, IR_INSTALLER, &st)) {
		fprintf(stderr, "pg_relay %s: %s\n", cmd, c.error);
		rc = 1;
	} else if (a.notifier && st.relay.kind == IK_EXTENSION && st.notifier.kind != IK_EXTENSION) {
		fprintf(stderr,
				"pg_relay %s: pg_relay is installed as an extension: pg_relay_notifier must be too\n"
				"hint: CREATE EXTENSION pg_relay_notifier (or ALTER EXTENSION pg_relay_notifier UPDATE)\n",
				cmd);
		rc = 1;
	} else {
		rc = bring(&c, &a, bundle("pg_relay"), &st.relay);
		if (rc == 0 && a.notifier)
			rc = bring(&c, &a, bundle("pg_relay_notifier"), &st.notifier);
	}
	pgconn_destroy(&c);
	return rc;
}
