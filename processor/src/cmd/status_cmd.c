/*
 * status_cmd.c - `pg_relay status`: one screen about a database's pg_relay, read from the views a
 * pgrelay_monitor member may read (dispatch_state, processors, cluster_status, queue_depth,
 * channel_stats, failed, last_errors, schedules), for an operator at a terminal. It connects once, prints, and exits.
 */
#include "status_cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "install_state.h"
#include "log.h"
#include "pgconn.h"
#include "pgrelay.h"

static const char status_usage[] =
	"pg_relay status - one screen about pg_relay in a database: dispatch (pause, standby), the running\n"
	"Processors, the nodes of a multi-master cluster, the channels with the most events due or waiting\n"
	"to retry and their last errors, and the recurring events (schedules), a failed last run first.\n"
	"\n"
	"Usage: pg_relay status [-d CONNINFO]\n"
	"\n"
	"  -d, --dbname=CONNINFO        libpq connection string or URI (default: the PG* environment variables)\n"
	"  -h, --help                   show this help and exit\n"
	"\n"
	"The role needs only pgrelay_monitor (granted to pg_monitor). Exit status: 0 shown, 1 the database\n"
	"could not be read, 2 usage.\n";

void
status_format_age(long long secs, char *buf, size_t len)
{
	if (secs < 0)
		snprintf(buf, len, "-");
	else if (secs < 60)
		snprintf(buf, len, "%llds", secs);
	else if (secs < 3600)
		snprintf(buf, len, "%lldm%02llds", secs / 60, secs % 60);
	else if (secs < 86400)
		snprintf(buf, len, "%lldh%02lldm", secs / 3600, secs % 3600 / 60);
	else
		snprintf(buf, len, "%lldd%02lldh", secs / 86400, secs % 86400 / 3600);
}

/* value is a field's text ("" for NULL); flag a boolean field (NULL is false). */
static const char *
value(const PGresult *res, int row, int col)
{
	const char *v = pgconn_value(res, row, col);

	return v ? v : "";
}

static bool
flag(const PGresult *res, int row, int col)
{
	return strcmp(value(res, row, col), "t") == 0;
}

/* age formats a column of seconds (NULL or negative: "-"). */
static const char *
age(const PGresult *res, int row, int col, char *buf, size_t len)
{
	const char *v = pgconn_value(res, row, col);

	status_format_age(v ? atoll(v) : -1, buf, len);
	return buf;
}

/*
 * fit cuts s to width characters for a column, marking the cut with "~". A control character (a
 * newline in an error message, an escape in a name) would break the screen or drive the terminal:
 * it is shown as "?".
 */
static const char *
fit(const char *s, int width, char *buf, size_t len)
{
	char *p;

	snprintf(buf, len, "%s", s);
	for (p = buf; *p; p++)
		if ((unsigned char) *p < 0x20 || *p == 0x7f)
			*p = '?';
	if ((int) strlen(buf) > width && width > 1) {
		buf[width - 1] = '~';
		buf[width] = '\0';
	}
	return buf;
}

static bool
print_dispatch(struct PgConn *c, const struct InstallState *st)
{
	PGresult *res = pgconn_query(c, STMT_STATUS_DISPATCH, NULL);
	char since[32], sql[160];

	if (res == NULL)
		return false;
	printf("pg_relay %s in database %s, read as %s at %s UTC\n", st->relay.version, value(res, 0, 0),
		   value(res, 0, 1), value(res, 0, 6));
	/*
	 * One version story: the SQL side (its versions, installed how, and the interface it speaks)
	 * and this program.
	 */
	install_state_describe(st, sql, sizeof sql);
	printf("Versions:    %s, interface %s; this pg_relay %s (interface %d)%s\n", sql, value(res, 0, 8),
		   PGRELAY_VERSION, PGRELAY_INTERFACE_VERSION,
		   atoi(value(res, 0, 8)) == PGRELAY_INTERFACE_VERSION
			   ? ""
			   : ": MISMATCH, a Processor of this version refuses to start");
	if (flag(res, 0, 2))
		printf("Dispatch:    PAUSED for %s by pgrelay.pause(): no Processor starts an event\n",
			   age(res, 0, 3, since, sizeof since));
	else
		printf("Dispatch:    running\n");
	printf("Server:      %s, pg_relay node %s\n",
		   flag(res, 0, 4) ? "a standby (Processors wait)" : "a primary", value(res, 0, 5));
	pgconn_clear(res);
	return true;
}

