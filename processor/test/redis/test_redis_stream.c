/*
 * test_redis_stream.c - the server's error replies classified: what passes is retried, what the
 * settings or the server's configuration cause is a configuration error; READONLY (a replica
 * after a failover) and LOADING drop the connection.
 */
#include "redis_stream.h"
#include "unit.h"

#include <stdio.h>

#include <openssl/evp.h>

static void
test_error_replies_are_classified(void)
{
	static const struct {
		const char *reply;
		enum RedisOutcome want;
		bool reconnect;
	} cases[] = {
		{"OOM command not allowed when used memory > 'maxmemory'.", RO_RETRY, false},
		{"LOADING Redis is loading the dataset in memory", RO_RETRY, true},
		{"READONLY You can't write against a read only replica.", RO_RETRY, true},
		{"BUSY Redis is busy running a script.", RO_RETRY, false},
		{"MISCONF Redis is configured to save RDB snapshots", RO_RETRY, false},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", RO_CONFIG, false},
		{"NOPERM this user has no permissions to run the 'evalsha' command", RO_CONFIG, false},
		{"NOAUTH Authentication required.", RO_CONFIG, false},
		{"MOVED 3999 127.0.0.1:6381", RO_CONFIG, false},
		{"ERR unknown command", RO_CONFIG, false},
		{"OOMX not a known word", RO_CONFIG, false},
		{"", RO_CONFIG, false},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bool reconnect = !cases[i].reconnect;

		CHECK(redis_error_outcome(cases[i].reply, &reconnect) == cases[i].want);
		CHECK(reconnect == cases[i].reconnect);
	}
}

static void
test_the_scripts_sha1_is_its_digest(void)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;
	char hex[2 * EVP_MAX_MD_SIZE + 1] = "";
	const char *script = redis_stream_script();

	CHECK(EVP_Digest(script, strlen(script), md, &n, EVP_sha1(), NULL) == 1 && n == 20);
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	CHECK_STR(redis_stream_script_sha1(), hex);
}

int
main(void)
{
	RUN(test_error_replies_are_classified);
	RUN(test_the_scripts_sha1_is_its_digest);
	return UNIT_DONE();
}
