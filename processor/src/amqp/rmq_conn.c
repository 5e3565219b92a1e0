/*
 * rmq_conn.c - one connection to a RabbitMQ broker (rmq_conn.h): rabbitmq-c's TCP or TLS socket,
 * the login, channel 1 in confirm mode, and the guard that bounds its writes. Every rabbitmq-c
 * call's status or reply is checked.
 */
#include "rmq_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <amqp_framing.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "clock.h"

/* the largest frame we ask for: a payload larger than this goes in several body frames */
#define FRAME_MAX 16384

bool
rmq_timeval(long long deadline_ms, struct timeval *tv)
{
	long long left = deadline_ms - now_us() / 1000;

	if (left <= 0)
		return false;
	tv->tv_sec = (time_t) (left / 1000);
	tv->tv_usec = (suseconds_t) ((left % 1000) * 1000);
	return true;
}

enum RmqIo
rmq_close_io(int reply_code)
{
	switch (reply_code) {
	case AMQP_RESOURCE_LOCKED:
	case AMQP_CONNECTION_FORCED:
	case AMQP_INTERNAL_ERROR:
	case AMQP_RESOURCE_ERROR:
		return QIO_REFUSED;
	default:
		/* ACCESS_REFUSED, NOT_FOUND, NOT_ALLOWED (a virtual host), PRECONDITION_FAILED, ... */
		return QIO_SETUP;
	}
}

/* guard_main is the guard's thread: it waits for a write armed, and cuts one that outlasts its deadline. */
static void *
guard_main(void *arg)
{
	struct RmqGuard *g = arg;
	struct timespec until;

	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		if (g->fd < 0 || g->cut) {
			pthread_cond_wait(&g->cv, &g->mu);
		} else if (now_us() / 1000 >= g->until_ms) {
			/*
			 * Shut down, not closed: the descriptor stays the writer's until it closes the
			 * connection, after it has disarmed. A failure (the broker already went away) leaves
			 * the writer with a socket that fails by itself.
			 */
			(void) shutdown(g->fd, SHUT_RDWR);
			g->cut = true;
		} else {
			until.tv_sec = (time_t) (g->until_ms / 1000);
			until.tv_nsec = (long) (g->until_ms % 1000) * 1000000L;
			(void) pthread_cond_timedwait(&g->cv, &g->mu, &until); /* ETIMEDOUT: checked above */
		}
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/*
 * start_thread starts g's thread on a stack of RMQ_GUARD_STACK: it only waits, reads the clock and
 * shuts a socket down. The default (8 MiB, as a worker's own) would double what each worker
 * reserves, which counts against a strict overcommit limit (vm.overcommit_memory=2).
 */
static bool
start_thread(struct RmqGuard *g)
{
	pthread_attr_t at;
	bool ok;

	if (pthread_attr_init(&at) != 0)
		return false;
	ok = pthread_attr_setstacksize(&at, RMQ_GUARD_STACK) == 0 &&
		 pthread_create(&g->thread, &at, guard_main, g) == 0;
	pthread_attr_destroy(&at);
	return ok;
}

bool
rmq_guard_start(struct RmqGuard *g)
{
	pthread_condattr_t ca;

	memset(g, 0, sizeof *g);
	g->fd = -1;
	if (pthread_condattr_init(&ca) != 0)
		return false;
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 || pthread_cond_init(&g->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		return false;
	}
	pthread_condattr_destroy(&ca);
	if (pthread_mutex_init(&g->mu, NULL) != 0) {
		pthread_cond_destroy(&g->cv);
		return false;
	}
	if (!start_thread(g)) {
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->cv);
		return false;
	}
	g->started = true;
	return true;
}

void
rmq_guard_arm(struct RmqGuard *g, int fd, long long deadline_ms)
{
	pthread_mutex_lock(&g->mu);
	g->fd = fd;
	g->until_ms = deadline_ms;
	g->cut = false;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

bool
rmq_guard_disarm(struct RmqGuard *g)
{
	bool cut;

	pthread_mutex_lock(&g->mu);
	cut = g->cut;
	g->fd = -1;
	pthread_mutex_unlock(&g->mu);
	return cut;
}

void
rmq_guard_stop(struct RmqGuard *g)
{
	if (!g->started)
		return;
	pthread_mutex_lock(&g->mu);
	g->stop = true;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->thread, NULL);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
	g->started = false;
}

void
rmq_write_begin(struct RmqConn *c, long long deadline_ms)
{
	rmq_guard_arm(&c->guard, amqp_get_sockfd(c->st), deadline_ms);
}

