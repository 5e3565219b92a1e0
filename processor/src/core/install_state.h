/*
 * install_state.h - which pg_relay a database has, read the same way whether it came by CREATE
 * EXTENSION or by `pg_relay install`: for the startup check, pg_relay status and the installer.
 */
#ifndef PGRELAY_INSTALL_STATE_H
#define PGRELAY_INSTALL_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"

struct PgConn;

enum InstallKind {
	IK_NONE,      /* neither the extension nor anything in the schema */
	IK_EXTENSION, /* CREATE EXTENSION: pg_extension has it */
	IK_SCRIPT,    /* pg_relay install: the schema and its installation() function, no extension */
	IK_HALF       /* objects in the schema but no installation(): not an install of ours */
};

/* What a database has of one extension. */
struct InstallPart {
	enum InstallKind kind;
	char version[32]; /* "" for IK_NONE and IK_HALF */
};

struct InstallState {
	struct InstallPart relay;    /* pg_relay (schema pgrelay) */
	struct InstallPart notifier; /* pg_relay_notifier (schema pgrelay_notifier) */
};

/* install_kind_name: "none", "extension", "script" or "incomplete". */
const char *install_kind_name(enum InstallKind k);

/*
 * install_classify decides one part from what the catalog says: extversion (pg_extension, NULL
 * when absent), whether the schema holds anything, and the version installation() reports (NULL
 * when the function is missing).
 */
void install_classify(const char *extversion, bool schema_used, const char *fn_version,
					  struct InstallPart *p);

/* install_state_read reads both parts on c. False with c->error set. */
bool install_state_read(struct PgConn *c, struct InstallState *st) MUSTCHECK;

/*
 * install_state_problem: what keeps the Processor from using the database, if anything (false:
 * nothing), as one line in err and what to do in hint: pg_relay missing or incomplete,
 * pg_relay_notifier incomplete, or the two installed in different ways.
 */
bool install_state_problem(const struct InstallState *st, char *err, size_t errlen, char *hint,
						   size_t hintlen);

/* install_state_describe writes "pg_relay 1.3 (extension), pg_relay_notifier 1.3 (extension)" into buf. */
void install_state_describe(const struct InstallState *st, char *buf, size_t len);

#endif
