/*
 * status_cmd.h - `pg_relay status -d CONNINFO`: one screen about pg_relay in a database, for an
 * operator; needs only the rights of pgrelay_monitor.
 */
#ifndef PGRELAY_STATUS_CMD_H
#define PGRELAY_STATUS_CMD_H

#include <stddef.h>

/* status_main runs the subcommand (argv[0] is "status") and returns the exit status: 0, 1 or 2. */
int status_main(int argc, char **argv);

/* status_format_age writes a number of seconds as "45s", "4m12s", "2h03m", "3d04h" ("-" if < 0). */
void status_format_age(long long secs, char *buf, size_t len);

#endif
