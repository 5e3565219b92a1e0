/*
 * tool_deliver.c - deliver fetch() documents through their profile's transport, outside any
 * database.
 *
 * For tests and for trying a profile by hand: reads each FILE (a pgrelay_notifier.fetch()
 * document), resolves its secrets, delivers it --repeat times on ONE session per transport (so the
 * connection is reused), and prints one set_status-style JSON document per delivery on stdout.
 */
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "message.h"
#include "mime.h"
#include "secrets.h"
#include "status_doc.h"
#include "transport.h"

static const char usage_text[] =
	"Usage: tool_deliver [OPTION]... FILE...\n"
	"Deliver pgrelay_notifier.fetch() documents; print one result per delivery.\n"
	"\n"
	"  -s, --secrets-dir=DIR   where file:NAME secrets live (DIR/profile/NAME/...)\n"
	"  -E, --secret-env=LIST   the env: variables profiles may name (VAR=profile/NAME, ...)\n"
	"  -n, --repeat=N          deliver each file N times on the same session (default 1)\n"
	"  -t, --max-time-ms=MS    cap on one attempt (default 300000)\n"
	"  -e, --ehlo=NAME         EHLO name when the profile has none\n"
	"  -m, --print-mime        print the MIME message of each file instead of delivering\n"
	"  -h, --help              this text\n";

struct ToolOptions {
	const char *secrets_dir;
	const char *secret_env;
	int repeat;
	struct DeliveryOptions dopt;
	bool print_mime;
};

/* read_file returns the whole file as a NUL-terminated string, or NULL. */
static char *
read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long len;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
		(data = malloc((size_t) len + 1)) != NULL) {
		if (fread(data, 1, (size_t) len, f) != (size_t) len) {
			free(data);
			data = NULL;
		} else
			data[len] = '\0';
	}
	fclose(f);
	return data;
}

/* print_result writes the set_status document of one attempt as one line. */
static void
print_result(int attempt, const char *transport, const char *started, const struct DeliveryResult *r,
			 bool debug)
{
	struct StatusDoc sd = {
		attempt, attempt_result_outcome(delivery_result(r->status)), transport, started, NULL, NULL, debug};
	char finished[64], *text;

	iso8601_now(finished, sizeof(finished));
	sd.finished_at = finished;
	text = status_doc_json(&sd, r);
	if (text != NULL)
		printf("%s\n", text);
	fflush(stdout);
	free(text);
}

/* print_failure reports a document that could not be delivered at all (parse, secrets). */
static void
print_failure(int attempt, const char *transport, const char *reason)
{
	struct DeliveryResult r;
	char started[64];

	iso8601_now(started, sizeof(started));
	delivery_result_init(&r);
	r.status = DS_PERMANENT;
	snprintf(r.error, sizeof(r.error), "%s", reason);
	print_result(attempt, transport, started, &r, false);
	delivery_result_free(&r);
}

/* print_mime writes the MIME bytes mime_build makes for m. */
static bool
print_mime(const struct Message *m)
{
	struct MimeOptions mo = {time(NULL), mime_boundary_seed()};
	struct Buf b = BUF_INIT;
	char err[256];
	bool ok = mime_build(m, &mo, &b, err, sizeof(err));

	if (ok)
		fwrite(b.data, 1, b.len, stdout);
	else
		fprintf(stderr, "tool_deliver: %s\n", err);
	buf_free(&b);
	return ok;
}

/* deliver_repeated delivers m opt->repeat times through t on session s. */
static void
deliver_repeated(const struct Transport *t, struct TransportSession *s, const struct Message *m,
				 const struct ToolOptions *opt, int *attempt)
{
	char started[64];
	int i;

	for (i = 0; i < opt->repeat; i++) {
		struct DeliveryResult r;

		delivery_result_init(&r);
		iso8601_now(started, sizeof(started));
		if (!t->deliver(s, m, &opt->dopt, &r)) {
			/* out of memory: say so, the result may be half filled */
			r.status = DS_TRANSIENT;
			snprintf(r.error, sizeof(r.error), "deliver could not describe the result");
		}
		print_result(++*attempt, t->name, started, &r, m->profile.debug);
		delivery_result_free(&r);
	}
}

