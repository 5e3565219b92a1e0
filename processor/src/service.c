/*
 * service.c - the systemd notification protocol (sd_notify): READY=1 once started, RELOADING=1
 * and READY=1 around a reload, STOPPING=1, a STATUS= line, and WATCHDOG=1 from the main loop.
 * Only the main thread calls these.
 */
#include "service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "clock.h"
#include "log.h"

static struct {
	long long watchdog_us;    /* time between two pings: half of WATCHDOG_USEC; 0 without one */
	long long next_ping_us;   /* when the next ping is due (now_us clock) */
	char status[128];         /* the last STATUS= sent, to send only changes */
	long long next_status_us; /* a change of counts only is sent from then on (once a second) */
	bool warned;              /* a failed notification was logged (once) */
} svc;

/* notify sends one message; a failure is logged once, as systemd will act on the silence. */
static void
notify(const char *msg)
{
	int r = sd_notify(0, msg);

	if (r < 0 && !svc.warned) {
		svc.warned = true;
		log_warn("notify_failed", LOG_STR("error", strerror(-r)));
	}
}

void
service_init(void)
{
	uint64_t usec = 0;

	memset(&svc, 0, sizeof svc);
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
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

/* send_with_status sends head (may be empty) followed by STATUS=text. */
static void
send_with_status(const char *head, const char *text)
{
	char msg[256];

	svc.next_status_us = now_us() + 1000000;
	snprintf(svc.status, sizeof svc.status, "%s", text);
	snprintf(msg, sizeof msg, "%s%sSTATUS=%s", head, *head ? "\n" : "", text);
	notify(msg);
}

void
service_ready(void)
{
	send_with_status("READY=1", "idle");
}

void
service_reloading(void)
{
	char msg[64];

	snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%lld", now_us());
	notify(msg);
}

void
service_reloaded(void)
{
	notify("READY=1");
}

void
service_stopping(int in_flight)
{
	char text[64];

	snprintf(text, sizeof text, "stopping, %d in flight", in_flight);
	send_with_status("STOPPING=1", text);
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
		send_with_status(head, text);
	else if (*head)
		notify(head);
	if (svc.watchdog_us > 0) {
		left_ms = (svc.next_ping_us - now + 999) / 1000;
		if (wait_ms > left_ms)
			wait_ms = (long) left_ms;
	}
	return wait_ms;
}
