/*
 * rmq_conn.h - one AMQP 0-9-1 connection to a RabbitMQ broker through rabbitmq-c, plain TCP or
 * TLS: connected, logged in to a virtual host, one channel opened in publisher-confirm mode
 * (confirm.select), all under a deadline. What the broker refused is classified here: a refusal
 * of the set-up (a login, a virtual host, a certificate) apart from what passes.
 *
 * Like the other delivery code, this module never logs and never exits.
 */
#ifndef PGRELAY_RMQ_CONN_H
#define PGRELAY_RMQ_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <amqp.h>

#include "compiler.h"

/* The channel number a connection publishes on (one per connection). */
#define RMQ_CHANNEL 1

/* Where a connection goes and how. */
struct RmqAddress {
	const char *host;     /* a name or an address */
	int port;             /* 1-65535 */
	const char *vhost;    /* the virtual host */
	bool tls;             /* TLS */
	const char *ca_file;  /* NULL: the system's CA store */
	bool tls_verify;      /* the broker's certificate checked against the CA and the host name */
	const char *user;     /* SASL PLAIN */
	const char *password; /* the resolved secret */
};

/* How an operation on the broker ended, for the caller's classification. */
enum RmqIo {
	QIO_OK,
	QIO_CONNECT, /* no connection: name, refused, timed out, TLS handshake; nothing was sent */
	QIO_SETUP,   /* refused for the set-up: login, virtual host, certificate, CA file, permissions */
	QIO_LOST,    /* the connection failed or timed out after the message went out: unknown */
	QIO_UNSENT,  /* the connection failed before the message went out */
	QIO_REFUSED, /* the broker refused for a passing reason (resource locked, a closing channel) */
};

/*
 * A deadline for the writes on one socket. rabbitmq-c writes a message with no deadline (its
 * heartbeat does not bound a write either: a blocked broker still sends its heartbeats), so a
 * broker that stops reading (a resource alarm) would hold the writer once the socket's buffers are
 * full. The guard's own thread shuts the socket down when a write armed is still under way at its
 * deadline: the writer's poll() wakes, its send() fails, and the connection is dropped.
 */
/* The guard thread's stack, in bytes: a few frames deep, it needs little. */
#define RMQ_GUARD_STACK (64 * 1024)

struct RmqGuard {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;  /* on the monotonic clock: an arm, a disarm, the stop */
	int fd;             /* the socket of the write under way; -1: none */
	long long until_ms; /* its deadline (now_us() / 1000 based) */
	bool cut;           /* the deadline shut the socket down */
	bool stop;
	bool started;
};

struct RmqConn {
	amqp_connection_state_t st;
	char *key;          /* what it was opened to (rmq_conn_same) */
	uint64_t published; /* the delivery tag of the last message published (confirm mode counts them) */
	struct RmqGuard guard;
};

/*
 * rmq_conn_open connects to a, logs in, opens the channel and selects confirms before the
 * deadline (now_us() / 1000 based; name resolution is not bounded by it). NULL with the reason in
 * err; *io says QIO_CONNECT or QIO_SETUP.
 */
struct RmqConn *rmq_conn_open(const struct RmqAddress *a, long long deadline_ms, enum RmqIo *io, char *err,
							  size_t errlen) MUSTCHECK;

/*
 * rmq_write_begin arms c's write deadline before a write (a publish, a close-ok): should the
 * write still be under way at deadline_ms, its socket is shut down and the write fails.
 * rmq_write_end disarms it after the write, and says whether the deadline cut the connection (then
 * it is unusable: close it).
 */
void rmq_write_begin(struct RmqConn *c, long long deadline_ms);
bool rmq_write_end(struct RmqConn *c);

/*
 * rmq_guard_start starts g's thread, unarmed; false when it cannot (g is then left stopped).
 * rmq_guard_arm arms it for the write on fd that must end by deadline_ms; rmq_guard_disarm disarms
 * it and says whether the deadline shut fd down meanwhile. rmq_guard_stop ends the thread, before
 * fd is closed: a descriptor the guard could still shut down is never one reused elsewhere.
 */
bool rmq_guard_start(struct RmqGuard *g) MUSTCHECK;
void rmq_guard_arm(struct RmqGuard *g, int fd, long long deadline_ms);
bool rmq_guard_disarm(struct RmqGuard *g);
void rmq_guard_stop(struct RmqGuard *g);

/* rmq_conn_same says whether c was opened to a (host, port, virtual host, TLS, user, password). */
bool rmq_conn_same(const struct RmqConn *c, const struct RmqAddress *a);

void rmq_conn_close(struct RmqConn *c);

/*
 * rmq_close_io classifies a broker's connection.close or channel.close by its reply code:
 * QIO_SETUP for the set-up's (ACCESS_REFUSED, NOT_FOUND, NOT_ALLOWED, PRECONDITION_FAILED,
 * COMMAND_INVALID...), QIO_REFUSED for what passes (RESOURCE_LOCKED, CONNECTION_FORCED,
 * INTERNAL_ERROR, RESOURCE_ERROR).
 */
enum RmqIo rmq_close_io(int reply_code);

/* rmq_timeval sets tv to the time left before the deadline (at least 1 ms); false when none is left. */
bool rmq_timeval(long long deadline_ms, struct timeval *tv);

#endif