/*
 * may_read: may the role read every view the status reads? Asked of the catalog first, so that a
 * role that may not gets one message naming what it lacks, not a failure half-way through the
 * output. False (said) when not, or when the question failed.
 */
static bool
may_read(struct PgConn *c, bool *topics)
{
	PGresult *res = pgconn_query(c, STMT_STATUS_RIGHTS, NULL);
	bool ok;

	if (res == NULL) {
		fprintf(stderr, "pg_relay status: %s\n", c->error);
		return false;
	}
	ok = pgconn_value(res, 0, 1) == NULL;
	*topics = flag(res, 0, 2);
	if (!ok)
		fprintf(
			stderr,
			"pg_relay status: %s may not read %s\n"
			"hint: GRANT pgrelay_monitor TO %s; (the views pg_relay status reads are the monitor role's)\n",
			value(res, 0, 0), value(res, 0, 1), value(res, 0, 0));
	pgconn_clear(res);
	return ok;
}

/*
 * workers_of formats a Processor's workers: "4", or "1/4" when it reported fewer of them connected
 * (its other workers' connection attempts fail), with *missing set to how many fewer.
 */
static const char *
workers_of(const PGresult *res, int row, char *buf, size_t len, int *missing)
{
	const char *connected = pgconn_value(res, row, 11);
	int workers = atoi(value(res, row, 5));

	*missing = connected != NULL && atoi(connected) < workers ? workers - atoi(connected) : 0;
	if (*missing > 0)
		snprintf(buf, len, "%s/%d", connected, workers);
	else
		snprintf(buf, len, "%d", workers);
	return buf;
}

static bool
print_processors(struct PgConn *c)
{
	PGresult *res = pgconn_query(c, STMT_STATUS_PROCESSORS, NULL);
	char host[32], up[32], tick[32], workers[32], note[64];
	int i, n, alive = 0, missing;

	if (res == NULL)
		return false;
	n = PQntuples(res);
	for (i = 0; i < n; i++)
		alive += flag(res, i, 10);
	if (n == 0)
		printf("Processors:  NONE reported on this node (pgrelay.processors): nothing runs the events\n");
	else if (alive == 0)
		printf("Processors:  NONE alive (%d silent)\n", n);
	else
		printf("Processors:  %d alive%s\n", alive, alive < n ? ", some silent (not alive)" : "");
	if (n > 0)
		printf("  %-24s %7s %4s %-8s %-10s %7s %4s %-6s %-7s %s\n", "HOST", "PID", "NODE", "VERSION", "MODE",
			   "WORKERS", "BUSY", "LEADER", "UP", "LAST TICK");
	for (i = 0; i < n; i++) {
		workers_of(res, i, workers, sizeof workers, &missing);
		if (!flag(res, i, 10))
			snprintf(note, sizeof note, "  NOT ALIVE");
		else if (missing > 0)
			snprintf(note, sizeof note, "  %d WORKER%s NOT CONNECTED", missing, missing > 1 ? "S" : "");
		else
			note[0] = '\0';
		printf("  %-24s %7s %4s %-8s %-10s %7s %4s %-6s %-7s %s ago%s\n",
			   fit(value(res, i, 0), 24, host, sizeof host), value(res, i, 1), value(res, i, 2),
			   value(res, i, 3), value(res, i, 4), workers, value(res, i, 6),
			   pgconn_value(res, i, 7) == NULL ? "-" : (flag(res, i, 7) ? "yes" : "no"),
			   age(res, i, 8, up, sizeof up), age(res, i, 9, tick, sizeof tick), note);
	}
	pgconn_clear(res);
	return true;
}

