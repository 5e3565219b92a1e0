/*
 * redis_conn.c - one connection to a Redis server: a socket connected without blocking past the
 * deadline, TLS through OpenSSL when asked, commands formatted and replies parsed by hiredis.
 */
#include "redis_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "clock.h"

/* A reply larger than this is not the script's: the server is not what the settings say. */
#define REDIS_REPLY_MAX (1024 * 1024)

struct RedisConn {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	redisReader *reader;
	char *key; /* what redis_conn_same compares: host, port, tls, ca_file, user, password */
};

/* left_ms is what is left of the deadline, at least 0. */
static int
left_ms(long long deadline_ms)
{
	long long left = deadline_ms - now_us() / 1000;

	return left <= 0 ? 0 : left > 600000 ? 600000 : (int) left;
}

/* wait_fd waits until fd is ready for events, or the deadline passes (false, errno ETIMEDOUT). */
static bool
wait_fd(int fd, short events, long long deadline_ms)
{
	struct pollfd p = {fd, events, 0};
	int rc;

	do
		rc = poll(&p, 1, left_ms(deadline_ms));
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		errno = ETIMEDOUT;
	return rc > 0;
}

/* connect_one connects a non-blocking socket to one address before the deadline; -1 on failure. */
static int
connect_one(const struct addrinfo *ai, long long deadline_ms)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	int soerr = 0;
	socklen_t len = sizeof soerr;

	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline_ms) &&
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
		return fd;
	if (soerr != 0)
		errno = soerr;
	soerr = errno;
	close(fd);
	errno = soerr;
	return -1;
}

/* connect_tcp resolves host and tries its addresses in turn; -1 with the reason in err. */
static int
connect_tcp(const struct RedisAddress *a, long long deadline_ms, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[8];
	int fd = -1, rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof port, "%d", a->port);
	rc = getaddrinfo(a->host, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", a->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
		fd = connect_one(ai, deadline_ms);
	if (fd < 0)
		snprintf(err, errlen, "cannot connect to %s:%d: %s", a->host, a->port, strerror(errno));
	freeaddrinfo(res);
	return fd;
}

/* tls_error writes OpenSSL's first queued error (or what) into err and clears the queue. */
static void
tls_error(const char *what, char *err, size_t errlen)
{
	unsigned long e = ERR_get_error();
	char buf[256];

	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof buf);
		snprintf(err, errlen, "%s: %s", what, buf);
	} else {
		snprintf(err, errlen, "%s", what);
	}
	ERR_clear_error();
}

