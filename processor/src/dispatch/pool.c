/*
 * pool.c - the worker threads, a slot each (thread, state, jobs, settings), and the job hand-over
 * between them and the main thread. Each thread runs its slot's worker (worker.c).
 *
 * Note that there is no barrier between rounds: the main thread submits the ids of one fetch, and
 * each worker takes the next job as soon as it is free. A slow event occupies one worker; the
 * others keep taking jobs, and the main thread fetches more as soon as the queue is empty and a
 * worker is idle (tick.c).
 */
#include "pool.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "clock.h"
#include "kafka_kind.h"
#include "log.h"
#include "worker.h"

/* One worker thread's slot: what the pool keeps about it; the worker keeps the rest (worker.c). */
struct Slot {
	int no; /* 1..workers */
	pthread_t thread;
	bool started;                   /* the thread exists (join it) */
	atomic_int state;               /* enum WorkerState: set by the worker, read by the main thread */
	atomic_llong down_since;        /* when its connection attempts began to fail (now_us); 0: they do not */
	struct WorkerSettings settings; /* copy taken with the current jobs */
	struct Job *jobs;               /* the events being run, NULL when none (guarded by the pool lock) */
	struct Worker *worker;          /* its connection, transports and leadership */
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;                 /* workers wait here for a job or for stop */
	struct Job *head, *tail;           /* submitted, not taken */
	struct Job *done_head, *done_tail; /* finished, not collected */
	int queued, in_flight, idle, done;
	bool stopping;
	int wake_fd; /* eventfd: the main thread sleeps on it */
	struct Slot *slots;
	int n;
	char *conninfo;
	struct WorkerSettings settings;
	int leader;             /* leader mode: 1 this node leads, 0 it does not; -1 in the other modes */
	long long leader_at_us; /* when the control connection last decided it (now_us) */
} pool = {PTHREAD_MUTEX_INITIALIZER,
		  PTHREAD_COND_INITIALIZER,
		  NULL,
		  NULL,
		  NULL,
		  NULL,
		  0,
		  0,
		  0,
		  0,
		  false,
		  -1,
		  NULL,
		  0,
		  NULL,
		  {{0}, {0}, 0, 0, 0, 0},
		  -1,
		  0};

static bool stopping(void);
static void *slot_main(void *arg);

bool
pool_start(int nworkers, const char *conninfo, const char *mode, const struct WorkerSettings *ws)
{
	sigset_t all, old;
	int i;

	pool.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pool.wake_fd < 0)
		return false;
	pool.conninfo = conninfo ? strdup(conninfo) : NULL;
	pool.settings = *ws;
	pool.slots = calloc((size_t) nworkers, sizeof *pool.slots);
	if (pool.slots == NULL)
		return false;
	pool.n = nworkers;
	for (i = 0; i < nworkers; i++) {
		struct Slot *s = &pool.slots[i];

		s->no = i + 1;
		atomic_store(&s->state, W_STARTING);
		s->worker =
			worker_new(s->no, pool.conninfo, mode, (struct WorkerLink){&s->state, stopping, pool_leader});
		if (s->worker == NULL)
			return false;
	}

	/* Workers block every signal: only the main thread handles them. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < nworkers; i++) {
		struct Slot *s = &pool.slots[i];

		if (pthread_create(&s->thread, NULL, slot_main, s) != 0) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			return false;
		}
		s->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return true;
}

void
pool_update_settings(const struct WorkerSettings *ws)
{
	pthread_mutex_lock(&pool.mu);
	pool.settings = *ws;
	pthread_mutex_unlock(&pool.mu);
}

/* settings copies the current settings (a reload changes them). */
static void
settings(struct WorkerSettings *out)
{
	pthread_mutex_lock(&pool.mu);
	*out = pool.settings;
	pthread_mutex_unlock(&pool.mu);
}

void
pool_wake(void)
{
	uint64_t one = 1;

	/* Only async-signal-safe calls here; a full counter already means "wake up". */
	if (write(pool.wake_fd, &one, sizeof one) < 0) {
	}
}

/* in_flight_id: is a worker running the event id right now? Called with pool.mu held. */
static bool
in_flight_id(long long id)
{
	const struct Job *j;
	int i;

	for (i = 0; i < pool.n; i++)
		for (j = pool.slots[i].jobs; j; j = j->next)
			if (j->id == id)
				return true;
	return false;
}