static bool
print_cluster(struct PgConn *c)
{
	PGresult *res = pgconn_query(c, STMT_STATUS_CLUSTER, NULL);
	char name[32], silent[32];
	const char *state;
	int i, n;

	if (res == NULL)
		return false;
	n = PQntuples(res);
	if (n > 0) {
		printf("Cluster:     %d node(s), as this node's Processor saw them (pgrelay.cluster_status)\n", n);
		printf("  %4s %-16s %-9s %-10s %-6s %-5s %-7s %s\n", "NODE", "NAME", "ENGINE", "MODE", "LEADER",
			   "LINK", "SILENT", "STATE");
	}
	for (i = 0; i < n; i++) {
		/*
		 * a clean stop is known at once; dead is the rule's verdict (silent for dead_after, link
		 * down); a silence is unknown while this node watches nothing of the peer (no Processor has
		 * ticked since the server started)
		 */
		if (flag(res, i, 3))
			state = "this node";
		else if (flag(res, i, 8))
			state = "DEAD";
		else
			state = flag(res, i, 9) ? "stopped" : "alive";
		printf("  %4s %-16s %-9s %-10s %-6s %-5s %-7s %s\n", value(res, i, 0),
			   fit(value(res, i, 1), 16, name, sizeof name), value(res, i, 2), value(res, i, 5),
			   pgconn_value(res, i, 6) == NULL ? "-" : (flag(res, i, 6) ? "yes" : "no"),
			   pgconn_value(res, i, 4) == NULL ? "-" : (flag(res, i, 4) ? "up" : "DOWN"),
			   pgconn_value(res, i, 7) == NULL ? "unknown" : age(res, i, 7, silent, sizeof silent), state);
	}
	pgconn_clear(res);
	return true;
}

/*
 * shows_error: is the last error of a channel's row worth a line? When events of the channel wait
 * to retry (the error is likely theirs), or when it is less than an hour old.
 */
static bool
shows_error(const PGresult *res, int row)
{
	const char *ago = pgconn_value(res, row, 17);

	return ago != NULL && (atoll(value(res, row, 12)) > 0 || atoll(ago) < 3600);
}

/* print_last_errors prints the last error of each channel shown that has one worth a line. */
static void
print_last_errors(const PGresult *res)
{
	char name[40], when[40], ago[32], kind[64], kind_fit[32], error[80];
	int i, n = PQntuples(res), shown = 0;

	for (i = 0; i < n; i++) {
		if (!shows_error(res, i))
			continue;
		if (shown++ == 0)
			printf("Last errors: of the channels above that retry or failed in the last hour "
				   "(pgrelay.last_errors)\n  %-32s %-10s %7s %-20s %s\n",
				   "CHANNEL", "WHEN", "ATTEMPT", "KIND", "ERROR");
		snprintf(when, sizeof when, "%s ago", age(res, i, 17, ago, sizeof ago));
		snprintf(kind, sizeof kind, "%s %s", pgconn_value(res, i, 20) ? value(res, i, 20) : "-",
				 value(res, i, 19));
		printf("  %-32s %-10s %7s %-20s %s\n", fit(value(res, i, 0), 32, name, sizeof name), when,
			   value(res, i, 18), fit(kind, 20, kind_fit, sizeof kind_fit),
			   fit(value(res, i, 21), 64, error, sizeof error));
	}
}

static bool
print_channels(struct PgConn *c)
{
	PGresult *res = pgconn_query(c, STMT_STATUS_CHANNELS, NULL);
	char name[40], oldest[32];
	int i, n;
	long long total;

	if (res == NULL)
		return false;
	n = PQntuples(res);
	total = n > 0 ? atoll(value(res, 0, 9)) : 0;
	if (total == 0)
		printf("Channels:    none registered\n");
	else {
		printf("Channels:    %lld; queued %s, due %s, %s %s; failed for good %s (pgrelay.failed)\n", total,
			   value(res, 0, 13), value(res, 0, 14), atoll(value(res, 0, 15)) > 0 ? "RETRYING" : "retrying",
			   value(res, 0, 15), value(res, 0, 16));
		if (total > n)
			printf("  the %d with the most events due or retrying:\n", n);
	}
	if (n > 0)
		printf("  %-32s %-7s %8s %8s %8s %6s %7s %-10s %8s %9s %s\n", "CHANNEL", "TYPE", "QUEUED", "DUE",
			   "RETRYING", "KEYED", "SNOOZED", "OLDEST DUE", "DONE 1H", "FAILED 1H", "STATE");
	for (i = 0; i < n; i++)
		printf("  %-32s %-7s %8s %8s %8s %6s %7s %-10s %8s %9s %s\n",
			   fit(value(res, i, 0), 32, name, sizeof name), value(res, i, 1), value(res, i, 4),
			   value(res, i, 5), value(res, i, 12), value(res, i, 10), value(res, i, 11),
			   age(res, i, 6, oldest, sizeof oldest), value(res, i, 7), value(res, i, 8),
			   flag(res, i, 3) ? "PAUSED" : (flag(res, i, 2) ? "active" : "inactive"));
	print_last_errors(res);
	pgconn_clear(res);
	return true;
}

