/*
 * test_hostport.c - HOST:PORT as --metrics and the console's --listen take it: IPv4, [IPv6], a
 * name or nothing (every interface), a port from 0 to 65535, and what is refused.
 */
#include <stdio.h>

#include "hostport.h"
#include "unit.h"

static void
test_host_and_port_are_split(void)
{
	static const struct {
		const char *addr;
		bool ok;
		const char *host;
		int port;
	} cases[] = {
		{"127.0.0.1:9471", true, "127.0.0.1", 9471},
		{"[::1]:9471", true, "::1", 9471},
		{"localhost:0", true, "localhost", 0},
		{":9471", true, "", 9471},
		{"127.0.0.1", false, NULL, 0},
		{"::1:9471", false, NULL, 0},
		{"[::1]9471", false, NULL, 0},
		{"127.0.0.1:65536", false, NULL, 0},
		{"127.0.0.1:-1", false, NULL, 0},
		{"127.0.0.1:http", false, NULL, 0},
		{"127.0.0.1:", false, NULL, 0},
	};
	char host[64], err[128];
	size_t i;
	int port;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bool ok = hostport_split(cases[i].addr, host, sizeof host, &port, err, sizeof err);

		if (ok != cases[i].ok)
			fprintf(stderr, "  %s: %s\n", cases[i].addr, ok ? "accepted" : err);
		CHECK(ok == cases[i].ok);
		if (ok && cases[i].ok) {
			CHECK_STR(host, cases[i].host);
			CHECK(port == cases[i].port);
		}
	}
}

int
main(void)
{
	RUN(test_host_and_port_are_split);
	return UNIT_DONE();
}