int
pool_submit(struct Job *jobs)
{
	int n = 0;
	struct Job *j, *next, *head = NULL, *last = NULL;

	pthread_mutex_lock(&pool.mu);
	/*
	 * The fetch takes no row locks (the claim is the one an event takes), so it returns the
	 * events this Processor's workers are running, whether or not they have claimed them yet:
	 * drop such twins here rather than have a second worker skip them.
	 */
	for (j = jobs; j; j = next) {
		next = j->next;
		j->next = NULL;
		if (in_flight_id(j->id)) {
			job_free(j);
			continue;
		}
		if (last)
			last->next = j;
		else
			head = j;
		last = j;
		n++;
	}
	if (head == NULL) {
		pthread_mutex_unlock(&pool.mu);
		return 0;
	}
	jobs = head;
	if (pool.tail)
		pool.tail->next = jobs;
	else
		pool.head = jobs;
	pool.tail = last;
	pool.queued += n;
	pthread_cond_broadcast(&pool.cv);
	pthread_mutex_unlock(&pool.mu);
	return n;
}

/* drop_queued frees the jobs not taken yet; called with pool.mu held. Returns how many. */
static int
drop_queued(void)
{
	int n = job_count(pool.head);

	job_free(pool.head);
	pool.head = pool.tail = NULL;
	pool.queued = 0;
	return n;
}

int
pool_drop_queued(void)
{
	int n;

	pthread_mutex_lock(&pool.mu);
	n = drop_queued();
	pthread_mutex_unlock(&pool.mu);
	return n;
}

int
pool_set_leader(bool leader)
{
	int n = 0;

	pthread_mutex_lock(&pool.mu);
	if (pool.leader == 1 && !leader)
		n = drop_queued();
	pool.leader = leader ? 1 : 0;
	pool.leader_at_us = now_us();
	pthread_mutex_unlock(&pool.mu);
	return n;
}

int
pool_leader(long long since_us)
{
	int v;

	pthread_mutex_lock(&pool.mu);
	v = pool.leader;
	/*
	 * A decision taken before the session opened rests on a control session that may be gone with
	 * the server that the worker's session found restarted: not leading until the next one.
	 */
	if (v == 1 && pool.leader_at_us < since_us)
		v = 0;
	pthread_mutex_unlock(&pool.mu);
	return v;
}

struct Job *
pool_collect(void)
{
	struct Job *list;

	pthread_mutex_lock(&pool.mu);
	list = pool.done_head;
	pool.done_head = pool.done_tail = NULL;
	pool.done = 0;
	pthread_mutex_unlock(&pool.mu);
	return list;
}

void
pool_counts(struct PoolCounts *out)
{
	pthread_mutex_lock(&pool.mu);
	out->queued = pool.queued;
	out->in_flight = pool.in_flight;
	out->idle = pool.idle;
	out->done = pool.done;
	pthread_mutex_unlock(&pool.mu);
}

int
pool_workers_missing(long for_ms)
{
	long long first = 0;
	int i, n = 0;

	for (i = 0; i < pool.n; i++) {
		long long down = atomic_load(&pool.slots[i].down_since);

		if (down == 0)
			continue;
		n++;
		if (first == 0 || down < first)
			first = down;
	}
	return n > 0 && first <= now_us() - for_ms * 1000LL ? n : 0;
}

/* stopping: has pool_stop begun? (the workers' WorkerLink) */
static bool
stopping(void)
{
	bool s;

	pthread_mutex_lock(&pool.mu);
	s = pool.stopping;
	pthread_mutex_unlock(&pool.mu);
	return s;
}

/*
 * take blocks until a job is available and returns the jobs the worker of slot s takes (one, or a
 * batch: batch.h), linked by next, with the settings they run under in s (NULL: stop).
 */
static struct Job *
take(struct Slot *s)
{
	struct Job *j = NULL;
	int n = 0;

	pthread_mutex_lock(&pool.mu);
	pool.idle++;
	atomic_store(&s->state, W_IDLE);
	/*
	 * Note that the main thread is only woken when it has something to decide: an idle worker
	 * and nothing queued (fetch more). Waking it for every event costs a context switch, and on
	 * a small VM the wake-up of an idle CPU, per event.
	 */
	if (pool.head == NULL)
		pool_wake();
	while (!pool.stopping && pool.head == NULL)
		pthread_cond_wait(&pool.cv, &pool.mu);
	if (!pool.stopping) {
		int max = worker_batch_max(s->worker, pool.settings.events_per_commit);
		int limit = batch_limit(max, pool.queued, pool.idle);

		j = batch_take(&pool.head, &pool.tail, limit, &n);
		pool.queued -= n;
		pool.in_flight += n;
		s->jobs = j;
		s->settings = pool.settings;
	}
	pool.idle--;
	pthread_mutex_unlock(&pool.mu);
	return j;
}