/* schedule_next formats when a schedule runs next: "in 4m10s", "due 3s" (since), "-" (never). */
static const char *
schedule_next(const PGresult *res, int row, char *buf, size_t len)
{
	const char *v = pgconn_value(res, row, 5);
	char t[32];
	long long secs;

	if (v == NULL) {
		snprintf(buf, len, "-");
		return buf;
	}
	secs = atoll(v);
	status_format_age(secs < 0 ? -secs : secs, t, sizeof t);
	snprintf(buf, len, "%s %s", flag(res, row, 4) ? "due" : "in", t);
	return buf;
}

/* schedule_outcome formats how the last run went; a failed one stands out, with its reason. */
static const char *
schedule_outcome(const PGresult *res, int row, char *buf, size_t len)
{
	const char *outcome = pgconn_value(res, row, 7);
	char why[64];

	if (outcome == NULL)
		snprintf(buf, len, "-");
	else if (strcmp(outcome, "failed") == 0)
		snprintf(buf, len, "FAILED: %s", fit(value(res, row, 8), 60, why, sizeof why));
	else
		snprintf(buf, len, "%s", outcome);
	return buf;
}

static bool
print_schedules(struct PgConn *c)
{
	PGresult *res = pgconn_query(c, STMT_STATUS_SCHEDULES, NULL);
	char name[32], channel[32], cron[32], next[40], ago[32], last[48], outcome[96];
	int i, n;
	long long total, failed;

	if (res == NULL)
		return false;
	n = PQntuples(res);
	total = n > 0 ? atoll(value(res, 0, 9)) : 0;
	failed = n > 0 ? atoll(value(res, 0, 10)) : 0;
	if (total == 0)
		printf("Schedules:   none\n");
	else if (failed > 0)
		printf("Schedules:   %lld, %lld whose last run FAILED\n", total, failed);
	else
		printf("Schedules:   %lld\n", total);
	if (n > 0)
		printf("  %-20s %-16s %-30s %-6s %-10s %-10s %s\n", "NAME", "CHANNEL", "CRON", "STATE", "NEXT RUN",
			   "LAST RUN", "OUTCOME");
	for (i = 0; i < n; i++) {
		if (pgconn_value(res, i, 6) == NULL)
			snprintf(last, sizeof last, "never");
		else
			snprintf(last, sizeof last, "%s ago", age(res, i, 6, ago, sizeof ago));
		printf("  %-20s %-16s %-30s %-6s %-10s %-10s %s\n", fit(value(res, i, 0), 20, name, sizeof name),
			   fit(value(res, i, 1), 16, channel, sizeof channel),
			   fit(value(res, i, 2), 30, cron, sizeof cron), flag(res, i, 3) ? "active" : "paused",
			   schedule_next(res, i, next, sizeof next), last,
			   schedule_outcome(res, i, outcome, sizeof outcome));
	}
	if (total > n)
		printf("  and %lld more (pgrelay.schedules)\n", total - n);
	pgconn_clear(res);
	return true;
}

/*
 * print_topics lists the subscriptions of the topics, those with failures and the most deliveries
 * due first: the deliveries waiting and failed on each. Nothing when no channel subscribes.
 */
