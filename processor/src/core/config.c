/*
 * config.c - settings from defaults, a config file and command-line flags, all described by one
 * table (params[]), in alphabetical order.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <curl/curl.h>
#include <jansson.h>

#include "hostport.h"
#include "pgconn.h"
#include "secrets.h"

enum ConfType { CT_STRING, CT_INT, CT_DURATION, CT_BOOL, CT_ENUM };

struct ConfParam {
	const char *name; /* long flag and config-file key */
	int short_flag;   /* 0 when there is none */
	enum ConfType type;
	size_t offset;              /* of the field in struct Config */
	const char *def;            /* default, as it would be written in the file */
	bool reloadable;            /* applied on SIGHUP; else needs a restart */
	const char *const *choices; /* CT_ENUM: the names, index = enum value */
	long min, max;              /* CT_INT and CT_DURATION (milliseconds) */
	const char *metavar;
	const char *help;
};

static const char *const mode_names[] = {"single", "multi-node", "leader", NULL};
static const char *const format_names[] = {"text", "json", NULL};
static const char *const level_names[] = {"error", "warn", "info", "debug", "trace", NULL};

#define F(field) offsetof(struct Config, field)

static const struct ConfParam params[] = {
	{"batch-size", 0, CT_INT, F(batch_size), "1000", true, NULL, 1, 100000, "N",
	 "most events taken from the queue per fetch"},
	{"dbname", 'd', CT_STRING, F(dbname), "", false, NULL, 0, 0, "CONNINFO",
	 "libpq connection string or URI (default: the PG* environment variables)"},
	{"events-per-commit", 0, CT_INT, F(events_per_commit), "50", true, NULL, 1, 1000, "N",
	 "most events one worker finishes in one transaction (1: each in its own)"},
	{"log-format", 0, CT_ENUM, F(log_format), "text", true, format_names, 0, 0, "text|json",
	 "log line format"},
	{"log-level", 0, CT_ENUM, F(log_level), "info", true, level_names, 0, 0, "LEVEL",
	 "error, warn, info, debug or trace"},
	{"max-delivery-time", 0, CT_DURATION, F(max_delivery_time_ms), "300s", true, NULL, 1000, 3600000,
	 "DURATION", "hard cap on one attempt of an email, a webhook or a destination"},
	{"metrics", 0, CT_STRING, F(metrics), "", false, NULL, 0, 0, "ADDR:PORT",
	 "serve Prometheus metrics on GET http://ADDR:PORT/metrics (e.g. 127.0.0.1:9471; default: off)"},
	{"mode", 'm', CT_ENUM, F(mode), "single", false, mode_names, 0, 0, "MODE",
	 "high-availability mode: single, multi-node or leader"},
	{"once", 0, CT_BOOL, F(once), "off", false, NULL, 0, 0, NULL,
	 "drain what is due, then exit 0 (for cron and tests)"},
	{"poll-interval", 'i', CT_DURATION, F(poll_interval_ms), "1s", true, NULL, 10, 3600000, "DURATION",
	 "time between two probes of an idle queue"},
	{"reconnect-max", 0, CT_DURATION, F(reconnect_max_ms), "30s", true, NULL, 100, 3600000, "DURATION",
	 "longest wait between two reconnection attempts"},
	{"secret-env", 0, CT_STRING, F(secret_env), "", true, NULL, 0, 0, "LIST",
	 "environment variables profiles and channels may name as env:VAR (VAR=profile/NAME, "
	 "VAR=webhook/CHANNEL, VAR=channel/CHANNEL, ...)"},
	{"secrets-dir", 0, CT_STRING, F(secrets_dir), "", true, NULL, 0, 0, "DIR",
	 "directory of file: secrets, one subdirectory per owner (DIR/profile/NAME, DIR/webhook/CHANNEL, "
	 "DIR/channel/CHANNEL)"},
	{"shutdown-timeout", 0, CT_DURATION, F(shutdown_timeout_ms), "30s", true, NULL, 0, 3600000, "DURATION",
	 "how long in-flight events may finish after SIGTERM"},
	{"workers", 'w', CT_INT, F(workers), "4", false, NULL, 1, 64, "N",
	 "worker connections (events processed in parallel)"},
};

#define NPARAMS ((int) (sizeof params / sizeof params[0]))
_Static_assert(NPARAMS == CONFIG_NPARAMS, "CONFIG_NPARAMS is the number of rows of params[]");

