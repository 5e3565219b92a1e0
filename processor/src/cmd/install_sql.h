/*
 * install_sql.h - the SQL of both extensions, built into the Processor by processor/tools/gen-sql
 * from the same sources and in the same order as their CREATE EXTENSION scripts (extension/mkscript),
 * for installs over a plain connection (install_cmd.c).
 */
#ifndef PGRELAY_INSTALL_SQL_H
#define PGRELAY_INSTALL_SQL_H

#include <stdbool.h>

/* One section of an extension (src/NAME.sql). */
struct SqlSection {
	const char *name;
	bool only_install; /* the tables: a fresh install makes them, upgrades change them in steps */
	const char *sql;
};

/* One upgrade step (upgrade/FROM--TO.sql): the schema changes between two versions. */
struct SqlStep {
	const char *from, *to;
	const char *sql;
};

/* An extension's SQL at the version built here. */
struct SqlBundle {
	const char *ext;      /* pg_relay, pg_relay_notifier */
	const char *schema;   /* pgrelay, pgrelay_notifier */
	const char *version;  /* the version the sections are (the control file's default_version) */
	const char *requires; /* the extension it needs first, or NULL */
	const struct SqlSection *sections;
	int n_sections;
	const struct SqlStep *steps;
	int n_steps;
};

extern const struct SqlBundle sql_bundles[];
extern const int sql_bundle_count;

#endif