bool
rmq_write_end(struct RmqConn *c)
{
	return rmq_guard_disarm(&c->guard);
}

/* address_key is what rmq_conn_same compares: every field of a, NUL-separated; NULL out of memory. */
static char *
address_key(const struct RmqAddress *a)
{
	char *k = NULL;

	if (asprintf(&k, "%s%c%d%c%s%c%d%c%s%c%d%c%s%c%s", a->host, 0, a->port, 0, a->vhost, 0, a->tls, 0,
				 a->ca_file ? a->ca_file : "", 0, a->tls_verify, 0, a->user, 0,
				 a->password ? a->password : "") < 0)
		return NULL;
	return k;
}

/* key_len is the length of a key address_key made (it holds NULs: 7 separators). */
static size_t
key_len(const char *k)
{
	size_t n = 0;
	int i;

	for (i = 0; i < 8; i++)
		n += strlen(k + n) + 1;
	return n;
}

bool
rmq_conn_same(const struct RmqConn *c, const struct RmqAddress *a)
{
	char *k = address_key(a);
	bool same = k != NULL && key_len(k) == key_len(c->key) && memcmp(k, c->key, key_len(k)) == 0;

	if (k != NULL) {
		explicit_bzero(k, key_len(k));
		free(k);
	}
	return same;
}

/*
 * reply_error describes a failed RPC's reply r in err, and says what kind of failure it is: a
 * connection.close or channel.close from the broker is classified by its code, a library error
 * is a lost connection (or a timeout).
 */
static enum RmqIo
reply_error(amqp_rpc_reply_t r, const char *what, char *err, size_t errlen)
{
	const amqp_connection_close_t *cc;
	const amqp_channel_close_t *ch;

	switch (r.reply_type) {
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD && r.reply.decoded != NULL) {
			cc = r.reply.decoded;
			snprintf(err, errlen, "%s: the broker closed the connection: %d %.*s", what, cc->reply_code,
					 (int) cc->reply_text.len, (const char *) cc->reply_text.bytes);
			return rmq_close_io(cc->reply_code);
		}
		if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD && r.reply.decoded != NULL) {
			ch = r.reply.decoded;
			snprintf(err, errlen, "%s: the broker closed the channel: %d %.*s", what, ch->reply_code,
					 (int) ch->reply_text.len, (const char *) ch->reply_text.bytes);
			return rmq_close_io(ch->reply_code);
		}
		snprintf(err, errlen, "%s: the broker answered with an unexpected method", what);
		return QIO_REFUSED;
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		snprintf(err, errlen, "%s: %s", what, amqp_error_string2(r.library_error));
		return QIO_CONNECT;
	case AMQP_RESPONSE_NONE:
		snprintf(err, errlen, "%s: no reply", what);
		return QIO_CONNECT;
	case AMQP_RESPONSE_NORMAL:
		break;
	}
	return QIO_OK;
}

/* open_socket makes the TCP or TLS socket of st and connects it before the deadline. */
static enum RmqIo
open_socket(amqp_connection_state_t st, const struct RmqAddress *a, long long deadline_ms, char *err,
			size_t errlen)
{
	amqp_socket_t *sock;
	struct timeval tv;
	const char *ca;
	int rc;

	sock = a->tls ? amqp_ssl_socket_new(st) : amqp_tcp_socket_new(st);
	if (sock == NULL) {
		snprintf(err, errlen, "cannot make a socket (out of memory)");
		return QIO_CONNECT;
	}
	if (a->tls) {
		ERR_clear_error(); /* libpq and libcurl share the thread's OpenSSL error queue */
		ca = a->ca_file != NULL ? a->ca_file : X509_get_default_cert_file();
		rc = amqp_ssl_socket_set_cacert(sock, ca);
		if (rc != AMQP_STATUS_OK) {
			snprintf(err, errlen, "cannot read the CA file %s: %s", ca, amqp_error_string2(rc));
			return QIO_SETUP;
		}
		amqp_ssl_socket_set_verify_peer(sock, a->tls_verify ? 1 : 0);
		amqp_ssl_socket_set_verify_hostname(sock, a->tls_verify ? 1 : 0);
		rc = amqp_ssl_socket_set_ssl_versions(sock, AMQP_TLSv1_2, AMQP_TLSvLATEST);
		if (rc != AMQP_STATUS_OK) {
			snprintf(err, errlen, "cannot require TLS 1.2: %s", amqp_error_string2(rc));
			return QIO_SETUP;
		}
	}
	if (!rmq_timeval(deadline_ms, &tv)) {
		snprintf(err, errlen, "cannot connect to %s:%d: timed out", a->host, a->port);
		return QIO_CONNECT;
	}
	rc = amqp_socket_open_noblock(sock, a->host, a->port, &tv);
	if (rc == AMQP_STATUS_OK)
		return QIO_OK;
	snprintf(err, errlen, "cannot connect to %s:%d: %s", a->host, a->port, amqp_error_string2(rc));
	if (rc == AMQP_STATUS_SSL_PEER_VERIFY_FAILED || rc == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED) {
		snprintf(err, errlen, "cannot connect to %s:%d: the broker's certificate: %s", a->host, a->port,
				 amqp_error_string2(rc));
		return QIO_SETUP;
	}
	return QIO_CONNECT;
}