static const char usage_head[] =
	"pg_relay - the pg_relay Processor: polls pgrelay.queue and runs each event's action.\n"
	"\n"
	"Usage: pg_relay [OPTION]...\n"
	"       pg_relay status [-d CONNINFO]\n"
	"       pg_relay install [-d CONNINFO] [--notifier]\n"
	"       pg_relay upgrade [-d CONNINFO] [--notifier]\n"
	"       pg_relay web [-d CONNINFO] [WEB OPTION]...\n"
	"\n"
	"Options:\n";

static const char usage_tail[] =
	"  -c, --config=FILE            read settings from FILE (same keys as the long options)\n"
	"      --sample-config          print an example config file and exit\n"
	"  -v, --verbose                more log output (repeatable)\n"
	"  -V, --version                print version information and exit\n"
	"  -h, --help                   show this help and exit\n"
	"\n"
	"Durations take a unit: ms, s, min or h (a bare number is seconds).\n"
	"pg_relay status prints one screen about the database's channels and Processors and exits\n"
	"(pg_relay status --help). pg_relay install and upgrade put the SQL side into a database over a\n"
	"plain connection, without CREATE EXTENSION (pg_relay install --help). pg_relay web serves the web\n"
	"console (pg_relay web --help).\n"
	"SIGHUP reloads the config file; SIGTERM or SIGINT stop after in-flight events finish.\n"
	"Documentation: man pg_relay (docs/pg_relay.1), docs/processor.md, docs/operations.md\n";

const char *
config_mode_name(enum Mode m)
{
	return mode_names[m];
}

static void *
field(struct Config *cf, const struct ConfParam *p)
{
	return (char *) cf + p->offset;
}

static const void *
cfield(const struct Config *cf, const struct ConfParam *p)
{
	return (const char *) cf + p->offset;
}

bool
config_parse_duration(const char *s, long *ms)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {{"ms", 1},    {"s", 1000},    {"sec", 1000}, {"min", 60000},
				 {"m", 60000}, {"h", 3600000}, {"", 1000}};
	const char *p, *end;
	double v;
	size_t i;

	while (isspace((unsigned char) *s))
		s++;
	/* Digits with an optional fraction, and nothing else: strtod would also take 0x10, 1e3, inf. */
	for (p = s; isdigit((unsigned char) *p); p++)
		;
	if (p == s)
		return false;
	if (*p == '.' && isdigit((unsigned char) p[1]))
		for (p++; isdigit((unsigned char) *p); p++)
			;
	if (p - s > 15)
		return false;
	v = strtod(s, NULL);
	for (end = p; isspace((unsigned char) *end); end++)
		;
	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		size_t ulen = strlen(units[i].unit);

		if (strncmp(end, units[i].unit, ulen) == 0) {
			const char *rest = end + ulen;

			while (isspace((unsigned char) *rest))
				rest++;
			if (*rest != '\0')
				continue;
			v *= units[i].scale;
			if (v > 1e12)
				return false;
			*ms = (long) (v + 0.5);
			return true;
		}
	}
	return false;
}

bool
config_parse_int(const char *s, long min, long max, long *out)
{
	const char *digits = s;
	char *end;
	long v;

	/*
	 * strtol alone would also skip leading white space and take a '+' or a '-': " 4", "+4" and
	 * "-0" would pass as a worker count. So the text is checked first: the digits, and before
	 * them a '-' only where a negative value can be in range.
	 */
	if (*digits == '-' && min < 0)
		digits++;
	if (!isdigit((unsigned char) *digits))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool
parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"on", "true", "yes", "1"};
	static const char *const no[] = {"off", "false", "no", "0"};
	size_t i;

	for (i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* describe_expected says in words what a setting accepts, for error messages. */
static void
describe_expected(const struct ConfParam *p, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	switch (p->type) {
	case CT_INT:
		snprintf(buf, len, "an integer from %ld to %ld", p->min, p->max);
		break;
	case CT_DURATION:
		snprintf(buf, len, "a duration from %ldms to %lds", p->min, p->max / 1000);
		break;
	case CT_BOOL:
		snprintf(buf, len, "on or off");
		break;
	case CT_ENUM:
		for (i = 0; p->choices[i] && n < len; i++)
			n += (size_t) snprintf(buf + n, len - n, "%s%s", i ? ", " : "one of ", p->choices[i]);
		break;
	case CT_STRING:
		snprintf(buf, len, "a string");
		break;
	}
}

/*
 * visible copies s for an error message with every byte that is not printable ASCII written as
 * \xNN: a byte order mark, a control character or an invisible character must show, or the
 * message would point at nothing the reader can see; and a line break in a value or a path must
 * not break the one line a bad setting gets.
 */
static const char *
visible(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 5 < len; s++) {
		unsigned char c = (unsigned char) *s;

		if (c < 0x20 || c >= 0x7f)
			n += (size_t) snprintf(buf + n, len - n, "\\x%02x", c);
		else
			buf[n++] = (char) c;
	}
	buf[n] = '\0';
	return buf;
}

