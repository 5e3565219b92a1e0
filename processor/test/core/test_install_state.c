/*
 * test_install_state.c - which install a database has, from what the catalog says
 * (install_classify), and what keeps the Processor from using it (install_state_problem).
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
	RUN(test_describe);
	return UNIT_DONE();
}
