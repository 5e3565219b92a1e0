/*
 * test_rmq_conn.c - the broker's close codes classified: what passes (a locked resource, a forced
 * close, the broker's own trouble) is retried, what the settings or the broker's set-up cause
 * (a refused login or permission, a missing exchange, a virtual host not allowed) is a
 * configuration error. The write guard: a write that waits on a full socket, as rabbitmq-c's does
 * (poll with no deadline), ends once the guard's deadline passes; one disarmed in time is left be,
 * also after a cut and by a guard stopped while armed; a disarm racing the deadline says truly
 * whether the socket was shut down; the guard's thread reserves a small stack.
 */
#include <amqp.h>
#include <amqp_framing.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include "clock.h"
#include "rmq_conn.h"
#include "unit.h"

/* full_pair makes a connected socket pair whose end fd[0] is non-blocking and has a full buffer. */
static bool
full_pair(int fd[2])
{
	static const char chunk[4096];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0)
		return false;
	if (fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) | O_NONBLOCK) != 0)
		return false;
	while (send(fd[0], chunk, sizeof chunk, MSG_NOSIGNAL) > 0)
		;
	return errno == EAGAIN || errno == EWOULDBLOCK;
}

static void
test_the_guard_ends_a_write_that_outlasts_its_deadline(void)
{
	struct RmqGuard g;
	struct pollfd p;
	int fd[2];

	CHECK(full_pair(fd));
	CHECK(rmq_guard_start(&g));
	rmq_guard_arm(&g, fd[0], now_us() / 1000 + 20);
	p.fd = fd[0];
	p.events = POLLOUT;
	/* the reader never reads: only the guard ends this wait (the bound is for a broken guard) */
	CHECK(poll(&p, 1, 60000) == 1);
	CHECK(send(fd[0], "x", 1, MSG_NOSIGNAL) < 0 && errno == EPIPE);
	CHECK(rmq_guard_disarm(&g));
	rmq_guard_stop(&g);
	close(fd[0]);
	close(fd[1]);
}

static void
test_a_guard_disarmed_in_time_leaves_the_socket_be(void)
{
	struct RmqGuard g;
	char buf[4096];
	int fd[2];

	CHECK(full_pair(fd));
	CHECK(rmq_guard_start(&g));
	rmq_guard_arm(&g, fd[0], now_us() / 1000 + 3600 * 1000);
	CHECK(!rmq_guard_disarm(&g));
	rmq_guard_stop(&g);
	/* room made by the reader: the socket still writes */
	CHECK(recv(fd[1], buf, sizeof buf, 0) > 0);
	CHECK(send(fd[0], "x", 1, MSG_NOSIGNAL) == 1);
	close(fd[0]);
	close(fd[1]);
}

/* cut_now arms g on fd with a deadline already passed and waits until the guard has shut fd down. */
static bool
cut_now(struct RmqGuard *g, int fd)
{
	struct pollfd p = {fd, POLLOUT, 0};

	rmq_guard_arm(g, fd, now_us() / 1000 - 1);
	/* fd's buffer is full and its reader never reads: only the guard ends this wait */
	return poll(&p, 1, 60000) == 1 && rmq_guard_disarm(g);
}

/* writable says whether fd still writes once its reader (peer) made room: false when shut down. */
static bool
writable(int fd, int peer)
{
	char buf[4096];

	return recv(peer, buf, sizeof buf, 0) > 0 && send(fd, "x", 1, MSG_NOSIGNAL) == 1;
}

