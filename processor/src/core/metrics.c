/*
 * metrics.c - the numbers behind the Prometheus endpoint, and their text exposition (format
 * 0.0.4: HELP and TYPE before each family, escaped label values, cumulative histogram buckets
 * ending in le="+Inf" with _sum and _count).
 *
 * Note that a worker never waits on a scrape: the main thread counts the events the workers
 * finished as it collects them (main.c); what a worker records itself is an atomic add (its
 * connection) or a rate-limit deferral under the one mutex that guards the per-channel table, the
 * rate-limit waits and the queue figures, which every caller holds for a few instructions (a
 * scrape copies under it and formats outside it).
 */
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

/* A histogram: counts per bucket (not cumulative; the last bucket is +Inf), their sum, in µs. */
#define HIST_MAX 17
struct Hist {
	long long bucket[HIST_MAX];
	long long count;
	long long sum_us;
};

/* Bucket bounds, as written in le="..." and in microseconds. */
struct Buckets {
	int n; /* finite bounds; bucket n is +Inf */
	const char *const *le;
	const long long *us;
};

static const char *const attempt_le[] = {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
										 "0.5",   "1",      "2.5",   "5",    "10",    "30",   "60",  "300"};
static const long long attempt_us[] = {1000,     2500,     5000,     10000,    25000,   50000,
									   100000,   250000,   500000,   1000000,  2500000, 5000000,
									   10000000, 30000000, 60000000, 300000000};
static const struct Buckets attempt_buckets = {16, attempt_le, attempt_us};

static const char *const probe_le[] = {"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
									   "0.01",   "0.025",   "0.05",   "0.1",   "0.25",   "1"};
static const long long probe_us[] = {100,   250,   500,   1000,   2500,   5000,
									 10000, 25000, 50000, 100000, 250000, 1000000};
static const struct Buckets probe_buckets = {12, probe_le, probe_us};

#define N_OUTCOMES ((int) OC_LOST + 1)

struct ChannelCounters {
	char name[132];
	long long events[N_OUTCOMES]; /* by enum Outcome */
	struct Hist attempts;         /* attempts made (not skipped, deferred or lost) */
	/* attempts failed because of the set-up, by enum ConfigError (CE_NONE unused) */
	long long config_errors[CE_COUNT];
};

struct ProfileWaits {
	char name[132];
	long long deferrals;
	long long wait_ms;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a scrape waits here for queue figures */
	struct ChannelCounters *channels;
	int nchannels, capchannels;
	struct ProfileWaits *profiles;
	int nprofiles, capprofiles;
	struct Hist probe;
	long long probe_failures;
	struct QueueStat *queue; /* the last figures read */
	int nqueue;
	long long queue_at_us;    /* when they were read (now_us); 0: never */
	long long queue_tried_us; /* when the last read was asked for */
	long long queue_failures;
	unsigned long queue_gen; /* bumped by every update, read or failed */
	bool queue_wanted;
	char version[32], mode[16];
	int workers;
	double start_time; /* Unix time */
	void (*wake)(void);
} m = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static atomic_int connected, dispatch_allowed, paused, leader = -1, busy, workers_connected,
													   events_per_commit;
static atomic_int batch_cap[METRICS_MAX_WORKERS]; /* by worker - 1; 0: none */
static atomic_llong conn_open[2], conn_failures[2], reconnects[2];

void
metrics_init(const char *version, const char *mode, int workers, void (*wake)(void))
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&m.mu);
	snprintf(m.version, sizeof m.version, "%s", version);
	snprintf(m.mode, sizeof m.mode, "%s", mode);
	m.workers = workers;
	m.wake = wake;
	m.start_time = (double) ts.tv_sec + ts.tv_nsec / 1e9;
	pthread_mutex_unlock(&m.mu);
}