/* set_param stores text as the value of p in cf, or explains in err why it cannot. */
static bool
set_param(struct Config *cf, const struct ConfParam *p, const char *text, const char *dashes, char *err,
		  size_t errlen)
{
	char expected[128], shown[256];
	long v;
	int i;

	switch (p->type) {
	case CT_STRING: {
		char **slot = field(cf, p);

		free(*slot);
		*slot = (*text != '\0') ? strdup(text) : NULL;
		return true;
	}
	case CT_INT:
		if (config_parse_int(text, p->min, p->max, &v)) {
			*(int *) field(cf, p) = (int) v;
			return true;
		}
		break;
	case CT_DURATION:
		if (config_parse_duration(text, &v) && v >= p->min && v <= p->max) {
			*(long *) field(cf, p) = v;
			return true;
		}
		break;
	case CT_BOOL:
		if (parse_bool(text, (bool *) field(cf, p)))
			return true;
		break;
	case CT_ENUM:
		for (i = 0; p->choices[i]; i++) {
			if (strcmp(text, p->choices[i]) == 0) {
				*(int *) field(cf, p) = i;
				return true;
			}
		}
		break;
	}
	describe_expected(p, expected, sizeof expected);
	snprintf(err, errlen, "invalid value \"%s\" for %s%s: expected %s", visible(text, shown, sizeof shown),
			 dashes, p->name, expected);
	return false;
}

static const struct ConfParam *
find_param(const char *name)
{
	char key[64];
	size_t i;
	int k;

	/* Config files may spell keys with underscores (poll_interval) or dashes (poll-interval). */
	for (i = 0; name[i] && i < sizeof key - 1; i++)
		key[i] = (name[i] == '_') ? '-' : name[i];
	key[i] = '\0';
	for (k = 0; k < NPARAMS; k++)
		if (strcmp(params[k].name, key) == 0)
			return &params[k];
	return NULL;
}

void
config_defaults(struct Config *cf)
{
	char err[256];
	int i;

	memset(cf, 0, sizeof *cf);
	for (i = 0; i < NPARAMS; i++) {
		/* The table's defaults are valid by construction; a unit test holds it to that. */
		if (!set_param(cf, &params[i], params[i].def, "", err, sizeof err))
			abort();
	}
}

void
config_free(struct Config *cf)
{
	int i;

	if (cf == NULL)
		return;
	for (i = 0; i < NPARAMS; i++) {
		if (params[i].type == CT_STRING) {
			char **slot = field(cf, &params[i]);

			free(*slot);
			*slot = NULL;
		}
	}
	free(cf->config_file);
	cf->config_file = NULL;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char) *s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char) e[-1]))
		*--e = '\0';
	return s;
}

/* The longest line a config file may have: a connection string with a long password fits. */
#define CONFIG_LINE_MAX 65536

/* open_config opens path for reading, refusing anything but a regular file (a directory, say). */
static FILE *
open_config(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char shown[PATH_MAX];
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		snprintf(err, errlen, "could not open config file \"%s\": %s", visible(path, shown, sizeof shown),
				 strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "config file \"%s\" is not a regular file", visible(path, shown, sizeof shown));
		fclose(f);
		return NULL;
	}
	return f;
}