static void
test_a_guard_that_cut_is_armed_afresh(void)
{
	struct RmqGuard g;
	int a[2], b[2];

	CHECK(full_pair(a));
	CHECK(full_pair(b));
	CHECK(rmq_guard_start(&g));
	CHECK(cut_now(&g, a[0]));
	/* the next write's guard starts uncut, and a disarm in time leaves its socket be */
	rmq_guard_arm(&g, b[0], now_us() / 1000 + 3600 * 1000);
	CHECK(!rmq_guard_disarm(&g));
	rmq_guard_stop(&g);
	CHECK(writable(b[0], b[1]));
	CHECK(!writable(a[0], a[1]));
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

/*
 * A disarm that races the deadline: whichever wins, its answer is the truth, and after it the
 * guard never shuts the socket down. A second write cut afterwards proves the guard went round its
 * loop past the first deadline.
 */
static void
test_a_disarm_racing_the_deadline_says_what_happened(void)
{
	struct RmqGuard g;
	int a[2], b[2], i, cuts = 0;
	bool cut;

	CHECK(rmq_guard_start(&g));
	for (i = 0; i < 200; i++) {
		CHECK(full_pair(a));
		CHECK(full_pair(b));
		rmq_guard_arm(&g, a[0], now_us() / 1000 - 1);
		cut = rmq_guard_disarm(&g);
		cuts += cut;
		CHECK(cut_now(&g, b[0]));
		CHECK(writable(a[0], a[1]) == !cut);
		close(a[0]);
		close(a[1]);
		close(b[0]);
		close(b[1]);
	}
	rmq_guard_stop(&g);
	printf("# %d of 200 disarms came after the cut\n", cuts);
}

static void
test_a_guard_stopped_while_armed_leaves_the_socket_be(void)
{
	struct RmqGuard g;
	int fd[2];

	CHECK(full_pair(fd));
	CHECK(rmq_guard_start(&g));
	/* a connection closed with a write armed: the stop ends the guard without waiting for the deadline */
	rmq_guard_arm(&g, fd[0], now_us() / 1000 + 3600 * 1000);
	rmq_guard_stop(&g);
	CHECK(writable(fd[0], fd[1]));
	close(fd[0]);
	close(fd[1]);
}

static void
test_a_guard_reserves_a_small_stack(void)
{
	struct RmqGuard g;
	pthread_attr_t at;
	size_t size = 0;

	CHECK(rmq_guard_start(&g));
	CHECK(pthread_getattr_np(g.thread, &at) == 0);
	CHECK(pthread_attr_getstacksize(&at, &size) == 0);
	/* RMQ_GUARD_STACK, not the default 8 MiB (ThreadSanitizer adds some of its own) */
	CHECK(size >= RMQ_GUARD_STACK && size < (size_t) 1 << 20);
	pthread_attr_destroy(&at);
	rmq_guard_stop(&g);
}

static void
test_close_codes_are_classified(void)
{
	static const struct {
		int code;
		enum RmqIo want;
	} cases[] = {
		{AMQP_RESOURCE_LOCKED, QIO_REFUSED}, {AMQP_CONNECTION_FORCED, QIO_REFUSED},
		{AMQP_INTERNAL_ERROR, QIO_REFUSED},  {AMQP_RESOURCE_ERROR, QIO_REFUSED},
		{AMQP_ACCESS_REFUSED, QIO_SETUP},    {AMQP_NOT_FOUND, QIO_SETUP},
		{AMQP_NOT_ALLOWED, QIO_SETUP},       {AMQP_PRECONDITION_FAILED, QIO_SETUP},
		{AMQP_COMMAND_INVALID, QIO_SETUP},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK(rmq_close_io(cases[i].code) == cases[i].want);
}

int
main(void)
{
	RUN(test_close_codes_are_classified);
	RUN(test_the_guard_ends_a_write_that_outlasts_its_deadline);
	RUN(test_a_guard_disarmed_in_time_leaves_the_socket_be);
	RUN(test_a_guard_that_cut_is_armed_afresh);
	RUN(test_a_disarm_racing_the_deadline_says_what_happened);
	RUN(test_a_guard_stopped_while_armed_leaves_the_socket_be);
	RUN(test_a_guard_reserves_a_small_stack);
	return UNIT_DONE();
}