void
metrics_reset(void)
{
	int i;

	pthread_mutex_lock(&m.mu);
	free(m.channels);
	free(m.profiles);
	free(m.queue);
	m.channels = NULL;
	m.profiles = NULL;
	m.queue = NULL;
	m.nchannels = m.capchannels = m.nprofiles = m.capprofiles = m.nqueue = 0;
	memset(&m.probe, 0, sizeof m.probe);
	m.probe_failures = m.queue_failures = m.queue_at_us = m.queue_tried_us = 0;
	m.queue_wanted = false;
	m.wake = NULL;
	pthread_mutex_unlock(&m.mu);
	atomic_store(&connected, 0);
	atomic_store(&dispatch_allowed, 0);
	atomic_store(&paused, 0);
	atomic_store(&leader, -1);
	atomic_store(&busy, 0);
	atomic_store(&workers_connected, 0);
	atomic_store(&events_per_commit, 0);
	for (i = 0; i < METRICS_MAX_WORKERS; i++)
		atomic_store(&batch_cap[i], 0);
	for (i = 0; i < 2; i++) {
		atomic_store(&conn_open[i], 0);
		atomic_store(&conn_failures[i], 0);
		atomic_store(&reconnects[i], 0);
	}
}

/*
 * find_slot returns the entry named name in a table of elem-sized entries that start with their
 * name, adding it when there is room (capped at METRICS_MAX_CHANNELS: past that every new name
 * shares "(other)"). NULL only when out of memory. Called with m.mu held.
 */
static void *
find_slot(void **table, int *n, int *cap, size_t elem, const char *name)
{
	char *base = *table;
	int i;

	for (i = 0; i < *n; i++)
		if (strcmp(base + (size_t) i * elem, name) == 0)
			return base + (size_t) i * elem;
	if (*n >= METRICS_MAX_CHANNELS - 1) {
		name = "(other)";
		for (i = 0; i < *n; i++)
			if (strcmp(base + (size_t) i * elem, name) == 0)
				return base + (size_t) i * elem;
	}
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		char *grown = realloc(base, (size_t) ncap * elem);

		if (grown == NULL)
			return NULL;
		*table = base = grown;
		*cap = ncap;
	}
	memset(base + (size_t) *n * elem, 0, elem);
	snprintf(base + (size_t) *n * elem, 132, "%s", name);
	return base + (size_t) (*n)++ * elem;
}

static void
hist_add(struct Hist *h, const struct Buckets *b, long long us)
{
	int i;

	if (us < 0)
		us = 0;
	for (i = 0; i < b->n && us > b->us[i]; i++)
		;
	h->bucket[i]++;
	h->count++;
	h->sum_us += us;
}

void
metrics_event(const char *channel, enum Outcome oc, long long duration_us)
{
	struct ChannelCounters *c;

	if ((int) oc < 0 || (int) oc >= N_OUTCOMES)
		return;
	pthread_mutex_lock(&m.mu);
	c = find_slot((void **) &m.channels, &m.nchannels, &m.capchannels, sizeof *c, channel);
	if (c != NULL) {
		c->events[oc]++;
		if (oc != OC_SKIPPED && oc != OC_DEFERRED && oc != OC_REPLAYED && oc != OC_LOST)
			hist_add(&c->attempts, &attempt_buckets, duration_us);
	}
	pthread_mutex_unlock(&m.mu);
}

void
metrics_config_error(const char *channel, enum ConfigError e)
{
	struct ChannelCounters *c;

	if ((int) e <= (int) CE_NONE || (int) e >= (int) CE_COUNT)
		return;
	pthread_mutex_lock(&m.mu);
	c = find_slot((void **) &m.channels, &m.nchannels, &m.capchannels, sizeof *c, channel);
	if (c != NULL)
		c->config_errors[e]++;
	pthread_mutex_unlock(&m.mu);
}

void
metrics_probe(long long duration_us, bool ok)
{
	pthread_mutex_lock(&m.mu);
	hist_add(&m.probe, &probe_buckets, duration_us);
	if (!ok)
		m.probe_failures++;
	pthread_mutex_unlock(&m.mu);
}

void
metrics_state(bool is_connected, bool dispatch, bool is_paused, int is_leader)
{
	atomic_store(&connected, is_connected);
	atomic_store(&dispatch_allowed, dispatch);
	atomic_store(&paused, is_paused);
	atomic_store(&leader, is_leader);
}

void
metrics_busy(int in_flight)
{
	atomic_store(&busy, in_flight);
}

void
metrics_workers_connected(int n)
{
	atomic_store(&workers_connected, n);
}

void
metrics_events_per_commit(int n)
{
	atomic_store(&events_per_commit, n);
}

void
metrics_batch_cap(int worker, int cap)
{
	if (worker >= 1 && worker <= METRICS_MAX_WORKERS)
		atomic_store(&batch_cap[worker - 1], cap);
}

void
metrics_conn_opened(bool worker)
{
	atomic_fetch_add(&conn_open[worker], 1);
}

