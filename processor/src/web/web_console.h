/*
 * web_console.h - `pg_relay web`: the web console, a subcommand of the same binary
 * (docs/console.md).
 */
#ifndef PGRELAY_WEB_CONSOLE_H
#define PGRELAY_WEB_CONSOLE_H

/* web_main runs `pg_relay web ARGS` (argv[0] is "web"); returns the exit status. */
int web_main(int argc, char **argv);

#endif