/* deliver_file delivers one document through its transport's session in tc; false on a usage error. */
static bool
deliver_file(struct TransportCache *tc, const char *path, const struct ToolOptions *opt, int *attempt)
{
	char *json = read_file(path), err[1024];
	const struct Transport *t;
	struct TransportSession *s;
	struct Message m;

	if (json == NULL) {
		fprintf(stderr, "tool_deliver: cannot read %s\n", path);
		return false;
	}
	if (!message_parse(json, &m, err, sizeof(err))) {
		free(json);
		print_failure(++*attempt, NULL, err);
		return true;
	}
	free(json);
	if (opt->print_mime) {
		bool ok = print_mime(&m);

		message_free(&m);
		return ok;
	}
	t = transport_find(profile_transport_name(&m.profile), err, sizeof(err));
	if (t == NULL ||
		!profile_resolve_secrets(&m.profile, opt->secrets_dir, opt->secret_env, err, sizeof(err)))
		print_failure(++*attempt, profile_transport_name(&m.profile), err);
	else if ((s = transport_cache_session(tc, t, 0)) == NULL)
		print_failure(++*attempt, t->name, "out of memory");
	else
		deliver_repeated(t, s, &m, opt, attempt);
	message_free(&m);
	return true;
}

/* parse_args fills opt; returns the index of the first file, or -1 after printing a usage error. */
static int
parse_args(int argc, char **argv, struct ToolOptions *opt)
{
	static const struct option longopts[] = {{"secrets-dir", required_argument, NULL, 's'},
											 {"secret-env", required_argument, NULL, 'E'},
											 {"repeat", required_argument, NULL, 'n'},
											 {"max-time-ms", required_argument, NULL, 't'},
											 {"ehlo", required_argument, NULL, 'e'},
											 {"print-mime", no_argument, NULL, 'm'},
											 {"help", no_argument, NULL, 'h'},
											 {NULL, 0, NULL, 0}};
	int c;

	while ((c = getopt_long(argc, argv, "s:E:n:t:e:mh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opt->secrets_dir = optarg;
			break;
		case 'E':
			opt->secret_env = optarg;
			break;
		case 'n':
			opt->repeat = atoi(optarg);
			break;
		case 't':
			opt->dopt.max_time_ms = atol(optarg);
			break;
		case 'e':
			opt->dopt.ehlo_fallback = optarg;
			break;
		case 'm':
			opt->print_mime = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			fprintf(stderr, "Try \"tool_deliver --help\" for more information.\n");
			return -1;
		}
	}
	if (optind >= argc || opt->repeat < 1 || opt->dopt.max_time_ms < 1) {
		fprintf(stderr, "tool_deliver: need FILE, --repeat >= 1, --max-time-ms >= 1\n"
						"Try \"tool_deliver --help\" for more information.\n");
		return -1;
	}
	return optind;
}

int
main(int argc, char **argv)
{
	struct ToolOptions opt = {NULL, NULL, 1, {300000, NULL}, false};
	struct TransportCache *tc;
	int first = parse_args(argc, argv, &opt), attempt = 0, rc = 0, i;

	if (first < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (!transport_global_init()) {
		fprintf(stderr, "tool_deliver: libcurl initialisation failed\n");
		return 1;
	}
	tc = transport_cache_new();
	if (tc == NULL) {
		fprintf(stderr, "tool_deliver: out of memory\n");
		transport_global_cleanup();
		return 1;
	}
	for (i = first; i < argc; i++)
		if (!deliver_file(tc, argv[i], &opt, &attempt))
			rc = 2;
	transport_cache_free(tc);
	transport_global_cleanup();
	return rc;
}