void
metrics_conn_closed(bool worker)
{
	atomic_fetch_sub(&conn_open[worker], 1);
}

void
metrics_conn_failed(bool worker)
{
	atomic_fetch_add(&conn_failures[worker], 1);
}

void
metrics_reconnected(bool worker)
{
	atomic_fetch_add(&reconnects[worker], 1);
}

void
metrics_ratelimit_wait(const char *profile, long wait_ms)
{
	struct ProfileWaits *p;

	pthread_mutex_lock(&m.mu);
	p = find_slot((void **) &m.profiles, &m.nprofiles, &m.capprofiles, sizeof *p, profile);
	if (p != NULL) {
		p->deferrals++;
		p->wait_ms += wait_ms;
	}
	pthread_mutex_unlock(&m.mu);
}

bool
metrics_queue_wanted(void)
{
	bool w;

	pthread_mutex_lock(&m.mu);
	w = m.queue_wanted;
	pthread_mutex_unlock(&m.mu);
	return w;
}

void
metrics_queue_update(const struct QueueStat *rows, int n, bool ok)
{
	struct QueueStat *copy = NULL;

	if (ok && n > 0) {
		copy = malloc((size_t) n * sizeof *copy);
		if (copy == NULL)
			ok = false;
		else
			memcpy(copy, rows, (size_t) n * sizeof *copy);
	}
	pthread_mutex_lock(&m.mu);
	if (ok) {
		free(m.queue);
		m.queue = copy;
		m.nqueue = n;
		m.queue_at_us = now_us();
	} else
		m.queue_failures++;
	m.queue_wanted = false;
	m.queue_gen++;
	pthread_cond_broadcast(&m.cv);
	pthread_mutex_unlock(&m.mu);
}

void
metrics_scrape_begin(long wait_ms)
{
	struct timespec until;
	unsigned long gen;
	void (*wake)(void);
	long long now = now_us();

	pthread_mutex_lock(&m.mu);
	if (!atomic_load(&connected) || m.wake == NULL || now - m.queue_tried_us < 1000000) {
		pthread_mutex_unlock(&m.mu);
		return;
	}
	m.queue_tried_us = now;
	m.queue_wanted = true;
	gen = m.queue_gen;
	wake = m.wake;
	pthread_mutex_unlock(&m.mu);
	wake();

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&m.mu);
	while (m.queue_gen == gen)
		if (pthread_cond_timedwait(&m.cv, &m.mu, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&m.mu);
}

/* ---- the text exposition ---- */

void
metrics_escape_label(struct Buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			buf_puts(out, "\\\\");
		else if (*s == '"')
			buf_puts(out, "\\\"");
		else if (*s == '\n')
			buf_puts(out, "\\n");
		else
			buf_putc(out, *s);
	}
}

/* family writes the HELP and TYPE lines of a metric (help texts are ours: no escaping needed). */
static void
family(struct Buf *out, const char *name, const char *type, const char *help)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* label_open starts "name{key="value"" (the caller adds more labels and "} value"). */
static void
label_open(struct Buf *out, const char *name, const char *key, const char *value)
{
	buf_printf(out, "%s{%s=\"", name, key);
	metrics_escape_label(out, value);
	buf_putc(out, '"');
}

/* seconds writes microseconds as exact decimal seconds. */
static void
seconds(struct Buf *out, long long us)
{
	buf_printf(out, "%lld.%06lld", us / 1000000, us % 1000000);
}

/* histogram writes the _bucket (cumulative), _sum and _count lines of h, with an optional label. */
static void
histogram(struct Buf *out, const char *name, const char *key, const char *value, const struct Hist *h,
		  const struct Buckets *b)
{
	long long cumulative = 0;
	int i;

	for (i = 0; i <= b->n; i++) {
		cumulative += h->bucket[i];
		buf_printf(out, "%s_bucket{", name);
		if (key) {
			buf_printf(out, "%s=\"", key);
			metrics_escape_label(out, value);
			buf_puts(out, "\",");
		}
		buf_printf(out, "le=\"%s\"} %lld\n", i < b->n ? b->le[i] : "+Inf", cumulative);
	}
	buf_printf(out, "%s_sum", name);
	if (key) {
		label_open(out, "", key, value);
		buf_putc(out, '}');
	}
	buf_putc(out, ' ');
	seconds(out, h->sum_us);
	buf_printf(out, "\n%s_count", name);
	if (key) {
		label_open(out, "", key, value);
		buf_putc(out, '}');
	}
	buf_printf(out, " %lld\n", h->count);
}

