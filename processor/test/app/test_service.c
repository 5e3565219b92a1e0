/*
 * test_service.c - the systemd notifications: what is sent when, to a datagram socket standing in
 * for systemd's NOTIFY_SOCKET; the status line; the watchdog interval and how it bounds a sleep;
 * nothing at all without NOTIFY_SOCKET.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "service.h"
#include "unit.h"

static int sock = -1;
static char path[108];

/* listen_notify binds a datagram socket and points NOTIFY_SOCKET at it. */
static void
listen_notify(void)
{
	struct sockaddr_un sa;

	snprintf(path, sizeof path, "/tmp/pgrelay-test-notify-%ld", (long) getpid());
	unlink(path);
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	if (sock < 0 || bind(sock, (struct sockaddr *) &sa, sizeof sa) != 0) {
		perror("notify socket");
		exit(1);
	}
	setenv("NOTIFY_SOCKET", path, 1);
}

static void
close_notify(void)
{
	unsetenv("NOTIFY_SOCKET");
	close(sock);
	unlink(path);
	sock = -1;
}

/* next_message returns the next datagram waiting (static), or NULL when there is none. */
static const char *
next_message(void)
{
	static char buf[512];
	ssize_t n;

	n = recv(sock, buf, sizeof buf - 1, MSG_DONTWAIT);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static void
test_status_text(void)
{
	static const struct {
		bool connected;
		struct PoolCounts c;
		const char *want;
	} cases[] = {
		{true, {0, 0, 4, 0}, "idle"},
		{true, {0, 3, 1, 0}, "draining, 3 in flight"},
		{true, {7, 4, 0, 0}, "draining, 4 in flight, 7 queued"},
		{true, {0, 0, 4, 2}, "idle"},
		{false, {0, 0, 0, 0}, "waiting for the database, 0 in flight"},
		{false, {0, 2, 0, 0}, "waiting for the database, 2 in flight"},
	};
	char buf[128];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		service_status_text(buf, sizeof buf, cases[i].connected, &cases[i].c);
		CHECK_STR(buf, cases[i].want);
	}
}

static void
test_without_notify_socket_nothing_happens(void)
{
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	service_init();
	CHECK(service_watchdog_interval_us() == 0);
	service_ready();
	service_reloading();
	service_reloaded();
	CHECK(service_loop(1234, true) == 1234);
	CHECK(service_loop(0, false) == 0);
	service_stopping(0);
}

static void
test_messages_in_order(void)
{
	const char *m;

	listen_notify();
	unsetenv("WATCHDOG_USEC");
	service_init();
	service_ready();
	CHECK_STR(next_message(), "READY=1\nSTATUS=idle");
	CHECK(service_loop(500, true) == 500); /* same status: nothing sent */
	CHECK(next_message() == NULL);
	CHECK(service_loop(500, false) == 500); /* a new first word: sent at once */
	CHECK_STR(next_message(), "STATUS=waiting for the database, 0 in flight");
	service_reloading();
	m = next_message();
	CHECK(m != NULL && strncmp(m, "RELOADING=1\nMONOTONIC_USEC=", 27) == 0);
	service_reloaded();
	CHECK_STR(next_message(), "READY=1");
	service_stopping(3);
	CHECK_STR(next_message(), "STOPPING=1\nSTATUS=stopping, 3 in flight");
	CHECK(next_message() == NULL);
	close_notify();
}

static void
test_watchdog(void)
{
	char pid[32];
	long w;
	const char *m;

	listen_notify();
	snprintf(pid, sizeof pid, "%ld", (long) getpid());
	setenv("WATCHDOG_USEC", "2000000", 1);
	setenv("WATCHDOG_PID", pid, 1);
	service_init();
	CHECK(service_watchdog_interval_us() == 1000000); /* pinged at half the interval */
	w = service_loop(60000, true);
	m = next_message();
	CHECK(m != NULL && strncmp(m, "WATCHDOG=1\n", 11) == 0);
	CHECK(w > 0 && w <= 1000); /* a long sleep is cut short so that the next ping is on time */
	CHECK(service_loop(0, true) == 0);
	m = next_message();
	CHECK(m == NULL); /* not due again yet, and the status is unchanged */

	/* WATCHDOG_PID names another process: the watchdog is not ours. */
	setenv("WATCHDOG_PID", "1", 1);
	service_init();
	CHECK(service_watchdog_interval_us() == 0);
	/* an interval that is not a number of microseconds is no watchdog */
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "2s", 1);
	service_init();
	CHECK(service_watchdog_interval_us() == 0);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	close_notify();
}

/* An abstract socket (NOTIFY_SOCKET=@name, as systemd may pass): its name has no NUL and no file. */
static void
test_abstract_socket(void)
{
	struct sockaddr_un sa;
	char name[64], recvbuf[64];
	int fd;
	ssize_t n;
	socklen_t len;

	snprintf(name, sizeof name, "@pgrelay-test-notify-%ld", (long) getpid());
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name + 1, strlen(name) - 1);
	len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + strlen(name));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *) &sa, len) == 0);
	setenv("NOTIFY_SOCKET", name, 1);
	service_init();
	service_ready();
	n = recv(fd, recvbuf, sizeof recvbuf - 1, MSG_DONTWAIT);
	recvbuf[n > 0 ? n : 0] = '\0';
	CHECK_STR(recvbuf, "READY=1\nSTATUS=idle");
	unsetenv("NOTIFY_SOCKET");
	close(fd);
}

static void
notify_nowhere(void)
{
	service_init();
	service_ready();
	service_stopping(0);
}

static void
test_unreachable_socket_is_logged_once(void)
{
	const char *out, *first;

	setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
	out = unit_capture(notify_nowhere); /* the Processor carries on */
	first = strstr(out, " warn notify_failed error=\"No such file or directory\"");
	CHECK(first != NULL);
	CHECK(first == NULL || strstr(first + 20, "notify_failed") == NULL);
	unsetenv("NOTIFY_SOCKET");
}

int
main(void)
{
	RUN(test_status_text);
	RUN(test_without_notify_socket_nothing_happens);
	RUN(test_messages_in_order);
	RUN(test_watchdog);
	RUN(test_abstract_socket);
	RUN(test_unreachable_socket_is_logged_once);
	return UNIT_DONE();
}
