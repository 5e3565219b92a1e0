/*
 * console.c - `pg_relay web`: flags, the password-file helper (--hash-password), the start-up
 * checks, the sign-in address of a console without a password file, and the wait for SIGTERM
 * while the server's thread serves the pages.
 */
#include "web_console.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "config.h"
#include "log.h"
#include "pgconn.h"
#include "web_auth.h"
#include "web_db.h"
#include "web_server.h"
#include "web_signin.h"

#define DEFAULT_LISTEN "127.0.0.1:9480"

static const char web_usage[] =
	"pg_relay web - the web console: queues, throughput, events and their attempts, failures, Processors\n"
	"and cluster nodes of pg_relay in a database, with retry, discard, pause and resume for admins.\n"
	"\n"
	"Usage: pg_relay web [-d CONNINFO] [--listen=ADDR:PORT] [--tls-cert=FILE --tls-key=FILE]\n"
	"                    [--auth-file=FILE | --token-file=FILE]\n"
	"       pg_relay web --hash-password=NAME [--iterations=N]   (the password is read from stdin)\n"
	"\n"
	"  -d, --dbname=CONNINFO        libpq connection string or URI (default: the PG* environment variables)\n"
	"  -l, --listen=ADDR:PORT       where to serve (default " DEFAULT_LISTEN "); an address that is not\n"
	"                               loopback needs --tls-cert, --tls-key and --auth-file\n"
	"      --tls-cert=FILE          PEM certificate (chain): serve HTTPS\n"
	"      --tls-key=FILE           the certificate's PEM private key\n"
	"      --auth-file=FILE         users and salted password hashes (NAME:pbkdf2-sha256:...): HTTP sign-in\n"
	"      --token-file=FILE        without --auth-file: write the sign-in address into FILE (mode 0600)\n"
	"                               instead of standard error\n"
	"      --hash-password=NAME     print NAME's line for the auth file, reading the password from stdin\n"
	"      --iterations=N           PBKDF2-HMAC-SHA256 rounds of --hash-password (default 600000)\n"
	"      --log-level=LEVEL        error, warn, info (default) or debug (a line per request)\n"
	"  -h, --help                   show this help and exit\n"
	"\n"
	"Without --auth-file, the console draws a sign-in token at each start and writes the address that\n"
	"signs in with it (web_sign_in url=.../sign-in?token=...) once, on standard error or into FILE;\n"
	"every page needs the session cookie it gives.\n"
	"\n"
	"The database decides who sees and does what: the console connects as the role it is given. A member\n"
	"of pgrelay_monitor sees queue state and outcomes; a member of pgrelay_admin also payloads, deliveries\n"
	"and the actions. Exit status: 0 stopped by SIGTERM or SIGINT, 1 cannot start, 2 usage.\n";

struct WebArgs {
	const char *conninfo;
	struct WebServerOptions server;
	const char *token_file;
	const char *hash_name;
	long iterations;
	enum LogLevel level;
};