/* A copy of the mutex-guarded state, taken for one scrape. */
struct Snapshot {
	struct ChannelCounters *channels;
	int nchannels;
	struct ProfileWaits *profiles;
	int nprofiles;
	struct QueueStat *queue;
	int nqueue;
	struct Hist probe;
	long long probe_failures, queue_failures, queue_age_us;
	char version[32], mode[16];
	int workers;
	double start_time;
};

static void *
dup_array(const void *a, int n, size_t elem)
{
	void *copy;

	if (n <= 0)
		return NULL;
	copy = malloc((size_t) n * elem);
	if (copy != NULL)
		memcpy(copy, a, (size_t) n * elem);
	return copy;
}

static void
take_snapshot(struct Snapshot *s)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_lock(&m.mu);
	s->channels = dup_array(m.channels, m.nchannels, sizeof *m.channels);
	s->nchannels = s->channels ? m.nchannels : 0;
	s->profiles = dup_array(m.profiles, m.nprofiles, sizeof *m.profiles);
	s->nprofiles = s->profiles ? m.nprofiles : 0;
	s->queue = dup_array(m.queue, m.nqueue, sizeof *m.queue);
	s->nqueue = s->queue ? m.nqueue : 0;
	s->probe = m.probe;
	s->probe_failures = m.probe_failures;
	s->queue_failures = m.queue_failures;
	s->queue_age_us = m.queue_at_us ? now_us() - m.queue_at_us : -1;
	memcpy(s->version, m.version, sizeof s->version);
	memcpy(s->mode, m.mode, sizeof s->mode);
	s->workers = m.workers;
	s->start_time = m.start_time;
	pthread_mutex_unlock(&m.mu);
}

/* render_batch_sizes: each worker's batch size now, --events-per-commit unless capped. */
static void
render_batch_sizes(struct Buf *out, int workers)
{
	int i, max = atomic_load(&events_per_commit);

	family(out, "pgrelay_events_per_commit", "gauge",
		   "The most SQL events each worker takes in one transaction now: --events-per-commit, less "
		   "after a batch was lost with its connection.");
	for (i = 0; i < workers && i < METRICS_MAX_WORKERS; i++) {
		int cap = atomic_load(&batch_cap[i]);

		buf_printf(out, "pgrelay_events_per_commit{worker=\"%d\"} %d\n", i + 1,
				   cap > 0 && cap < max ? cap : max);
	}
}

static void
render_process(struct Buf *out, const struct Snapshot *s)
{
	int l = atomic_load(&leader);

	family(out, "pgrelay_processor_info", "gauge", "The Processor's version and mode (always 1).");
	label_open(out, "pgrelay_processor_info", "version", s->version);
	buf_puts(out, ",mode=\"");
	metrics_escape_label(out, s->mode);
	buf_puts(out, "\"} 1\n");
	family(out, "pgrelay_start_time_seconds", "gauge", "When the Processor started, in seconds since 1970.");
	buf_printf(out, "pgrelay_start_time_seconds %.3f\n", s->start_time);
	family(out, "pgrelay_workers", "gauge", "Worker connections configured (--workers).");
	buf_printf(out, "pgrelay_workers %d\n", s->workers);
	family(out, "pgrelay_workers_busy", "gauge", "Events running on a worker now.");
	buf_printf(out, "pgrelay_workers_busy %d\n", atomic_load(&busy));
	family(out, "pgrelay_workers_connected", "gauge",
		   "Workers with a database connection (not those whose connection attempts have failed for a "
		   "second).");
	buf_printf(out, "pgrelay_workers_connected %d\n", atomic_load(&workers_connected));
	render_batch_sizes(out, s->workers);
	family(out, "pgrelay_database_connected", "gauge", "1 while the control connection is up.");
	buf_printf(out, "pgrelay_database_connected %d\n", atomic_load(&connected));
	family(out, "pgrelay_dispatch_allowed", "gauge",
		   "1 while the mode lets this Processor dispatch (0: a standby, or waiting for its peers).");
	buf_printf(out, "pgrelay_dispatch_allowed %d\n", atomic_load(&dispatch_allowed));
	family(out, "pgrelay_paused", "gauge", "1 while pgrelay.pause() stops dispatch everywhere.");
	buf_printf(out, "pgrelay_paused %d\n", atomic_load(&paused));
	family(out, "pgrelay_leader", "gauge", "Leader mode only: 1 while this node leads.");
	if (l >= 0)
		buf_printf(out, "pgrelay_leader %d\n", l);
}