/* tls_context makes the client context: TLS 1.2 or later, the peer's certificate verified. */
static SSL_CTX *
tls_context(const struct RedisAddress *a, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL) {
		tls_error("TLS set-up failed", err, errlen);
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		tls_error("TLS set-up failed", err, errlen);
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if ((a->ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, a->ca_file, NULL)
							: SSL_CTX_set_default_verify_paths(ctx)) != 1) {
		tls_error(a->ca_file != NULL ? "cannot load the CA file" : "cannot load the system's CA store", err,
				  errlen);
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * tls_step runs one non-blocking OpenSSL call (rc its result) to its end: true when it is done,
 * false after waiting for the socket when it wants more, -1 on failure or at the deadline.
 */
static int
tls_step(struct RedisConn *c, int rc, long long deadline_ms)
{
	switch (SSL_get_error(c->ssl, rc)) {
	case SSL_ERROR_NONE:
		return 1;
	case SSL_ERROR_WANT_READ:
		return wait_fd(c->fd, POLLIN, deadline_ms) ? 0 : -1;
	case SSL_ERROR_WANT_WRITE:
		return wait_fd(c->fd, POLLOUT, deadline_ms) ? 0 : -1;
	default:
		return -1;
	}
}

/* is_ip_literal: host is an IPv4 or IPv6 address, which SNI must not carry (RFC 6066). */
static bool
is_ip_literal(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/*
 * tls_start makes the handshake, with SNI (for a name) and the host checked against the
 * certificate. *io: RIO_SETUP when the CA file or the server's certificate is the reason.
 */
static bool
tls_start(struct RedisConn *c, const struct RedisAddress *a, long long deadline_ms, enum RedisIo *io,
		  char *err, size_t errlen)
{
	int step;

	*io = RIO_SETUP;
	c->ctx = tls_context(a, err, errlen);
	if (c->ctx == NULL)
		return false;
	*io = RIO_CONNECT;
	c->ssl = SSL_new(c->ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
		(!is_ip_literal(a->host) && SSL_set_tlsext_host_name(c->ssl, a->host) != 1) ||
		SSL_set1_host(c->ssl, a->host) != 1) {
		tls_error("TLS set-up failed", err, errlen);
		return false;
	}
	/* SSL_get_error is right only with an empty error queue (libcurl and libpq share the thread) */
	do
		ERR_clear_error();
	while ((step = tls_step(c, SSL_connect(c->ssl), deadline_ms)) == 0);
	if (step < 0) {
		long v = SSL_get_verify_result(c->ssl);

		if (v != X509_V_OK) {
			*io = RIO_SETUP;
			snprintf(err, errlen, "TLS handshake with %s:%d failed: certificate %s", a->host, a->port,
					 X509_verify_cert_error_string(v));
		} else {
			tls_error(errno == ETIMEDOUT ? "TLS handshake timed out" : "TLS handshake failed", err, errlen);
		}
		return false;
	}
	return true;
}

/* send_all writes len bytes before the deadline. */
static bool
send_all(struct RedisConn *c, const char *p, size_t len, long long deadline_ms)
{
	while (len > 0) {
		ssize_t n;

		if (c->ssl != NULL) {
			int rc;

			ERR_clear_error();
			rc = SSL_write(c->ssl, p, len > 1 << 30 ? 1 << 30 : (int) len);
			if (rc > 0) {
				n = rc;
			} else {
				if (tls_step(c, rc, deadline_ms) < 0)
					return false;
				continue;
			}
		} else {
			n = send(c->fd, p, len, MSG_NOSIGNAL);
			if (n < 0) {
				if ((errno == EAGAIN || errno == EINTR) && wait_fd(c->fd, POLLOUT, deadline_ms))
					continue;
				return false;
			}
		}
		p += n;
		len -= (size_t) n;
	}
	return true;
}

/* recv_some reads what has come, waiting until the deadline; 0 when the server closed. */
static ssize_t
recv_some(struct RedisConn *c, char *buf, size_t len, long long deadline_ms)
{
	for (;;) {
		ssize_t n;

		if (c->ssl != NULL) {
			int rc, e;

			ERR_clear_error();
			errno = 0;
			rc = SSL_read(c->ssl, buf, (int) len);
			if (rc > 0)
				return rc;
			e = SSL_get_error(c->ssl, rc);
			/* closed, with close_notify or (a server that just went away) without */
			if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0))
				return 0;
			if (tls_step(c, rc, deadline_ms) < 0)
				return -1;
			continue;
		}
		n = recv(c->fd, buf, len, 0);
		if (n >= 0)
			return n;
		if ((errno != EAGAIN && errno != EINTR) || !wait_fd(c->fd, POLLIN, deadline_ms))
			return -1;
	}
}

/* read_reply feeds the reader until it has one reply. */
static bool
read_reply(struct RedisConn *c, long long deadline_ms, redisReply **reply, char *err, size_t errlen)
{
	char buf[16384];
	void *r = NULL;

	for (;;) {
		ssize_t n;

		if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
			snprintf(err, errlen, "bad reply from the server: %s", c->reader->errstr);
			return false;
		}
		if (r != NULL) {
			*reply = r;
			return true;
		}
		if (c->reader->len - c->reader->pos > REDIS_REPLY_MAX) {
			snprintf(err, errlen, "the server's reply is larger than %d bytes", REDIS_REPLY_MAX);
			return false;
		}
		n = recv_some(c, buf, sizeof buf, deadline_ms);
		if (n <= 0) {
			snprintf(err, errlen, "%s",
					 n == 0               ? "the server closed the connection"
					 : errno == ETIMEDOUT ? "no reply before the timeout"
										  : strerror(errno));
			return false;
		}
		if (redisReaderFeed(c->reader, buf, (size_t) n) != REDIS_OK) {
			snprintf(err, errlen, "out of memory reading a reply");
			return false;
		}
	}
}

enum RedisIo
redis_conn_send(struct RedisConn *c, const char *data, size_t len, long long deadline_ms, char *err,
				size_t errlen)
{
	if (send_all(c, data, len, deadline_ms))
		return RIO_OK;
	snprintf(err, errlen, "cannot send to the server: %s",
			 errno == ETIMEDOUT ? "timed out" : strerror(errno));
	/* part of it may have gone out: whether the server ran it is unknown */
	return RIO_SENT_LOST;
}