/* bound_rpcs makes rabbitmq-c's handshake and RPC waits end at the deadline too. */
static bool
bound_rpcs(amqp_connection_state_t st, long long deadline_ms, char *err, size_t errlen)
{
	struct timeval tv;

	if (!rmq_timeval(deadline_ms, &tv)) {
		snprintf(err, errlen, "timed out before the login");
		return false;
	}
	if (amqp_set_handshake_timeout(st, &tv) != AMQP_STATUS_OK ||
		amqp_set_rpc_timeout(st, &tv) != AMQP_STATUS_OK) {
		snprintf(err, errlen, "cannot set the broker's timeouts");
		return false;
	}
	return true;
}

/* handshake logs in, opens the channel and selects confirms; QIO_OK or the failure in err. */
static enum RmqIo
handshake(amqp_connection_state_t st, const struct RmqAddress *a, long long deadline_ms, char *err,
		  size_t errlen)
{
	amqp_rpc_reply_t r;
	enum RmqIo io;

	if (!bound_rpcs(st, deadline_ms, err, errlen))
		return QIO_CONNECT;
	r = amqp_login(st, a->vhost, 0, FRAME_MAX, 0, AMQP_SASL_METHOD_PLAIN, a->user,
				   a->password != NULL ? a->password : "guest");
	io = reply_error(r, "login refused", err, errlen);
	if (io != QIO_OK)
		return io;
	if (amqp_channel_open(st, RMQ_CHANNEL) == NULL) {
		io = reply_error(amqp_get_rpc_reply(st), "cannot open a channel", err, errlen);
		return io != QIO_OK ? io : QIO_CONNECT;
	}
	if (amqp_confirm_select(st, RMQ_CHANNEL) == NULL) {
		io = reply_error(amqp_get_rpc_reply(st), "cannot select publisher confirms", err, errlen);
		return io != QIO_OK ? io : QIO_CONNECT;
	}
	return QIO_OK;
}

struct RmqConn *
rmq_conn_open(const struct RmqAddress *a, long long deadline_ms, enum RmqIo *io, char *err, size_t errlen)
{
	struct RmqConn *c = calloc(1, sizeof *c);

	*io = QIO_CONNECT;
	if (c == NULL || (c->key = address_key(a)) == NULL || (c->st = amqp_new_connection()) == NULL) {
		snprintf(err, errlen, "out of memory");
		rmq_conn_close(c);
		return NULL;
	}
	/*
	 * The guard bounds the publishes' writes. The handshake's writes go unguarded: a few hundred
	 * bytes into a new socket's empty buffer, taken whole without waiting for the broker.
	 */
	if (!rmq_guard_start(&c->guard)) {
		snprintf(err, errlen, "cannot start the connection's write guard (out of threads)");
		rmq_conn_close(c);
		return NULL;
	}
	*io = open_socket(c->st, a, deadline_ms, err, errlen);
	if (*io == QIO_OK)
		*io = handshake(c->st, a, deadline_ms, err, errlen);
	if (*io == QIO_REFUSED || *io == QIO_LOST || *io == QIO_UNSENT)
		*io = QIO_CONNECT; /* nothing was sent: the attempt passes */
	if (*io != QIO_OK) {
		rmq_conn_close(c);
		return NULL;
	}
	return c;
}

void
rmq_conn_close(struct RmqConn *c)
{
	if (c == NULL)
		return;
	rmq_guard_stop(&c->guard); /* before the socket is closed: its number may be reused at once */
	if (c->st != NULL) {
		/*
		 * No connection.close handshake: the connection may be broken, and a close that waits for
		 * its reply could outlast the attempt. Destroying it closes the socket; the broker logs a
		 * client that went away.
		 */
		int rc = amqp_destroy_connection(c->st);

		(void) rc; /* nothing to do about a socket that fails to close */
	}
	if (c->key != NULL) {
		explicit_bzero(c->key, key_len(c->key));
		free(c->key);
	}
	free(c);
}