static void
render_connections(struct Buf *out)
{
	static const char *const kind[2] = {"control", "worker"};
	int i;

	family(out, "pgrelay_connections_open", "gauge", "Database connections open, by kind.");
	for (i = 0; i < 2; i++)
		buf_printf(out, "pgrelay_connections_open{conn=\"%s\"} %lld\n", kind[i], atomic_load(&conn_open[i]));
	family(out, "pgrelay_connection_failures_total", "counter", "Connection attempts that failed, by kind.");
	for (i = 0; i < 2; i++)
		buf_printf(out, "pgrelay_connection_failures_total{conn=\"%s\"} %lld\n", kind[i],
				   atomic_load(&conn_failures[i]));
	family(out, "pgrelay_reconnects_total", "counter",
		   "Sessions opened again after a lost connection or failed attempts, by kind.");
	for (i = 0; i < 2; i++)
		buf_printf(out, "pgrelay_reconnects_total{conn=\"%s\"} %lld\n", kind[i], atomic_load(&reconnects[i]));
}

static void
render_events(struct Buf *out, const struct Snapshot *s)
{
	int i, o;

	family(out, "pgrelay_probe_duration_seconds", "histogram",
		   "Round trip of each tick's probe (queue_probe or _ha_tick).");
	histogram(out, "pgrelay_probe_duration_seconds", NULL, NULL, &s->probe, &probe_buckets);
	family(out, "pgrelay_probe_failures_total", "counter", "Ticks whose probe failed.");
	buf_printf(out, "pgrelay_probe_failures_total %lld\n", s->probe_failures);
	family(out, "pgrelay_events_total", "counter",
		   "Events the workers finished, by channel and outcome (ok, partial, cancelled, retry, timeout, "
		   "failed; "
		   "skipped, deferred, replayed, lost: no attempt; replayed: a queue row whose attempt was "
		   "recorded already, finished without running again; snoozed: the handler asked to run "
		   "again later, no attempt spent).");
	for (i = 0; i < s->nchannels; i++)
		for (o = 0; o < N_OUTCOMES; o++) {
			label_open(out, "pgrelay_events_total", "channel", s->channels[i].name);
			buf_printf(out, ",outcome=\"%s\"} %lld\n", outcome_name((enum Outcome) o),
					   s->channels[i].events[o]);
		}
	family(out, "pgrelay_config_errors_total", "counter",
		   "Attempts that failed because of the set-up, which someone must change, by channel and kind "
		   "(missing_handler, not_security_definer, missing_grant, in_handler, secret, destination).");
	for (i = 0; i < s->nchannels; i++)
		for (o = CE_NONE + 1; o < CE_COUNT; o++) {
			label_open(out, "pgrelay_config_errors_total", "channel", s->channels[i].name);
			buf_printf(out, ",kind=\"%s\"} %lld\n", config_error_name((enum ConfigError) o),
					   s->channels[i].config_errors[o]);
		}
	family(out, "pgrelay_attempt_duration_seconds", "histogram",
		   "Duration of each attempt on its worker, by channel.");
	for (i = 0; i < s->nchannels; i++)
		histogram(out, "pgrelay_attempt_duration_seconds", "channel", s->channels[i].name,
				  &s->channels[i].attempts, &attempt_buckets);
	family(out, "pgrelay_ratelimit_deferrals_total", "counter",
		   "Emails moved to a later time by their profile's rate limit, by profile.");
	for (i = 0; i < s->nprofiles; i++) {
		label_open(out, "pgrelay_ratelimit_deferrals_total", "profile", s->profiles[i].name);
		buf_printf(out, "} %lld\n", s->profiles[i].deferrals);
	}
	family(out, "pgrelay_ratelimit_wait_seconds_total", "counter",
		   "Time the deferred emails were moved by, by profile.");
	for (i = 0; i < s->nprofiles; i++) {
		label_open(out, "pgrelay_ratelimit_wait_seconds_total", "profile", s->profiles[i].name);
		buf_puts(out, "} ");
		seconds(out, s->profiles[i].wait_ms * 1000);
		buf_putc(out, '\n');
	}
}

