/*
 * test_install_state.c - which install a database has, from what the catalog says
 * (install_classify), whose schema may be used by whom (install_schema_trust), and what keeps the
 * Processor from using it (install_state_problem).
 */
#include <string.h>

#include "install_state.h"
#include "unit.h"

static void
test_classify(void)
{
	static const struct {
		const char *extversion;
		bool schema_used;
		const char *fn_version;
		enum InstallKind kind;
		const char *version;
	} rows[] = {
		{"1.3", true, "1.3", IK_EXTENSION, "1.3"},
		{"1.2", true, NULL, IK_EXTENSION, "1.2"}, /* before installation() existed */
		{NULL, true, "1.3", IK_SCRIPT, "1.3"},
		{NULL, true, "?", IK_SCRIPT, "?"}, /* a role that may not run installation() */
		{NULL, true, NULL, IK_HALF, ""},
		{NULL, false, NULL, IK_NONE, ""},
	};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct InstallPart p;

		install_classify(rows[i].extversion, rows[i].schema_used, rows[i].fn_version, &p);
		CHECK(p.kind == rows[i].kind);
		CHECK_STR(p.version, rows[i].version);
	}
}

static struct InstallState
state(enum InstallKind relay, enum InstallKind notifier)
{
	struct InstallState st;

	memset(&st, 0, sizeof st);
	st.relay.kind = relay;
	st.notifier.kind = notifier;
	if (relay == IK_EXTENSION || relay == IK_SCRIPT)
		strcpy(st.relay.version, "1.3");
	if (notifier == IK_EXTENSION || notifier == IK_SCRIPT)
		strcpy(st.notifier.version, "1.3");
	return st;
}

static void
test_problems(void)
{
	static const struct {
		enum InstallKind relay, notifier;
		const char *err_has; /* NULL: none */
	} rows[] = {
		{IK_EXTENSION, IK_NONE, NULL},
		{IK_EXTENSION, IK_EXTENSION, NULL},
		{IK_SCRIPT, IK_SCRIPT, NULL},
		{IK_SCRIPT, IK_NONE, NULL},
		{IK_NONE, IK_NONE, "pg_relay is not installed"},
		{IK_HALF, IK_NONE, "schema pgrelay exists but holds no complete install of pg_relay"},
		{IK_SCRIPT, IK_HALF,
		 "schema pgrelay_notifier exists but holds no complete install of pg_relay_notifier"},
		{IK_EXTENSION, IK_SCRIPT,
		 "pg_relay is installed by CREATE EXTENSION and pg_relay_notifier by pg_relay install"},
		{IK_SCRIPT, IK_EXTENSION,
		 "pg_relay is installed by pg_relay install and pg_relay_notifier by CREATE EXTENSION"},
	};
	size_t i;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct InstallState st = state(rows[i].relay, rows[i].notifier);
		char err[256] = "", hint[256] = "";
		bool bad = install_state_problem(&st, err, sizeof err, hint, sizeof hint);

		CHECK(bad == (rows[i].err_has != NULL));
		if (rows[i].err_has != NULL) {
			CHECK(strstr(err, rows[i].err_has) != NULL);
			CHECK(hint[0] != '\0');
		}
	}
}

static struct SchemaOwner
owner(const char *name, bool super, bool me, bool acts_as_me, const char *creators)
{
	struct SchemaOwner o;

	memset(&o, 0, sizeof o);
	o.exists = true;
	strcpy(o.owner, name);
	o.owner_super = super;
	o.owner_is_me = me;
	o.owner_acts_as_me = acts_as_me || super || me;
	strcpy(o.creators, creators);
	return o;
}

