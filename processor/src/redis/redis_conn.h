/*
 * redis_conn.h - one connection to a Redis server, plain TCP or TLS, that sends commands and reads
 * their replies under a deadline. hiredis formats the commands and parses the replies (its
 * redisReader); the socket and TLS are ours, because the hiredis of Debian 12 (0.14) has no TLS.
 *
 * Like the other delivery code, this module never logs and never exits; the caller must ignore
 * SIGPIPE.
 */
#ifndef PGRELAY_REDIS_CONN_H
#define PGRELAY_REDIS_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "compiler.h"

/* Where a connection goes and how. */
struct RedisAddress {
	const char *host;     /* a name or an address */
	int port;             /* 1-65535 */
	bool tls;             /* TLS, the server's certificate checked against ca_file and host */
	const char *ca_file;  /* NULL: the system's CA store */
	const char *user;     /* AUTH user password (Redis 6 ACL); NULL: AUTH password, or none */
	const char *password; /* NULL: no AUTH */
};

struct RedisConn;

/* How a command ended, for the caller's classification. */
enum RedisIo {
	RIO_OK,        /* a reply was read (it may be an error reply) */
	RIO_CONNECT,   /* no connection: name, refused, timed out, TLS handshake; nothing was sent */
	RIO_SETUP,     /* no connection for the set-up's reason: the CA file, the server's certificate */
	RIO_AUTH,      /* the server refused AUTH */
	RIO_SENT_LOST, /* the connection failed or timed out after the command went out: unknown */
	RIO_UNSENT,    /* the connection failed before the command went out */
};

/*
 * redis_conn_open connects to a (and sends AUTH when a password is given) before the deadline
 * (now_us() / 1000 based; name resolution is not bounded by it). NULL with the reason in err; *io
 * says RIO_CONNECT, RIO_SETUP or RIO_AUTH.
 */
struct RedisConn *redis_conn_open(const struct RedisAddress *a, long long deadline_ms, enum RedisIo *io,
								  char *err, size_t errlen) MUSTCHECK;

/* redis_conn_same says whether c was opened to a (same host, port, TLS, CA, user and password). */
bool redis_conn_same(const struct RedisConn *c, const struct RedisAddress *a);

/*
 * redis_conn_command sends one command (argc arguments, binary safe) and reads its reply before
 * the deadline. RIO_OK with *reply set (free it with freeReplyObject), or the failure with the
 * reason in err; after a failure the connection is broken and must be closed.
 */
enum RedisIo redis_conn_command(struct RedisConn *c, int argc, const char **argv, const size_t *lens,
								long long deadline_ms, redisReply **reply, char *err, size_t errlen);

/*
 * A pipeline: redis_conn_send sends len bytes of commands already formatted (redisFormatCommandArgv)
 * before the deadline, RIO_OK or RIO_SENT_LOST (some of it may have gone out); redis_conn_read then
 * reads the next reply, in the order the commands went, RIO_OK with *reply set or RIO_SENT_LOST.
 * After a failure the connection is broken and must be closed.
 */
enum RedisIo redis_conn_send(struct RedisConn *c, const char *data, size_t len, long long deadline_ms,
							 char *err, size_t errlen);
enum RedisIo redis_conn_read(struct RedisConn *c, long long deadline_ms, redisReply **reply, char *err,
							 size_t errlen);

void redis_conn_close(struct RedisConn *c);

#endif
