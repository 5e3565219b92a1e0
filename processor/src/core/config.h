/*
 * config.h - the Processor's settings: one table drives flags, the config file, --help, the
 * sample config and the "started" line.
 */
#ifndef PGRELAY_CONFIG_H
#define PGRELAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "log.h"

enum Mode {
	MODE_SINGLE,     /* dispatch while the server is a writable primary */
	MODE_MULTI_NODE, /* every node dispatches the rows it owns */
	MODE_LEADER      /* the lowest live node dispatches unrestricted rows */
};

struct Config {
	char *dbname; /* libpq connection string or URI; NULL: PG* environment */
	enum Mode mode;
	int workers; /* worker connections */
	long poll_interval_ms;
	bool once; /* drain what is due, then exit 0 */
	enum LogFormat log_format;
	enum LogLevel log_level;
	int batch_size;            /* most ids taken per fetch */
	int events_per_commit;     /* most sql events one worker finishes in one transaction */
	long shutdown_timeout_ms;  /* how long in-flight events may finish on SIGTERM */
	long reconnect_max_ms;     /* cap of the reconnect backoff */
	char *secrets_dir;         /* where file: secrets live, a directory per owner */
	char *secret_env;          /* which environment variables each owner may name (secrets.h) */
	long max_delivery_time_ms; /* cap on one email delivery attempt */
	char *metrics;             /* ADDR:PORT of the Prometheus endpoint; NULL: none */
	char *config_file;         /* the --config file, if any */
};

/* config_defaults fills cf with the defaults of the table. */
void config_defaults(struct Config *cf);
void config_free(struct Config *cf);

/*
 * config_load builds a configuration the way startup and SIGHUP do: defaults, then the --config
 * file (if argv names one), then argv's flags. Returns 0 on success, 1 when --help/--version was
 * handled (output in out), 2 on a usage or value error (one line in err).
 */
int config_load(struct Config *cf, int argc, char **argv, struct Buf *out, char *err, size_t errlen);

/* config_parse_duration accepts "250ms", "1s", "2min", "1h" or a plain number of seconds. */
bool config_parse_duration(const char *s, long *ms);

/*
 * config_parse_int reads s as a decimal integer from min to max into *out: digits only, with a
 * leading '-' only when min is negative; no white space, no '+', nothing after the digits.
 */
bool config_parse_int(const char *s, long min, long max, long *out);

/* The number of settings in the table (config.c checks it at compile time). */
#define CONFIG_NPARAMS 15

/* The effective settings as log fields, for the "started" line. */
struct ConfigFields {
	struct LogField f[CONFIG_NPARAMS];
	char text[CONFIG_NPARAMS][1024]; /* the values the string fields point at */
	int n;
};

/*
 * config_describe lists every setting as a log field: integers as numbers, everything else as the
 * text the config file would take; the connection string without any password.
 */
void config_describe(const struct Config *cf, struct ConfigFields *out);

/*
 * config_apply_reload copies the reloadable settings of fresh into cf and reports in changed the
 * settings that need a restart (not applied). Returns true when anything reloadable changed.
 */
bool config_apply_reload(struct Config *cf, const struct Config *fresh, struct Buf *changed);

const char *config_mode_name(enum Mode m);

#endif