/* apply_line applies one "key = value" line; false with err set when it is not one. */
static bool
apply_line(struct Config *cf, char *line, const char *where, char *err, size_t errlen)
{
	char perr[512], shown[256];
	char *key, *val, *eq;
	const struct ConfParam *p;
	size_t vlen;

	key = trim(line);
	if (*key == '\0' || *key == '#' || *key == ';')
		return true;
	eq = strchr(key, '=');
	if (eq == NULL) {
		snprintf(err, errlen, "%s: expected key = value", where);
		return false;
	}
	*eq = '\0';
	key = trim(key);
	val = trim(eq + 1);
	vlen = strlen(val);
	if (vlen >= 2 && val[0] == '\'' && val[vlen - 1] == '\'') {
		val[vlen - 1] = '\0';
		val++;
	}
	p = find_param(key);
	if (p == NULL) {
		snprintf(err, errlen, "%s: unknown setting \"%s\"", where, visible(key, shown, sizeof shown));
		return false;
	}
	if (!set_param(cf, p, val, "", perr, sizeof perr)) {
		snprintf(err, errlen, "%s: %s", where, perr);
		return false;
	}
	return true;
}

/*
 * load_file applies "key = value" lines; '#' or ';' start a comment; values may be single-quoted.
 * A UTF-8 byte order mark at the start is skipped (editors write one); a line longer than
 * CONFIG_LINE_MAX, or with a NUL byte, is an error rather than being split or cut.
 */
static bool
load_file(struct Config *cf, const char *path, char *err, size_t errlen)
{
	char *line = NULL, where[PATH_MAX + 32], shown[PATH_MAX];
	size_t cap = 0;
	ssize_t n;
	int lineno = 0;
	bool ok = true;
	FILE *f = open_config(path, err, errlen);

	if (f == NULL)
		return false;
	while (ok && (n = getline(&line, &cap, f)) >= 0) {
		char *text = line;

		lineno++;
		snprintf(where, sizeof where, "%s line %d", visible(path, shown, sizeof shown), lineno);
		if (lineno == 1 && n >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0)
			text += 3;
		if (n > CONFIG_LINE_MAX) {
			snprintf(err, errlen, "%s: the line is longer than %d bytes", where, CONFIG_LINE_MAX);
			ok = false;
		} else if (strlen(line) != (size_t) n) {
			snprintf(err, errlen, "%s: the line contains a NUL byte", where);
			ok = false;
		} else
			ok = apply_line(cf, text, where, err, errlen);
	}
	if (ok && ferror(f)) {
		snprintf(err, errlen, "could not read config file \"%s\": %s", visible(path, shown, sizeof shown),
				 strerror(errno));
		ok = false;
	}
	free(line);
	fclose(f);
	return ok;
}

static void
print_help(struct Buf *out)
{
	char left[64];
	int i;

	buf_puts(out, usage_head);
	for (i = 0; i < NPARAMS; i++) {
		const struct ConfParam *p = &params[i];

		if (p->metavar)
			snprintf(left, sizeof left, "--%s=%s", p->name, p->metavar);
		else
			snprintf(left, sizeof left, "--%s", p->name);
		if (p->short_flag)
			buf_printf(out, "  -%c, %-25s", p->short_flag, left);
		else
			buf_printf(out, "      %-25s", left);
		buf_printf(out, "%s%s", strlen(left) > 25 ? "\n                               " : "", p->help);
		if (*p->def)
			buf_printf(out, " (default: %s)", p->def);
		buf_putc(out, '\n');
	}
	buf_puts(out, usage_tail);
}

/* config_sample writes a commented example config file with every key and its default. */
static void
config_sample(struct Buf *out)
{
	int i;

	buf_puts(out, "# pg_relay Processor configuration (pg_relay --config=FILE).\n"
				  "# Every key is also a command-line flag; flags win over this file.\n"
				  "# SIGHUP re-reads the file; keys marked (restart) need a restart.\n\n");
	for (i = 0; i < NPARAMS; i++) {
		buf_printf(out, "# %s%s\n", params[i].help, params[i].reloadable ? "" : " (restart)");
		buf_printf(out, "#%s = %s\n\n", params[i].name, *params[i].def ? params[i].def : "''");
	}
}

static void
print_version(struct Buf *out)
{
	buf_printf(out, "pg_relay %s\n", PGRELAY_VERSION);
	pgconn_describe_versions(out);
	buf_printf(out, "libcurl %s\n", curl_version());
	buf_printf(out, "jansson %s\n", JANSSON_VERSION);
}