static bool
print_topics(struct PgConn *c)
{
	PGresult *res = pgconn_query(c, STMT_STATUS_TOPICS, NULL);
	char topic[32], channel[32], oldest[32];
	int i, n;
	long long total, failed;

	if (res == NULL)
		return false;
	n = PQntuples(res);
	total = n > 0 ? atoll(value(res, 0, 11)) : 0;
	failed = n > 0 ? atoll(value(res, 0, 13)) : 0;
	if (total > 0) /* no line where topics are not used */
		printf("Topics:      %s with %lld subscription(s); deliveries failed for good %s%lld\n",
			   value(res, 0, 12), total, failed > 0 ? "FAILED " : "", failed);
	if (n > 0)
		printf("  %-20s %-20s %-7s %8s %8s %8s %-10s %8s %9s %s\n", "TOPIC", "CHANNEL", "TYPE", "QUEUED",
			   "DUE", "RETRYING", "OLDEST DUE", "FAILED", "FAILED 1H", "STATE");
	for (i = 0; i < n; i++)
		printf("  %-20s %-20s %-7s %8s %8s %8s %-10s %8s %9s %s\n",
			   fit(value(res, i, 0), 20, topic, sizeof topic),
			   fit(value(res, i, 1), 20, channel, sizeof channel), value(res, i, 2), value(res, i, 3),
			   value(res, i, 4), value(res, i, 5), age(res, i, 6, oldest, sizeof oldest), value(res, i, 7),
			   value(res, i, 8), flag(res, i, 10) ? "PAUSED" : (flag(res, i, 9) ? "active" : "inactive"));
	if (total > n)
		printf("  and %lld more (pgrelay.topic_subscribers)\n", total - n);
	pgconn_clear(res);
	return true;
}

/* parse_args reads -d/--dbname and -h/--help; returns 0 to go on, 1 help printed, 2 usage error. */
static int
parse_args(int argc, char **argv, const char **conninfo)
{
	static const struct option lo[] = {
		{"dbname", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			*conninfo = optarg;
			break;
		case 'h':
			fputs(status_usage, stdout);
			return 1;
		case ':':
			fprintf(stderr, "pg_relay status: option \"%s\" needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "pg_relay status: unknown option \"%s\"\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pg_relay status: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	return 0;
}

int
status_main(int argc, char **argv)
{
	const char *conninfo = NULL;
	struct InstallState st;
	struct PgConn c;
	char err[512], why_hint[512];
	long wait_ms;
	bool config, topics = false;
	int rc = parse_args(argc, argv, &conninfo);

	if (rc != 0) {
		if (rc == 2)
			fputs("Try \"pg_relay status --help\" for more information.\n", stderr);
		return rc == 1 ? 0 : 2;
	}
	if (!pgconn_check_conninfo(conninfo, err, sizeof err)) {
		fprintf(stderr, "pg_relay status: %s\n", err);
		return 2;
	}
	log_configure(LL_WARN, LF_TEXT);
	pgconn_init(&c, "status", conninfo, "single");
	c.one_attempt = true;
	c.session_timeout_ms = 30000;
	if (!pgconn_session(&c, 1000, &wait_ms)) {
		const char *hint = pgconn_connect_hint(c.error, &config);

		fprintf(stderr, "pg_relay status: could not connect: %s\n", c.error);
		if (hint)
			fprintf(stderr, "hint: %s\n", hint);
		pgconn_destroy(&c);
		return 1;
	}
	rc = 0;
	if (!install_state_read(&c, IR_USER, &st)) {
		fprintf(stderr, "pg_relay status: %s\n", c.error);
		pgconn_destroy(&c);
		return 1;
	}
	if (install_state_problem(&st, err, sizeof err, why_hint, sizeof why_hint)) {
		fprintf(stderr, "pg_relay status: %s\nhint: %s\n", err, why_hint);
		pgconn_destroy(&c);
		return 1;
	}
	if (install_state_ignored(&st, err, sizeof err, why_hint, sizeof why_hint))
		fprintf(stderr, "pg_relay status: warning: %s\nhint: %s\n", err, why_hint);
	if (!may_read(&c, &topics)) {
		pgconn_destroy(&c);
		return 1;
	}
	if (!print_dispatch(&c, &st) || !print_processors(&c) || !print_cluster(&c) || !print_channels(&c) ||
		!print_schedules(&c) || (topics && !print_topics(&c))) {
		fflush(stdout);
		fprintf(stderr, "pg_relay status: %s\n", c.error);
		rc = 1;
	}
	pgconn_destroy(&c);
	return rc;
}