enum RedisIo
redis_conn_read(struct RedisConn *c, long long deadline_ms, redisReply **reply, char *err, size_t errlen)
{
	*reply = NULL;
	return read_reply(c, deadline_ms, reply, err, errlen) ? RIO_OK : RIO_SENT_LOST;
}

enum RedisIo
redis_conn_command(struct RedisConn *c, int argc, const char **argv, const size_t *lens,
				   long long deadline_ms, redisReply **reply, char *err, size_t errlen)
{
	char *cmd = NULL;
	int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
	enum RedisIo io;

	*reply = NULL;
	if (len < 0) {
		snprintf(err, errlen, "out of memory formatting a command");
		return RIO_UNSENT;
	}
	io = redis_conn_send(c, cmd, (size_t) len, deadline_ms, err, errlen);
	redisFreeCommand(cmd);
	if (io != RIO_OK)
		return io;
	return redis_conn_read(c, deadline_ms, reply, err, errlen);
}

/* conn_key is what identifies a's connection; NULL when out of memory. */
static char *
conn_key(const struct RedisAddress *a)
{
	char *key = NULL;

	const char *ca = a->ca_file ? a->ca_file : "", *user = a->user ? a->user : "";
	const char *pw = a->password ? a->password : "";

	/* each text with its length first, so that no two addresses make the same key */
	if (asprintf(&key, "%zu:%s %d %d %zu:%s %zu:%s %zu:%s", strlen(a->host), a->host, a->port, a->tls,
				 strlen(ca), ca, strlen(user), user, strlen(pw), pw) < 0)
		return NULL;
	return key;
}

bool
redis_conn_same(const struct RedisConn *c, const struct RedisAddress *a)
{
	char *key = conn_key(a);
	bool same = key != NULL && strcmp(key, c->key) == 0;

	free(key);
	return same;
}

/* authenticate sends AUTH [user] password; false with the server's refusal in err. */
static bool
authenticate(struct RedisConn *c, const struct RedisAddress *a, long long deadline_ms, enum RedisIo *io,
			 char *err, size_t errlen)
{
	const char *argv[3] = {"AUTH", a->user ? a->user : a->password, a->password};
	size_t lens[3] = {4, strlen(argv[1]), strlen(a->password)};
	redisReply *r;

	*io = redis_conn_command(c, a->user ? 3 : 2, argv, lens, deadline_ms, &r, err, errlen);
	if (*io != RIO_OK) {
		*io = RIO_CONNECT;
		return false;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		/* the server's words: they never hold the password */
		snprintf(err, errlen, "AUTH refused: %.*s", (int) (r->len > 200 ? 200 : r->len), r->str);
		*io = RIO_AUTH;
		freeReplyObject(r);
		return false;
	}
	freeReplyObject(r);
	return true;
}

struct RedisConn *
redis_conn_open(const struct RedisAddress *a, long long deadline_ms, enum RedisIo *io, char *err,
				size_t errlen)
{
	struct RedisConn *c = calloc(1, sizeof *c);

	*io = RIO_CONNECT;
	if (c != NULL)
		c->fd = -1;
	if (c == NULL || (c->key = conn_key(a)) == NULL || (c->reader = redisReaderCreate()) == NULL) {
		snprintf(err, errlen, "out of memory");
		redis_conn_close(c);
		return NULL;
	}
	c->fd = connect_tcp(a, deadline_ms, err, errlen);
	if (c->fd < 0 || (a->tls && !tls_start(c, a, deadline_ms, io, err, errlen)) ||
		(a->password != NULL && !authenticate(c, a, deadline_ms, io, err, errlen))) {
		redis_conn_close(c);
		return NULL;
	}
	*io = RIO_OK;
	return c;
}

void
redis_conn_close(struct RedisConn *c)
{
	if (c == NULL)
		return;
	if (c->ssl != NULL)
		SSL_free(c->ssl); /* no close_notify: the socket may be broken, and nothing waits for it */
	SSL_CTX_free(c->ctx);
	if (c->fd >= 0)
		close(c->fd);
	if (c->reader != NULL)
		redisReaderFree(c->reader);
	if (c->key != NULL) {
		explicit_bzero(c->key, strlen(c->key));
		free(c->key);
	}
	free(c);
}