/* build_longopts turns the table into getopt_long options; the extras follow. */
static void
build_longopts(struct option *lo, char *shortopts)
{
	int i, n = 0;
	char *s = shortopts;

	*s++ = ':'; /* a missing value is reported as ':' rather than '?' */
	for (i = 0; i < NPARAMS; i++) {
		lo[n].name = params[i].name;
		lo[n].has_arg = params[i].type == CT_BOOL ? optional_argument : required_argument;
		lo[n].flag = NULL;
		lo[n].val = 1000 + i;
		n++;
		if (params[i].short_flag) {
			*s++ = (char) params[i].short_flag;
			if (params[i].type != CT_BOOL)
				*s++ = ':';
		}
	}
	lo[n++] = (struct option){"config", required_argument, NULL, 'c'};
	lo[n++] = (struct option){"sample-config", no_argument, NULL, 900};
	lo[n++] = (struct option){"verbose", no_argument, NULL, 'v'};
	lo[n++] = (struct option){"version", no_argument, NULL, 'V'};
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n] = (struct option){NULL, 0, NULL, 0};
	strcpy(s, "c:vVh");
}

/* short_to_param maps a short flag to its table row. */
static const struct ConfParam *
short_to_param(int c)
{
	int i;

	for (i = 0; i < NPARAMS; i++)
		if (params[i].short_flag == c)
			return &params[i];
	return NULL;
}

/*
 * find_config_file finds -c/--config the way the real parse will (getopt_long, so --conf=FILE and
 * --confi FILE are the same option there and here), before it, so that flags win over the file.
 */
static const char *
find_config_file(int argc, char **argv, const struct option *lo, const char *shortopts)
{
	const char *file = NULL;
	int c, idx;

	optind = 0; /* GNU: start a fresh scan (config_load runs again on SIGHUP) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, lo, &idx)) != -1)
		if (c == 'c')
			file = optarg;
	return file;
}

/* check_metrics: a --metrics address must be HOST:PORT (binding it is startup's business). */
static bool
check_metrics(const struct Config *cf, char *err, size_t errlen)
{
	char host[256], why[128], shown[256];
	int port;

	if (cf->metrics == NULL || hostport_split(cf->metrics, host, sizeof host, &port, why, sizeof why))
		return true;
	snprintf(err, errlen, "invalid value for --metrics: \"%s\": %s",
			 visible(cf->metrics, shown, sizeof shown), why);
	return false;
}

/* check_secrets_dir: a --secrets-dir that is given must be a directory the Processor can see. */
static bool
check_secrets_dir(const struct Config *cf, char *err, size_t errlen)
{
	struct stat st;
	char shown[PATH_MAX];

	if (cf->secrets_dir == NULL)
		return true;
	if (stat(cf->secrets_dir, &st) != 0) {
		snprintf(err, errlen, "invalid value for --secrets-dir: \"%s\": %s",
				 visible(cf->secrets_dir, shown, sizeof shown), strerror(errno));
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "invalid value for --secrets-dir: \"%s\" is not a directory",
				 visible(cf->secrets_dir, shown, sizeof shown));
		return false;
	}
	return true;
}

/* check_secret_env: --secret-env must be a list of bindings that fits a worker's settings. */
static bool
check_secret_env(const struct Config *cf, char *err, size_t errlen)
{
	char why[300], shown[1200];

	if (cf->secret_env == NULL)
		return true;
	if (strlen(cf->secret_env) >= SECRETS_ENV_MAX) {
		snprintf(err, errlen, "invalid value for --secret-env: longer than %d bytes", SECRETS_ENV_MAX - 1);
		return false;
	}
	if (!secrets_check_env_bindings(cf->secret_env, why, sizeof why)) {
		snprintf(err, errlen, "invalid value for --secret-env: %s", visible(why, shown, sizeof shown));
		return false;
	}
	return true;
}

