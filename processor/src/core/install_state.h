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
	IK_HALF,      /* objects in the schema but no installation(): not an install of ours */
	IK_FOREIGN    /* a schema of that name that this session must not use (why says whose) */
};

/* Who reads the install: the rule a schema's owner must meet before anything in it is used. */
enum InstallReader {
	IR_INSTALLER, /* pg_relay install / upgrade: the schema is the installing role's or a superuser's */
	IR_USER       /* the Processor, status, the console: the owner could act as this role anyway */
};

/* Whose a schema is, as the catalog says. */
struct SchemaOwner {
	bool exists;
	char owner[64];        /* its owner's name */
	bool owner_super;      /* ... is a superuser */
	bool owner_is_me;      /* ... is the session's role */
	bool owner_acts_as_me; /* ... could act as the session's role (install_state.c) */
	char creators[256];    /* the other roles that may create objects in it, "" for none */
};

/* What a database has of one extension. */
struct InstallPart {
	enum InstallKind kind;
	char version[32]; /* "" but for IK_EXTENSION and IK_SCRIPT */
	struct SchemaOwner schema;
	char why[320];  /* IK_FOREIGN: why the schema is not used */
	char hint[320]; /* IK_FOREIGN: what to do about it */
};

struct InstallState {
	struct InstallPart relay;    /* pg_relay (schema pgrelay) */
	struct InstallPart notifier; /* pg_relay_notifier (schema pgrelay_notifier) */
};

/* install_kind_name: "none", "extension", "script", "incomplete" or "ignored". */
const char *install_kind_name(enum InstallKind k);

/*
 * install_classify decides one part from what the catalog says: extversion (pg_extension, NULL
 * when absent), whether the schema holds anything, and the version installation() reports (NULL
 * when the function is missing).
 */
void install_classify(const char *extversion, bool schema_used, const char *fn_version,
					  struct InstallPart *p);

/*
 * install_schema_trust decides whether reader may use a schema: false with why and hint when not.
 * notifier_of, for the schema of pg_relay_notifier, is pg_relay's schema (NULL for pg_relay's):
 * a user trusts the notifier's schema only when pg_relay's owner or a superuser owns it.
 */
bool install_schema_trust(enum InstallReader reader, const char *schema, const struct SchemaOwner *o,
						  const struct SchemaOwner *notifier_of, char *why, size_t whylen, char *hint,
						  size_t hintlen);

/*
 * install_state_read reads both parts on c, as reader: whose each schema is, from the catalog,
 * and only then, in a schema reader may use, the version installation() reports. A schema reader
 * must not use is IK_FOREIGN: nothing in it has run. False with c->error set.
 */
bool install_state_read(struct PgConn *c, enum InstallReader reader, struct InstallState *st) MUSTCHECK;

/*
 * install_state_problem: what keeps the Processor from using the database, if anything (false:
 * nothing), as one line in err and what to do in hint: pg_relay missing, incomplete or in a schema
 * the session must not use, pg_relay_notifier incomplete, or the two installed in different ways.
 * A pg_relay_notifier in a schema the session must not use is no problem: it is left alone
 * (install_state_ignored says so).
 */
bool install_state_problem(const struct InstallState *st, char *err, size_t errlen, char *hint,
						   size_t hintlen);

/* install_state_ignored: true, with the reason in why and hint, when pg_relay_notifier's schema is not used. */
bool install_state_ignored(const struct InstallState *st, char *why, size_t whylen, char *hint,
						   size_t hintlen);

/* install_state_describe writes "pg_relay 1.3 (extension), pg_relay_notifier 1.3 (extension)" into buf. */
void install_state_describe(const struct InstallState *st, char *buf, size_t len);

#endif