/* finish moves the jobs the worker of slot s ran to the finished list. */
static void
finish(struct Slot *s, struct Job *jobs)
{
	struct Job *last = jobs;
	bool wake;
	int n = 1;

	while (last->next) {
		last = last->next;
		n++;
	}
	pthread_mutex_lock(&pool.mu);
	s->jobs = NULL;
	if (pool.done_tail)
		pool.done_tail->next = jobs;
	else
		pool.done_head = jobs;
	pool.done_tail = last;
	pool.done += n;
	pool.in_flight -= n;
	wake = pool.queued == 0; /* otherwise the workers still have work and the loop nothing to do */
	pthread_mutex_unlock(&pool.mu);
	if (wake)
		pool_wake();
}

/* sleep_ms waits up to ms, returning early when the pool stops. */
static void
sleep_ms(long ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&pool.mu);
	while (!pool.stopping) {
		if (pthread_cond_timedwait(&pool.cv, &pool.mu, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&pool.mu);
}

void
pool_wait(long timeout_ms)
{
	struct pollfd pfd = {pool.wake_fd, POLLIN, 0};
	uint64_t v;

	if (timeout_ms < 0)
		timeout_ms = 0;
	if (timeout_ms > 60000)
		timeout_ms = 60000;
	/* Before pool_start there is no eventfd: a plain sleep, cut short by signals (no SA_RESTART). */
	if (poll(&pfd, pool.wake_fd >= 0 ? 1 : 0, (int) timeout_ms) > 0 && read(pool.wake_fd, &v, sizeof v) < 0) {
	}
}

/* wait_in_flight waits until nothing is in flight or the deadline (in microseconds) passes. */
static int
wait_in_flight(long long deadline_us)
{
	struct PoolCounts c;

	for (pool_counts(&c); c.in_flight > 0; pool_counts(&c)) {
		long long left = deadline_us - now_us();

		if (left <= 0)
			break;
		pool_wait(left / 1000 + 1);
	}
	return c.in_flight;
}

int
pool_stop(long timeout_ms)
{
	int i, left;

	pthread_mutex_lock(&pool.mu);
	pool.stopping = true;
	/* Events not yet taken hold no lock in the database: dropping them loses nothing. */
	drop_queued();
	pthread_cond_broadcast(&pool.cv);
	pthread_mutex_unlock(&pool.mu);

	left = wait_in_flight(now_us() + timeout_ms * 1000LL);
	if (left > 0) {
		log_warn("stopping", LOG_STR("reason", "shutdown_timeout"), LOG_INT("in_flight", left),
				 LOG_STR("action", "cancel"));
		for (i = 0; i < pool.n; i++) {
			int st = atomic_load(&pool.slots[i].state);

			if (st == W_SQL || st == W_NOTIFY || st == W_WEBHOOK || st == W_DESTINATION)
				worker_cancel(pool.slots[i].worker);
		}
		left = wait_in_flight(now_us() + 5000000LL);
	}
	for (i = 0; i < pool.n; i++) {
		struct Slot *s = &pool.slots[i];

		if (!s->started)
			continue;
		if (atomic_load(&s->state) == W_STOPPED || left == 0) {
			pthread_join(s->thread, NULL);
			s->started = false;
		}
	}
	return left;
}

void
pool_free(void)
{
	int i;

	job_free(pool_collect());
	for (i = 0; i < pool.n; i++)
		if (pool.slots[i].started)
			return; /* a worker is still stuck in a call: leave everything to process exit */
	for (i = 0; i < pool.n; i++)
		worker_free(pool.slots[i].worker);
	kafka_kind_shutdown(); /* the channels' producers, shared by the workers now gone */
	free(pool.slots);
	pool.slots = NULL;
	free(pool.conninfo);
	pool.conninfo = NULL;
	if (pool.wake_fd >= 0)
		close(pool.wake_fd);
	pool.wake_fd = -1;
}

/*
 * slot_main is a worker thread: it keeps the worker's connection up (waiting out the reconnect
 * backoff), takes jobs and has the worker run them, until the pool stops.
 */
static void *
slot_main(void *arg)
{
	struct Slot *s = arg;

	while (!stopping()) {
		struct Job *j;
		long wait_ms;

		if (!worker_is_up(s->worker)) {
			settings(&s->settings); /* the current --reconnect-max */
			if (!worker_session(s->worker, s->settings.reconnect_max_ms, &wait_ms)) {
				if (atomic_load(&s->down_since) == 0)
					atomic_store(&s->down_since, now_us());
				atomic_store(&s->state, W_DOWN);
				sleep_ms(wait_ms);
				continue;
			}
			atomic_store(&s->down_since, 0);
		}
		j = take(s);
		if (j == NULL)
			break;
		worker_run(s->worker, j, &s->settings);
		finish(s, j);
	}
	worker_close(s->worker);
	atomic_store(&s->state, W_STOPPED);
	pool_wake();
	return NULL;
}