/* queue_gauge writes one per-channel gauge family of the queue figures; field picks the value. */
static void
queue_gauge(struct Buf *out, const struct Snapshot *s, const char *name, const char *help, int field)
{
	int i;

	family(out, name, "gauge", help);
	for (i = 0; i < s->nqueue; i++) {
		const struct QueueStat *q = &s->queue[i];

		if (q->topic[0] != '\0')
			continue; /* a subscription's row: topic_gauge */
		label_open(out, name, "channel", q->channel);
		if (field == 0) {
			buf_puts(out, ",action_type=\"");
			metrics_escape_label(out, q->action_type);
			buf_printf(out, "\"} %lld\n", q->queued);
		} else if (field == 1)
			buf_printf(out, "} %lld\n", q->due);
		else if (field == 2)
			buf_printf(out, "} %lld\n", q->retrying);
		else if (field == 3)
			buf_printf(out, "} %.3f\n", q->oldest_due_age);
		else
			buf_printf(out, "} %d\n", q->paused ? 1 : 0);
	}
}

/* topic_gauge writes one per-subscription gauge family (topic, channel); field picks the value. */
static void
topic_gauge(struct Buf *out, const struct Snapshot *s, const char *name, const char *help, int field)
{
	int i;

	family(out, name, "gauge", help);
	for (i = 0; i < s->nqueue; i++) {
		const struct QueueStat *q = &s->queue[i];
		long long v = field == 0   ? q->queued
					  : field == 1 ? q->due
					  : field == 2 ? q->retrying
					  : field == 3 ? q->failed
								   : q->failed_1h;

		if (q->topic[0] == '\0')
			continue;
		label_open(out, name, "topic", q->topic);
		buf_puts(out, ",channel=\"");
		metrics_escape_label(out, q->channel);
		buf_printf(out, "\"} %lld\n", v);
	}
}

static void
render_topics(struct Buf *out, const struct Snapshot *s)
{
	topic_gauge(out, s, "pgrelay_topic_subscriber_events",
				"Deliveries of publications waiting on each subscriber channel, due or not, by topic "
				"(pgrelay.topic_subscribers).",
				0);
	topic_gauge(out, s, "pgrelay_topic_subscriber_due_events", "Of those, due now.", 1);
	topic_gauge(out, s, "pgrelay_topic_subscriber_retrying_events", "Of those, waiting for another attempt.",
				2);
	topic_gauge(out, s, "pgrelay_topic_subscriber_failed_events",
				"Deliveries of publications on each subscriber channel failed for good (pgrelay.failed).", 3);
	topic_gauge(
		out, s, "pgrelay_topic_subscriber_failed_1h_events",
		"Deliveries of publications on each subscriber channel that failed for good in the last hour.", 4);
}

static void
render_queue(struct Buf *out, const struct Snapshot *s)
{
	queue_gauge(out, s, "pgrelay_queue_events",
				"Events in the queue, due or not, by channel (pgrelay.queue_depth).", 0);
	queue_gauge(out, s, "pgrelay_queue_due_events", "Events due now, by channel.", 1);
	queue_gauge(out, s, "pgrelay_queue_retrying_events", "Events waiting for another attempt, by channel.",
				2);
	queue_gauge(out, s, "pgrelay_queue_oldest_due_age_seconds",
				"How long the oldest due event of each channel has waited (0: none is due).", 3);
	queue_gauge(out, s, "pgrelay_channel_paused", "1 while pgrelay.pause(channel) holds the channel.", 4);
	render_topics(out, s);
	family(out, "pgrelay_queue_stats_age_seconds", "gauge",
		   "Age of the queue figures: read from the database when a scrape asks, at most once a second.");
	if (s->queue_age_us >= 0) {
		buf_puts(out, "pgrelay_queue_stats_age_seconds ");
		seconds(out, s->queue_age_us);
		buf_putc(out, '\n');
	}
	family(out, "pgrelay_queue_stats_failures_total", "counter", "Reads of the queue figures that failed.");
	buf_printf(out, "pgrelay_queue_stats_failures_total %lld\n", s->queue_failures);
}

void
metrics_render(struct Buf *out)
{
	struct Snapshot s;

	take_snapshot(&s);
	render_process(out, &s);
	render_connections(out);
	render_events(out, &s);
	render_queue(out, &s);
	free(s.channels);
	free(s.profiles);
	free(s.queue);
}
