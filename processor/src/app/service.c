/*
 * service.c - the systemd notification protocol (sd_notify): READY=1 once started, RELOADING=1
 * and READY=1 around a reload, STOPPING=1, a STATUS= line, and WATCHDOG=1 from the main loop.
 * Only the main thread calls these. The protocol is one datagram per message to the socket
 * NOTIFY_SOCKET names, spoken here rather than through libsystemd: linking libsystemd maps it
 * and five more libraries into every Processor (about 1 MB of its memory) for two functions.
 *
 * A datagram socket's queue is short (net.unix.max_dgram_qlen, 10 by default): when the reader
 * falls behind, a blocking send waits until it reads. The main loop must never wait for that, so
 * the periodic messages (WATCHDOG=1, STATUS=) are sent without waiting, and a full queue drops
 * them (the next follows in half the watchdog interval); a change of state (READY=1, RELOADING=1,
 * STOPPING=1) waits up to NOTIFY_WAIT_MS for room.
 */
#include "service.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define NOTIFY_WAIT_MS 1000

static struct {
	long long watchdog_us;    /* time between two pings: half of WATCHDOG_USEC; 0 without one */
	long long next_ping_us;   /* when the next ping is due (now_us clock) */
	char status[128];         /* the last STATUS= sent, to send only changes */
	long long next_status_us; /* a change of counts only is sent from then on (once a second) */
	bool warned;              /* a failed notification was logged (once) */
} svc;

/*
 * send_datagram sends msg to the socket NOTIFY_SOCKET names: a path, or an abstract socket when it
 * starts with '@'; waiting up to wait_ms for room in its queue (0: not at all). Returns 1 when
 * sent, 0 when NOTIFY_SOCKET is not set, -errno on failure (-EAGAIN: the queue stayed full).
 */
static int
send_datagram(const char *msg, long wait_ms)
{
	struct timeval tv = {.tv_sec = wait_ms / 1000, .tv_usec = (wait_ms % 1000) * 1000};
	long long deadline = now_us() + wait_ms * 1000LL;
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	size_t len;
	int fd, r = 1;

	if (name == NULL || name[0] == '\0')
		return 0;
	len = strlen(name);
	if ((name[0] != '/' && name[0] != '@') || len >= sizeof sa.sun_path)
		return -EAFNOSUPPORT;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, name, len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0'; /* an abstract name is not NUL-terminated: its length says where it ends */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (wait_ms > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
		r = -errno;
		close(fd);
		return r;
	}
	/* a signal (SIGHUP, SIGTERM) that interrupts the wait does not lose the message */
	while (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL | (wait_ms > 0 ? 0 : MSG_DONTWAIT),
				  (struct sockaddr *) &sa,
				  (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len + (name[0] == '/'))) < 0) {
		r = -errno;
		if (r != -EINTR || now_us() >= deadline)
			break;
		r = 1;
	}
	close(fd);
	return r;
}

/*
 * watchdog_usec is the watchdog interval systemd asks for (WATCHDOG_USEC), when it asks this
 * process (WATCHDOG_PID, when set, is ours); 0 without one.
 */
static uint64_t
watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (usec == NULL || (pid != NULL && strtol(pid, NULL, 10) != (long) getpid()))
		return 0;
	errno = 0;
	v = strtoull(usec, &end, 10);
	if (errno != 0 || end == usec || *end != '\0')
		return 0;
	return (uint64_t) v;
}

/*
 * notify sends one message, waiting up to wait_ms for room (a change of state) or not at all (a
 * periodic one, dropped when the queue is full: not a failure). A failure is logged once, as
 * systemd will act on the silence.
 */
static void
notify(const char *msg, long wait_ms)
{
	int r = send_datagram(msg, wait_ms);

	if (r == -EAGAIN && wait_ms == 0)
		return;
	if (r < 0 && !svc.warned) {
		svc.warned = true;
		log_warn("notify_failed", LOG_STR("error", strerror(-r)));
	}
}

void
service_init(void)
{
	uint64_t usec = watchdog_usec();

	memset(&svc, 0, sizeof svc);
	if (usec > 0) {
		svc.watchdog_us = (long long) (usec / 2);
		svc.next_ping_us = now_us();
	}
}

long long
service_watchdog_interval_us(void)
{
	return svc.watchdog_us;
}

void
service_status_text(char *buf, size_t len, bool connected, const struct PoolCounts *c)
{
	if (!connected)
		snprintf(buf, len, "waiting for the database, %d in flight", c->in_flight);
	else if (c->in_flight + c->queued == 0)
		snprintf(buf, len, "idle");
	else if (c->queued == 0)
		snprintf(buf, len, "draining, %d in flight", c->in_flight);
	else
		snprintf(buf, len, "draining, %d in flight, %d queued", c->in_flight, c->queued);
}

/* send_with_status sends head (may be empty) followed by STATUS=text, waiting up to wait_ms. */
static void
send_with_status(const char *head, const char *text, long wait_ms)
{
	char msg[256];

	svc.next_status_us = now_us() + 1000000;
	snprintf(svc.status, sizeof svc.status, "%s", text);
	snprintf(msg, sizeof msg, "%s%sSTATUS=%s", head, *head ? "\n" : "", text);
	notify(msg, wait_ms);
}

void
service_ready(void)
{
	send_with_status("READY=1", "idle", NOTIFY_WAIT_MS);
}

void
service_reloading(void)
{
	char msg[64];

	snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%lld", now_us());
	notify(msg, NOTIFY_WAIT_MS);
}

void
service_reloaded(void)
{
	notify("READY=1", NOTIFY_WAIT_MS);
}

void
service_stopping(int in_flight)
{
	char text[64];

	snprintf(text, sizeof text, "stopping, %d in flight", in_flight);
	send_with_status("STOPPING=1", text, NOTIFY_WAIT_MS);
}

/*
 * status_due: a new status is sent at once when its first word changes (idle, draining, waiting),
 * and otherwise at most once a second, so that a busy drain does not send one message per event.
 */
static bool
status_due(const char *text, long long now)
{
	size_t a = strcspn(text, " ,"), b = strcspn(svc.status, " ,");

	if (strcmp(text, svc.status) == 0)
		return false;
	return a != b || strncmp(text, svc.status, a) != 0 || now >= svc.next_status_us;
}

long
service_loop(long wait_ms, bool connected)
{
	struct PoolCounts c;
	char text[sizeof svc.status];
	const char *head = "";
	long long now = now_us(), left_ms;

	pool_counts(&c);
	service_status_text(text, sizeof text, connected, &c);
	if (svc.watchdog_us > 0 && now >= svc.next_ping_us) {
		head = "WATCHDOG=1";
		svc.next_ping_us = now + svc.watchdog_us;
	}
	if (status_due(text, now))
		send_with_status(head, text, 0);
	else if (*head)
		notify(head, 0);
	if (svc.watchdog_us > 0) {
		left_ms = (svc.next_ping_us - now + 999) / 1000;
		if (wait_ms > left_ms)
			wait_ms = (long) left_ms;
	}
	return wait_ms;
}