static void
test_trust(void)
{
	struct SchemaOwner absent,
		postgres = owner("postgres", true, false, false, ""), mgr = owner("mgr", false, true, false, ""),
		made_me = owner("mgr", false, false, true, ""), mallory = owner("mallory", false, false, false, ""),
		open = owner("mgr", false, true, false, "PUBLIC");
	char why[320], hint[320];

	memset(&absent, 0, sizeof absent);
	/* nothing to trust: no schema */
	CHECK(install_schema_trust(IR_INSTALLER, "pgrelay", &absent, NULL, why, sizeof why, hint, sizeof hint));
	/* the installer: its own schema or a superuser's, closed to others */
	CHECK(install_schema_trust(IR_INSTALLER, "pgrelay", &mgr, NULL, why, sizeof why, hint, sizeof hint));
	CHECK(install_schema_trust(IR_INSTALLER, "pgrelay", &postgres, NULL, why, sizeof why, hint, sizeof hint));
	CHECK(!install_schema_trust(IR_INSTALLER, "pgrelay", &made_me, NULL, why, sizeof why, hint, sizeof hint));
	CHECK(!install_schema_trust(IR_INSTALLER, "pgrelay", &mallory, NULL, why, sizeof why, hint, sizeof hint));
	CHECK(strstr(why, "schema pgrelay belongs to role mallory, which is neither a superuser nor the role "
					  "installing") != NULL);
	CHECK(strstr(hint, "DROP SCHEMA pgrelay CASCADE") != NULL);
	CHECK(!install_schema_trust(IR_INSTALLER, "pgrelay", &open, NULL, why, sizeof why, hint, sizeof hint));
	CHECK_STR(hint, "REVOKE CREATE ON SCHEMA pgrelay FROM PUBLIC;");
	/* a user: an owner that could act as it anyway */
	CHECK(install_schema_trust(IR_USER, "pgrelay", &made_me, NULL, why, sizeof why, hint, sizeof hint));
	CHECK(install_schema_trust(IR_USER, "pgrelay", &postgres, NULL, why, sizeof why, hint, sizeof hint));
	CHECK(!install_schema_trust(IR_USER, "pgrelay", &mallory, NULL, why, sizeof why, hint, sizeof hint));
	CHECK(strstr(why, "could not act as this role") != NULL);
	CHECK(!install_schema_trust(IR_USER, "pgrelay", &open, NULL, why, sizeof why, hint, sizeof hint));
	/* the notifier's schema: pg_relay's owner's or a superuser's */
	CHECK(install_schema_trust(IR_USER, "pgrelay_notifier", &made_me, &made_me, why, sizeof why, hint,
							   sizeof hint));
	CHECK(install_schema_trust(IR_USER, "pgrelay_notifier", &postgres, &made_me, why, sizeof why, hint,
							   sizeof hint));
	{
		struct SchemaOwner appowner = owner("appowner", false, false, true, "");

		CHECK(!install_schema_trust(IR_USER, "pgrelay_notifier", &appowner, &postgres, why, sizeof why, hint,
									sizeof hint));
		CHECK_STR(
			why, "schema pgrelay_notifier belongs to role appowner, not to the owner of pg_relay (postgres)");
	}
}

static void
test_ignored(void)
{
	struct InstallState st = state(IK_EXTENSION, IK_FOREIGN);
	char err[256], hint[256];

	strcpy(st.notifier.why, "schema pgrelay_notifier belongs to role appowner");
	strcpy(st.notifier.hint, "drop it");
	CHECK(!install_state_problem(&st, err, sizeof err, hint, sizeof hint));
	CHECK(install_state_ignored(&st, err, sizeof err, hint, sizeof hint));
	CHECK_STR(err, "schema pgrelay_notifier belongs to role appowner");
	st = state(IK_FOREIGN, IK_NONE);
	strcpy(st.relay.why, "schema pgrelay belongs to role mallory");
	strcpy(st.relay.hint, "drop it");
	CHECK(install_state_problem(&st, err, sizeof err, hint, sizeof hint));
	CHECK_STR(err, "schema pgrelay belongs to role mallory");
	CHECK(!install_state_ignored(&st, err, sizeof err, hint, sizeof hint));
}

static void
test_describe(void)
{
	struct InstallState st = state(IK_SCRIPT, IK_SCRIPT);
	char buf[160];

	install_state_describe(&st, buf, sizeof buf);
	CHECK_STR(buf, "pg_relay 1.3 (script), pg_relay_notifier 1.3 (script)");
	st = state(IK_EXTENSION, IK_NONE);
	install_state_describe(&st, buf, sizeof buf);
	CHECK_STR(buf, "pg_relay 1.3 (extension)");
}

int
main(void)
{
	RUN(test_classify);
	RUN(test_problems);
	RUN(test_trust);
	RUN(test_ignored);
	RUN(test_describe);
	return UNIT_DONE();
}
