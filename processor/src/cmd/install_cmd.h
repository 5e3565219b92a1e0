/*
 * install_cmd.h - `pg_relay install` and `pg_relay upgrade`: the SQL side installed and upgraded
 * over a plain connection, without CREATE EXTENSION (docs/operations.md, "Managed PostgreSQL").
 */
#ifndef PGRELAY_INSTALL_CMD_H
#define PGRELAY_INSTALL_CMD_H

#include <stdbool.h>

/* install_main runs `pg_relay install` (upgrade false) or `pg_relay upgrade`; argv[0] is the command. */
int install_main(int argc, char **argv, bool upgrade);

#endif