/* parse_args returns 0 to go on, 1 help printed, 2 usage error (one line printed). */
static int
parse_args(int argc, char **argv, struct WebArgs *a)
{
	static const struct option lo[] = {{"dbname", required_argument, NULL, 'd'},
									   {"listen", required_argument, NULL, 'l'},
									   {"tls-cert", required_argument, NULL, 'C'},
									   {"tls-key", required_argument, NULL, 'K'},
									   {"auth-file", required_argument, NULL, 'A'},
									   {"token-file", required_argument, NULL, 'T'},
									   {"hash-password", required_argument, NULL, 'P'},
									   {"iterations", required_argument, NULL, 'I'},
									   {"log-level", required_argument, NULL, 'L'},
									   {"help", no_argument, NULL, 'h'},
									   {NULL, 0, NULL, 0}};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:l:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			a->conninfo = optarg;
			break;
		case 'l':
			a->server.listen = optarg;
			break;
		case 'C':
			a->server.tls_cert = optarg;
			break;
		case 'K':
			a->server.tls_key = optarg;
			break;
		case 'A':
			a->server.auth_file = optarg;
			break;
		case 'T':
			a->token_file = optarg;
			break;
		case 'P':
			a->hash_name = optarg;
			break;
		case 'I':
			if (!config_parse_int(optarg, AUTH_MIN_ITERATIONS, AUTH_MAX_ITERATIONS, &a->iterations)) {
				fprintf(stderr, "pg_relay web: --iterations must be a number from %d to %ld, not \"%s\"\n",
						AUTH_MIN_ITERATIONS, AUTH_MAX_ITERATIONS, optarg);
				return 2;
			}
			break;
		case 'L':
			if (strcmp(optarg, "error") == 0)
				a->level = LL_ERROR;
			else if (strcmp(optarg, "warn") == 0)
				a->level = LL_WARN;
			else if (strcmp(optarg, "info") == 0)
				a->level = LL_INFO;
			else if (strcmp(optarg, "debug") == 0)
				a->level = LL_DEBUG;
			else {
				fprintf(stderr, "pg_relay web: --log-level must be error, warn, info or debug, not \"%s\"\n",
						optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(web_usage, stdout);
			return 1;
		case ':':
			fprintf(stderr, "pg_relay web: option \"%s\" needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "pg_relay web: unknown option \"%s\"\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pg_relay web: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (a->token_file != NULL && a->server.auth_file != NULL) {
		fprintf(stderr, "pg_relay web: --token-file is for a console without --auth-file\n");
		return 2;
	}
	return 0;
}

/* read_password reads one line of stdin (without echo on a terminal); false when there is none. */
static bool
read_password(char *pw, size_t len)
{
	struct termios old, quiet;
	bool tty = isatty(STDIN_FILENO) == 1 && tcgetattr(STDIN_FILENO, &old) == 0;
	bool ok;
	size_t n;

	if (tty) {
		fputs("Password: ", stderr);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t) ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	ok = fgets(pw, (int) len, stdin) != NULL;
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputs("\n", stderr);
	}
	if (!ok)
		return false;
	n = strlen(pw);
	if (n == len - 1 && pw[n - 1] != '\n')
		return false;
	while (n > 0 && (pw[n - 1] == '\n' || pw[n - 1] == '\r'))
		pw[--n] = '\0';
	return true;
}

static int
hash_password(const struct WebArgs *a)
{
	char pw[1024], err[256];
	struct Buf line = BUF_INIT;
	bool ok;

	if (!auth_name_ok(a->hash_name)) {
		fprintf(stderr,
				"pg_relay web: the user name must be 1 to 64 letters, digits or . _ @ -, not \"%s\"\n",
				a->hash_name);
		return 2;
	}
	if (!read_password(pw, sizeof pw)) {
		fprintf(stderr, "pg_relay web: no password on stdin (one line of at most 1022 bytes)\n");
		return 2;
	}
	ok = auth_hash_line(a->hash_name, pw, a->iterations, &line, err, sizeof err);
	OPENSSL_cleanse(pw, sizeof pw);
	if (!ok) {
		fprintf(stderr, "pg_relay web: %s\n", err);
		buf_free(&line);
		return 2;
	}
	fputs(line.data, stdout);
	buf_free(&line);
	return 0;
}

/*
 * show_sign_in gives whoever started the console its sign-in address, once: into the token file
 * (mode 0600), or else on standard error, whatever the log level. No other line carries the token.
 */
static bool
show_sign_in(const struct WebArgs *a, const char *url, char *err, size_t errlen)
{
	char address[512];
	struct LogField field;
	bool ok = true;

	snprintf(address, sizeof address, "%ssign-in?token=%s", url, signin_token());
	if (a->token_file != NULL) {
		strcat(address, "\n");
		ok = signin_write_file(a->token_file, address, err, errlen);
		if (ok)
			log_info("web_sign_in", LOG_STR("file", a->token_file));
	} else {
		field = LOG_STR("url", address);
		log_write(LL_INFO, NULL, "web_sign_in", &field, 1);
	}
	OPENSSL_cleanse(address, sizeof address);
	return ok;
}

/* wait_for_stop waits for SIGTERM or SIGINT (blocked in every thread, taken here). */
static void
wait_for_stop(const sigset_t *set)
{
	int sig = 0;

	for (;;) {
		if (sigwait(set, &sig) != 0)
			continue;
		if (sig == SIGTERM || sig == SIGINT)
			break;
		log_info("web_signal_ignored", LOG_INT("signal", sig),
				 LOG_STR("hint", "restart pg_relay web to read changed files"));
	}
	log_info("web_stopping", LOG_STR("signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"));
}

int
web_main(int argc, char **argv)
{
	struct WebArgs a = {.iterations = AUTH_DEFAULT_ITERATIONS, .level = LL_INFO};
	struct WebCaps caps;
	char err[1024], url[256];
	bool loopback;
	sigset_t set;
	int rc;

	err[0] = '\0';
	a.server.listen = DEFAULT_LISTEN;
	rc = parse_args(argc, argv, &a);
	if (rc != 0) {
		if (rc == 2)
			fputs("Try \"pg_relay web --help\" for more information.\n", stderr);
		return rc == 1 ? 0 : 2;
	}
	if (a.hash_name != NULL)
		return hash_password(&a);
	if (!pgconn_check_conninfo(a.conninfo, err, sizeof err) ||
		!web_server_check(&a.server, &loopback, err, sizeof err)) {
		fprintf(stderr, "pg_relay web: %s\n", err);
		return 2;
	}
	log_configure(a.level, LF_TEXT);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (!web_db_open(a.conninfo, err, sizeof err) || !web_db_caps(&caps)) {
		fprintf(stderr, "pg_relay web: could not read the database: %s\n", err[0] ? err : web_db_error());
		web_db_close();
		return 1;
	}
	if (!caps.admin && !caps.monitor)
		log_warn(
			"web_role", LOG_STR("role", caps.role),
			LOG_STR(
				"hint",
				"the role is neither pgrelay_admin nor pgrelay_monitor: the pages say what it may not read"));
	if (!web_server_start(&a.server, url, sizeof url, err, sizeof err)) {
		fprintf(stderr, "pg_relay web: %s\n", err);
		web_db_close();
		return 1;
	}
	log_info("web_listening", LOG_STR("url", url), LOG_STR("role", caps.role),
			 LOG_STR("database", caps.database), LOG_BOOL("tls", a.server.tls_cert != NULL),
			 LOG_STR("sign_in", a.server.auth_file != NULL ? "password" : "token"),
			 LOG_INT("users", auth_users()));
	if (a.server.auth_file == NULL && !show_sign_in(&a, url, err, sizeof err)) {
		fprintf(stderr, "pg_relay web: %s\n", err);
		web_server_stop();
		web_db_close();
		return 1;
	}
	wait_for_stop(&set);
	web_server_stop();
	web_db_close();
	return 0;
}
