/*
 * tool_redis.c - appends events to a Redis stream through redis_stream.c, outside any database,
 * for test/e2e/test_redis_stream.py: one line per append, "OUTCOME ENTRY_ID ERROR".
 *
 *   tool_redis [--tls] [--ca FILE] [--user U] [--password P] [--maxlen N] [--ttl S]
 *              [--timeout-ms N] [--key K] HOST PORT STREAM EVENT_ID PAYLOAD [EVENT_ID PAYLOAD]...
 *
 * All the events go through one session, as a worker's do.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_stream.h"

static const char *const OUTCOMES[] = {"sent", "duplicate", "retry", "config"};

int
main(int argc, char **argv)
{
	static const struct option opts[] = {{"tls", no_argument, NULL, 't'},
										 {"ca", required_argument, NULL, 'c'},
										 {"user", required_argument, NULL, 'u'},
										 {"password", required_argument, NULL, 'p'},
										 {"maxlen", required_argument, NULL, 'm'},
										 {"ttl", required_argument, NULL, 'l'},
										 {"timeout-ms", required_argument, NULL, 'o'},
										 {"key", required_argument, NULL, 'k'},
										 {NULL, 0, NULL, 0}};
	struct RedisStreamTarget t = {.dedup_ttl_s = 86400, .timeout_ms = 5000};
	struct RedisStreamEntry e = {.channel = "orders", .attempt = "1", .queued_at = "2026-12-07T00:00:00Z"};
	struct RedisSession s = {0};
	int c, i;

	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			t.addr.tls = true;
			break;
		case 'c':
			t.addr.ca_file = optarg;
			break;
		case 'u':
			t.addr.user = optarg;
			break;
		case 'p':
			t.addr.password = optarg;
			break;
		case 'm':
			t.maxlen = atol(optarg);
			break;
		case 'l':
			t.dedup_ttl_s = atol(optarg);
			break;
		case 'o':
			t.timeout_ms = atol(optarg);
			break;
		case 'k':
			e.key = optarg;
			break;
		default:
			return 2;
		}
	}
	if (argc - optind < 5 || (argc - optind - 3) % 2 != 0) {
		fprintf(stderr,
				"usage: tool_redis [options] HOST PORT STREAM EVENT_ID PAYLOAD [EVENT_ID PAYLOAD]...\n");
		return 2;
	}
	t.addr.host = argv[optind];
	t.addr.port = atoi(argv[optind + 1]);
	t.stream = argv[optind + 2];
	for (i = optind + 3; i + 1 < argc; i += 2) {
		struct RedisStreamResult r;

		e.event_id = argv[i];
		e.payload = argv[i + 1];
		e.payload_len = strlen(argv[i + 1]);
		redis_stream_append(&s, &t, &e, &r);
		printf("%s%s %s %s\n", OUTCOMES[r.outcome], r.unknown ? "(unknown)" : "",
			   r.entry_id[0] ? r.entry_id : "-", r.error[0] ? r.error : "-");
		fflush(stdout);
	}
	redis_session_close(&s);
	return 0;
}
