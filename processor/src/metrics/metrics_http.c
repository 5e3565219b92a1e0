/*
 * metrics_http.c - GET /metrics over HTTP, with libmicrohttpd: one thread of its own polls the
 * listening socket and its connections, so a scrape never waits on the main loop's sleep and never
 * blocks a worker. Everything but GET (or HEAD) /metrics is answered 404.
 */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "hostport.h"
#include "log.h"
#include "metrics.h"
#include "mhd.h"

/* How long a scrape waits for the main loop to read the queue figures (then it serves the last). */
#define SCRAPE_WAIT_MS 1000

static struct MHD_Daemon *daemon_;
static char last_message[512]; /* libmicrohttpd's last complaint: why a start failed */

/* describe writes the address a listening socket is bound to as HOST:PORT. */
static void
describe(int fd, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char host[INET6_ADDRSTRLEN];

	snprintf(out, outlen, "?");
	if (getsockname(fd, (struct sockaddr *) &ss, &len) != 0)
		return;
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *) &ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		snprintf(out, outlen, "[%s]:%d", host, ntohs(a->sin6_port));
	} else if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *) &ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		snprintf(out, outlen, "%s:%d", host, ntohs(a->sin_port));
	}
}

/* reply queues a response of body (copied by reference if static, else freed by libmicrohttpd). */
static enum MHD_Result
reply(struct MHD_Connection *c, unsigned int status, char *body, size_t len, bool owned)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
							status == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
												  : "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* answer serves one request: the metrics for GET (or HEAD) /metrics, 404 for anything else. */
static enum MHD_Result
answer(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
	   const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	static char not_found[] = "not found: pg_relay serves GET /metrics only\n";
	static char failed[] = "out of memory\n";
	struct Buf b = BUF_INIT;
	size_t len;

	(void) cls;
	(void) version;
	(void) upload_data;
	(void) upload_data_size;
	(void) req_cls;
	if ((strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) || strcmp(url, "/metrics") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, not_found, sizeof not_found - 1, false);
	metrics_scrape_begin(SCRAPE_WAIT_MS);
	metrics_render(&b);
	if (b.oom || b.data == NULL) {
		buf_free(&b);
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, sizeof failed - 1, false);
	}
	len = b.len;
	return reply(c, MHD_HTTP_OK, buf_steal(&b), len, true);
}

/* mhd_log turns libmicrohttpd's messages (a client that went away, ...) into debug lines. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void) cls;
	mhd_message_line(last_message, sizeof last_message, fmt, ap);
	log_debug("metrics_http", LOG_STR("message", last_message));
}

bool
metrics_http_start(const char *addr, char *bound, size_t boundlen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	sigset_t all, old;
	const union MHD_DaemonInfo *info;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;

	last_message[0] = '\0';
	if (!hostport_resolve(addr, &ss, &sslen, err, errlen))
		return false;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* Its thread inherits this thread's signal mask: only the main thread handles signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	daemon_ = MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR,
							   (struct sockaddr *) &ss, MHD_OPTION_CONNECTION_LIMIT, 8U,
							   MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
							   (size_t) 16384, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void) sslen;
	if (daemon_ == NULL) {
		snprintf(err, errlen, "cannot listen on %s: %s", addr, mhd_failure(last_message));
		return false;
	}
	info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_LISTEN_FD);
	if (info != NULL)
		describe(info->listen_fd, bound, boundlen);
	else
		snprintf(bound, boundlen, "%s", addr);
	return true;
}

void
metrics_http_stop(void)
{
	if (daemon_ != NULL)
		MHD_stop_daemon(daemon_);
	daemon_ = NULL;
}