int
config_load(struct Config *cf, int argc, char **argv, struct Buf *out, char *err, size_t errlen)
{
	struct option lo[NPARAMS + 6];
	char shortopts[2 * NPARAMS + 9], shown[256];
	const char *file;
	int c, idx, verbose = 0;

	config_defaults(cf);
	build_longopts(lo, shortopts);
	file = find_config_file(argc, argv, lo, shortopts);
	if (file != NULL) {
		cf->config_file = strdup(file);
		if (!load_file(cf, file, err, errlen))
			return 2;
	}

	optind = 0; /* GNU: start a fresh scan (config_load runs again on SIGHUP) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, lo, &idx)) != -1) {
		const struct ConfParam *p = NULL;

		if (c >= 1000)
			p = &params[c - 1000];
		else if (c != '?' && c != ':')
			p = short_to_param(c);
		if (p != NULL) {
			const char *val = optarg ? optarg : (p->type == CT_BOOL ? "on" : "");

			if (!set_param(cf, p, val, "--", err, errlen))
				return 2;
			continue;
		}
		switch (c) {
		case 'c':
			break; /* read above */
		case 'v':
			verbose++;
			break;
		case 'V':
			print_version(out);
			return 1;
		case 'h':
			print_help(out);
			return 1;
		case 900:
			config_sample(out);
			return 1;
		case ':':
			snprintf(err, errlen, "option \"%s\" needs a value",
					 visible(argv[optind - 1], shown, sizeof shown));
			return 2;
		default:
			snprintf(err, errlen, "unknown option \"%s\"", visible(argv[optind - 1], shown, sizeof shown));
			return 2;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument \"%s\"", visible(argv[optind], shown, sizeof shown));
		return 2;
	}
	while (verbose-- > 0 && cf->log_level < LL_TRACE)
		cf->log_level++;
	return check_secrets_dir(cf, err, errlen) && check_secret_env(cf, err, errlen) &&
				   check_metrics(cf, err, errlen)
			   ? 0
			   : 2;
}

/* format_value writes the current value of p in the same syntax the file takes. */
static void
format_value(const struct Config *cf, const struct ConfParam *p, char *buf, size_t len)
{
	const void *f = cfield(cf, p);
	long ms;

	switch (p->type) {
	case CT_STRING:
		snprintf(buf, len, "%s", *(char *const *) f ? *(char *const *) f : "");
		break;
	case CT_INT:
		snprintf(buf, len, "%d", *(const int *) f);
		break;
	case CT_DURATION:
		ms = *(const long *) f;
		if (ms % 1000 == 0)
			snprintf(buf, len, "%lds", ms / 1000);
		else
			snprintf(buf, len, "%ldms", ms);
		break;
	case CT_BOOL:
		snprintf(buf, len, "%s", *(const bool *) f ? "on" : "off");
		break;
	case CT_ENUM:
		snprintf(buf, len, "%s", p->choices[*(const int *) f]);
		break;
	}
}

void
config_describe(const struct Config *cf, struct ConfigFields *out)
{
	int i;

	for (i = 0; i < NPARAMS; i++) {
		const struct ConfParam *p = &params[i];
		char *val = out->text[i];

		if (p->type == CT_INT) {
			out->f[i] = LOG_INT(p->name, *(const int *) cfield(cf, p));
			continue;
		}
		if (p->offset == offsetof(struct Config, dbname)) {
			struct Buf safe = BUF_INIT;

			pgconn_describe_conninfo(cf->dbname, &safe);
			snprintf(val, sizeof out->text[i], "%s", safe.data ? safe.data : "");
			buf_free(&safe);
		} else
			format_value(cf, p, val, sizeof out->text[i]);
		out->f[i] = LOG_STR(p->name, val);
	}
	out->n = NPARAMS;
}

bool
config_apply_reload(struct Config *cf, const struct Config *fresh, struct Buf *changed)
{
	char a[1024], b[1024];
	bool any = false;
	int i;

	for (i = 0; i < NPARAMS; i++) {
		const struct ConfParam *p = &params[i];

		format_value(cf, p, a, sizeof a);
		format_value(fresh, p, b, sizeof b);
		if (strcmp(a, b) == 0)
			continue;
		if (!p->reloadable) {
			buf_printf(changed, "%s%s", changed->len ? "," : "", p->name);
			continue;
		}
		if (p->type == CT_STRING) {
			char **dst = field(cf, p);
			char *const *src = cfield(fresh, p);

			free(*dst);
			*dst = *src ? strdup(*src) : NULL;
		} else if (p->type == CT_INT || p->type == CT_ENUM)
			*(int *) field(cf, p) = *(const int *) cfield(fresh, p);
		else if (p->type == CT_DURATION)
			*(long *) field(cf, p) = *(const long *) cfield(fresh, p);
		else
			*(bool *) field(cf, p) = *(const bool *) cfield(fresh, p);
		any = true;
	}
	return any;
}
