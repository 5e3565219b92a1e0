/*
 * test_metrics.c - the Prometheus text exposition: families with HELP and TYPE, escaped label
 * values, cumulative histograms ending in +Inf with _sum and _count; the cap on channels; the
 * queue figures a scrape waits for; the --metrics address syntax; status ages.
 */
#include <pthread.h>
#include <stdlib.h>

#include "metrics.h"
#include "metrics_http.h"
#include "status_cmd.h"
#include "unit.h"

/* has says whether the exposition contains line (a whole line). */
static bool
has(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p;

	for (p = text; (p = strstr(p, line)) != NULL; p += n)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* help_names_every_config_error says whether the HELP of pgrelay_config_errors_total lists every
 * kind its samples may carry: a reader of the scrape learns the kinds from it. */
static bool
help_names_every_config_error(const char *text)
{
	const char *help = strstr(text, "# HELP pgrelay_config_errors_total ");
	const char *end = help != NULL ? strchr(help, '\n') : NULL;
	int e;

	if (end == NULL)
		return false;
	for (e = CE_NONE + 1; e < CE_COUNT; e++) {
		const char *name = config_error_name((enum ConfigError) e);
		const char *p = strstr(help, name);

		if (p == NULL || p > end)
			return false;
	}
	return true;
}

static char *
render(void)
{
	struct Buf b = BUF_INIT;

	metrics_render(&b);
	return buf_steal(&b);
}

static void
test_families_and_counters(void)
{
	char *t;

	metrics_reset();
	metrics_init("9.9.9", "leader", 4, NULL);
	metrics_state(true, true, false, 1);
	metrics_busy(3);
	metrics_workers_connected(2);
	metrics_events_per_commit(50);
	metrics_batch_cap(2, 12);
	metrics_batch_cap(3, 60); /* above --events-per-commit (a reload lowered it): no cap */
	metrics_conn_opened(false);
	metrics_conn_opened(true);
	metrics_conn_opened(true);
	metrics_conn_closed(true);
	metrics_conn_failed(true);
	metrics_reconnected(false);
	metrics_event("orders", OC_OK, 1500);
	metrics_event("orders", OC_FAILED, 2000000);
	metrics_event("orders", OC_SKIPPED, 10);
	metrics_config_error("orders", CE_MISSING_GRANT);
	metrics_config_error("orders", CE_MISSING_GRANT);
	metrics_config_error("mail", CE_SECRET);
	metrics_config_error("orders", CE_NONE); /* not one: not counted */
	t = render();
	CHECK(has(t, "# HELP pgrelay_processor_info The Processor's version and mode (always 1)."));
	CHECK(has(t, "# TYPE pgrelay_processor_info gauge"));
	CHECK(has(t, "pgrelay_processor_info{version=\"9.9.9\",mode=\"leader\"} 1"));
	CHECK(has(t, "pgrelay_workers 4"));
	CHECK(has(t, "pgrelay_workers_busy 3"));
	CHECK(has(t, "# TYPE pgrelay_workers_connected gauge"));
	CHECK(has(t, "pgrelay_workers_connected 2"));
	/* each worker's batch size: --events-per-commit unless a lost connection capped it */
	CHECK(has(t, "# TYPE pgrelay_events_per_commit gauge"));
	CHECK(has(t, "pgrelay_events_per_commit{worker=\"1\"} 50"));
	CHECK(has(t, "pgrelay_events_per_commit{worker=\"2\"} 12"));
	CHECK(has(t, "pgrelay_events_per_commit{worker=\"3\"} 50"));
	CHECK(has(t, "pgrelay_events_per_commit{worker=\"4\"} 50"));
	CHECK(strstr(t, "pgrelay_events_per_commit{worker=\"5\"}") == NULL);
	CHECK(has(t, "pgrelay_leader 1"));
	CHECK(has(t, "pgrelay_connections_open{conn=\"control\"} 1"));
	CHECK(has(t, "pgrelay_connections_open{conn=\"worker\"} 1"));
	CHECK(has(t, "pgrelay_connection_failures_total{conn=\"worker\"} 1"));
	CHECK(has(t, "pgrelay_reconnects_total{conn=\"control\"} 1"));
	CHECK(has(t, "# TYPE pgrelay_events_total counter"));
	CHECK(has(t, "pgrelay_events_total{channel=\"orders\",outcome=\"ok\"} 1"));
	CHECK(has(t, "pgrelay_events_total{channel=\"orders\",outcome=\"failed\"} 1"));
	CHECK(has(t, "pgrelay_events_total{channel=\"orders\",outcome=\"skipped\"} 1"));
	CHECK(has(t, "pgrelay_events_total{channel=\"orders\",outcome=\"retry\"} 0"));
	/* every kind of every channel, the ones that did not happen at 0 */
	CHECK(has(t, "# TYPE pgrelay_config_errors_total counter"));
	CHECK(has(t, "pgrelay_config_errors_total{channel=\"orders\",kind=\"missing_grant\"} 2"));
	CHECK(has(t, "pgrelay_config_errors_total{channel=\"orders\",kind=\"missing_handler\"} 0"));
	CHECK(has(t, "pgrelay_config_errors_total{channel=\"orders\",kind=\"secret\"} 0"));
	CHECK(has(t, "pgrelay_config_errors_total{channel=\"mail\",kind=\"secret\"} 1"));
	CHECK(has(t, "pgrelay_config_errors_total{channel=\"mail\",kind=\"in_handler\"} 0"));
	CHECK(strstr(t, "kind=\"\"") == NULL);
	CHECK(help_names_every_config_error(t));
	/* a skip is no attempt: two attempts in the histogram, cumulative, +Inf last */
	CHECK(has(t, "pgrelay_attempt_duration_seconds_bucket{channel=\"orders\",le=\"0.001\"} 0"));
	CHECK(has(t, "pgrelay_attempt_duration_seconds_bucket{channel=\"orders\",le=\"0.0025\"} 1"));
	CHECK(has(t, "pgrelay_attempt_duration_seconds_bucket{channel=\"orders\",le=\"1\"} 1"));
	CHECK(has(t, "pgrelay_attempt_duration_seconds_bucket{channel=\"orders\",le=\"2.5\"} 2"));
	CHECK(has(t, "pgrelay_attempt_duration_seconds_bucket{channel=\"orders\",le=\"+Inf\"} 2"));
	CHECK(has(t, "pgrelay_attempt_duration_seconds_sum{channel=\"orders\"} 2.001500"));
	CHECK(has(t, "pgrelay_attempt_duration_seconds_count{channel=\"orders\"} 2"));
	/* no queue figures read yet: the family is there, without samples */
	CHECK(has(t, "# TYPE pgrelay_queue_due_events gauge"));
	CHECK(strstr(t, "\npgrelay_queue_stats_age_seconds ") == NULL);
	free(t);
	metrics_reset();
}

static void
test_leader_only_in_leader_mode(void)
{
	char *t;

	metrics_reset();
	metrics_init("9.9.9", "single", 1, NULL);
	metrics_state(true, true, false, -1);
	t = render();
	CHECK(has(t, "# TYPE pgrelay_leader gauge"));
	CHECK(strstr(t, "\npgrelay_leader ") == NULL);
	free(t);
	metrics_reset();
}

static void
test_label_escaping(void)
{
	struct Buf b = BUF_INIT;
	char *t;

	metrics_escape_label(&b, "a\\b\"c\nd");
	CHECK_STR(b.data, "a\\\\b\\\"c\\nd");
	buf_free(&b);
	metrics_reset();
	metrics_ratelimit_wait("m365 \"main\"", 1500);
	metrics_ratelimit_wait("m365 \"main\"", 500);
	t = render();
	CHECK(has(t, "pgrelay_ratelimit_deferrals_total{profile=\"m365 \\\"main\\\"\"} 2"));
	CHECK(has(t, "pgrelay_ratelimit_wait_seconds_total{profile=\"m365 \\\"main\\\"\"} 2.000000"));
	free(t);
	metrics_reset();
}

static void
test_probe_histogram(void)
{
	char *t;

	metrics_reset();
	metrics_probe(80, true);
	metrics_probe(300, true);
	metrics_probe(5000000, false);
	t = render();
	CHECK(has(t, "pgrelay_probe_duration_seconds_bucket{le=\"0.0001\"} 1"));
	CHECK(has(t, "pgrelay_probe_duration_seconds_bucket{le=\"0.0005\"} 2"));
	CHECK(has(t, "pgrelay_probe_duration_seconds_bucket{le=\"1\"} 2"));
	CHECK(has(t, "pgrelay_probe_duration_seconds_bucket{le=\"+Inf\"} 3"));
	CHECK(has(t, "pgrelay_probe_duration_seconds_sum 5.000380"));
	CHECK(has(t, "pgrelay_probe_duration_seconds_count 3"));
	CHECK(has(t, "pgrelay_probe_failures_total 1"));
	free(t);
	metrics_reset();
}

static void
test_channels_are_capped(void)
{
	char name[32], *t;
	int i;

	metrics_reset();
	for (i = 0; i < METRICS_MAX_CHANNELS + 50; i++) {
		snprintf(name, sizeof name, "ch%d", i);
		metrics_event(name, OC_OK, 1);
	}
	metrics_event("ch0", OC_OK, 1); /* known channels keep their own series */
	t = render();
	CHECK(has(t, "pgrelay_events_total{channel=\"ch0\",outcome=\"ok\"} 2"));
	CHECK(has(t, "pgrelay_events_total{channel=\"ch998\",outcome=\"ok\"} 1"));
	CHECK(strstr(t, "channel=\"ch999\"") == NULL);
	CHECK(has(t, "pgrelay_events_total{channel=\"(other)\",outcome=\"ok\"} 51"));
	free(t);
	metrics_reset();
}

static void
test_queue_figures(void)
{
	struct QueueStat q[3] = {{"orders", "sql", 10, 7, 2, 12.5, false, "", 0, 0},
							 {"mail", "notify", 0, 0, 0, 0, true, "", 0, 0},
							 {"orders", "sql", 4, 3, 1, 2, false, "shop", 5, 2}};
	char *t;

	metrics_reset();
	metrics_queue_update(q, 3, true);
	metrics_queue_update(NULL, 0, false); /* a failed read keeps the last figures */
	t = render();
	CHECK(has(t, "pgrelay_queue_events{channel=\"orders\",action_type=\"sql\"} 10"));
	CHECK(has(t, "pgrelay_queue_due_events{channel=\"orders\"} 7"));
	CHECK(has(t, "pgrelay_queue_retrying_events{channel=\"orders\"} 2"));
	CHECK(has(t, "pgrelay_queue_oldest_due_age_seconds{channel=\"orders\"} 12.500"));
	CHECK(has(t, "pgrelay_channel_paused{channel=\"mail\"} 1"));
	CHECK(has(t, "pgrelay_queue_stats_failures_total 1"));
	CHECK(strstr(t, "\npgrelay_queue_stats_age_seconds ") != NULL);
	/* a subscription's row: its own families, and none of the channel's */
	CHECK(has(t, "pgrelay_topic_subscriber_events{topic=\"shop\",channel=\"orders\"} 4"));
	CHECK(has(t, "pgrelay_topic_subscriber_due_events{topic=\"shop\",channel=\"orders\"} 3"));
	CHECK(has(t, "pgrelay_topic_subscriber_retrying_events{topic=\"shop\",channel=\"orders\"} 1"));
	CHECK(has(t, "pgrelay_topic_subscriber_failed_events{topic=\"shop\",channel=\"orders\"} 5"));
	CHECK(has(t, "pgrelay_topic_subscriber_failed_1h_events{topic=\"shop\",channel=\"orders\"} 2"));
	CHECK(!has(t, "pgrelay_queue_events{channel=\"orders\",action_type=\"sql\"} 4"));
	free(t);
	metrics_reset();
}

/* The main loop's side of a scrape: it sees the wish, reads, and the waiting scrape goes on. */
static int wakes;

static void
wake(void)
{
	wakes++;
}

static void *
main_loop(void *arg)
{
	struct QueueStat q = {"late", "sql", 1, 1, 0, 3, false, "", 0, 0};

	(void) arg;
	while (!metrics_queue_wanted())
		usleep(1000);
	metrics_queue_update(&q, 1, true);
	return NULL;
}

static void
test_scrape_waits_for_the_main_loop(void)
{
	pthread_t th;
	char *t;

	metrics_reset();
	metrics_init("9.9.9", "single", 1, wake);
	/* not connected: nothing to wait for */
	metrics_scrape_begin(60000);
	CHECK(wakes == 0);
	metrics_state(true, true, false, -1);
	pthread_create(&th, NULL, main_loop, NULL);
	metrics_scrape_begin(60000);
	pthread_join(th, NULL);
	CHECK(wakes == 1);
	t = render();
	CHECK(has(t, "pgrelay_queue_due_events{channel=\"late\"} 1"));
	free(t);
	metrics_reset();
}

static void
test_ages(void)
{
	static const struct {
		long long secs;
		const char *want;
	} cases[] = {{-1, "-"},       {0, "0s"},       {59, "59s"},       {60, "1m00s"},    {252, "4m12s"},
				 {3600, "1h00m"}, {7380, "2h03m"}, {86399, "23h59m"}, {86400, "1d00h"}, {273600, "3d04h"}};
	char buf[32];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		status_format_age(cases[i].secs, buf, sizeof buf);
		CHECK_STR(buf, cases[i].want);
	}
}

int
main(void)
{
	RUN(test_families_and_counters);
	RUN(test_leader_only_in_leader_mode);
	RUN(test_label_escaping);
	RUN(test_probe_histogram);
	RUN(test_channels_are_capped);
	RUN(test_queue_figures);
	RUN(test_scrape_waits_for_the_main_loop);
	RUN(test_ages);
	return UNIT_DONE();
}
