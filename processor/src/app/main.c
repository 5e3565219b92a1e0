/*
 * main.c - the pg_relay Processor: setup, the main loop, shutdown.
 *
 * Glossary
 *   event    one row of pgrelay.queue: a channel, an action type and a payload
 *   channel  a named kind of event with its settings (pgrelay.channels)
 *   tick     one probe of the queue, every --poll-interval while idle
 *   round    one fetch, _queue_fetch(), and the events it returned: what queue_pending_ids()
 *            offers, in its order, read without row locks (the claim is an event's one lock)
 *   claim    a worker locks an event for its transaction and re-validates it (_queue_claim)
 *   drain    rounds that follow one another without waiting for a tick, while events get done;
 *            its summary is the "batch" log line (older than batches of events, below)
 *   batch    the events one worker finishes in one transaction, process_batch() (batch.h)
 *
 *   beat     a tick's heartbeat in multi-node and leader mode: written once per poll interval,
 *            even while every worker is busy (ha.c); drain rounds between ticks only probe
 *
 * Threads: the main thread owns the control connection and the loop below; --workers threads own
 * one connection each and run events (pool.c, worker.c). Polling only: no LISTEN/NOTIFY anywhere.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "config.h"
#include "ha.h"
#include "install_cmd.h"
#include "job.h"
#include "log.h"
#include "malloc_tune.h"
#include "metrics.h"
#include "metrics_http.h"
#include "pgconn.h"
#include "pgrelay.h"
#include "pool.h"
#include "presence.h"
#include "ratelimit.h"
#include "schedule.h"
#include "secrets.h"
#include "service.h"
#include "status_cmd.h"
#include "tick.h"
#include "transport.h"
#include "web_console.h"

struct Config cf;
volatile sig_atomic_t shutdown_requested;
volatile sig_atomic_t reload_requested;
static volatile sig_atomic_t signals_received;

static struct Ticker ticker;
static struct Ha ha; /* multi-node and leader mode only */
static struct Presence presence;
static int saved_argc;
static char **saved_argv;
static long settings_generation;

/* The loop's state: what to do next, and the counters of the batch under way. */
static struct {
	bool want_probe;        /* probe again as soon as a worker is free (drain) */
	bool tick_due;          /* the poll interval passed: probe (and beat) even when busy */
	long long next_tick_us; /* when the next tick is due */
	bool ticked;            /* at least one probe ran (for --once) */
	bool reprobed;          /* a skipped claim asked for a probe this tick */
	bool batch_active;
	long long batch_start_us;
	int rounds, processed, ok, retried, failed, skipped, deferred, lost, replayed;
	int missing; /* workers missing as last said (note_workers); -1 before the first look */
} loop = {.missing = -1};

/*
 * handle_signal only records the signal and wakes the loop. A second SIGTERM/SIGINT while
 * stopping exits at once: the database rolls back whatever was in flight.
 */
static void
handle_signal(int sig)
{
	if (sig == SIGHUP) {
		reload_requested = 1;
	} else {
		if (signals_received++ > 0) {
			static const char msg[] = "pg_relay: second signal, exiting at once\n";

			if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
			}
			_exit(1);
		}
		shutdown_requested = 1;
	}
	pool_wake();
}

/* the schema of pg_relay changed under the running Processor: it stops, exit status 1 */
static bool install_changed;

/* stop_reason names why the loop ended; a signal wins over --once, which it cut short. */
static const char *
stop_reason(int rc)
{
	if (install_changed)
		return "install_changed";
	if (rc)
		return "startup_failed";
	if (signals_received > 0)
		return "signal";
	return cf.once ? "once" : "signal";
}

static void
setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handle_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

static void
worker_settings(const struct Config *c, struct WorkerSettings *ws)
{
	memset(ws, 0, sizeof *ws);
	snprintf(ws->secrets_dir, sizeof ws->secrets_dir, "%s", c->secrets_dir ? c->secrets_dir : "");
	snprintf(ws->secret_env, sizeof ws->secret_env, "%s", c->secret_env ? c->secret_env : "");
	ws->max_delivery_time_ms = c->max_delivery_time_ms;
	ws->reconnect_max_ms = c->reconnect_max_ms;
	ws->events_per_commit = c->events_per_commit;
	ws->generation = settings_generation;
}

/*
 * warn_stray_secrets says once per start or reload that the secrets dir holds files directly in it:
 * the layout before secrets were bound to their owner. No reference reaches them any more, and
 * the events that named them fail with "cannot open DIR/profile/...": the warning says where
 * each must go.
 */
static void
warn_stray_secrets(const struct Config *c)
{
	int n;

	if (c->secrets_dir == NULL || (n = secrets_stray_files(c->secrets_dir)) <= 0)
		return;
	log_warn("secrets_layout", LOG_STR("dir", c->secrets_dir), LOG_INT("stray_files", n),
			 LOG_STR("hint", "a file: secret is read from the directory of the profile or channel it belongs "
							 "to: move DIR/NAME to DIR/profile/<profile>/NAME, DIR/webhook/<channel>/NAME "
							 "or DIR/channel/<channel>/NAME (docs/security.md)"));
}

/*
 * PostgreSQL keeps the ids of 64 subtransactions per transaction in shared memory. The 64th is
 * also WAL-logged for hot standbys, whose snapshots then count the transaction as overflowed;
 * the 65th overflows the primary's cache too. While an overflowed transaction runs, visibility
 * checks of recent transactions look them up in pg_subtrans. Each handler of a batch that writes
 * takes at least one subtransaction id, so a batch of 64 events or more may overflow.
 */
#define CACHED_SUBTRANSACTIONS 64

/*
 * warn_large_batches says once per start or reload that --events-per-commit lets a batch reach
 * the subtransactions PostgreSQL keeps in shared memory: the setting is allowed (it is faster),
 * but what it costs every other session should not be a surprise.
 */
static void
warn_large_batches(const struct Config *c)
{
	if (c->events_per_commit < CACHED_SUBTRANSACTIONS)
		return;
	log_warn("batch_subtransactions", LOG_INT("events_per_commit", c->events_per_commit),
			 LOG_INT("cached", CACHED_SUBTRANSACTIONS),
			 LOG_STR("hint", "a batch runs each handler in a subtransaction; from 64 that write, the "
							 "transaction overflows PostgreSQL's subtransaction cache (on a hot standby at "
							 "64, on the primary at 65), and visibility checks read pg_subtrans while it "
							 "runs (docs/processor.md, Batches)"));
}

/* warn_settings says, at start and after each reload, what in the settings deserves a warning. */
static void
warn_settings(const struct Config *c)
{
	warn_stray_secrets(c);
	warn_large_batches(c);
}

/*
 * reload re-reads the config file and the flags into a fresh struct, validates it and swaps the
 * reloadable settings in. A broken file keeps the old configuration. Channel settings need no
 * reload here: every fetched event carries its channel's current settings.
 */
static void
reload(const char *source)
{
	struct Config fresh;
	struct Buf out = BUF_INIT, restart = BUF_INIT;
	struct WorkerSettings ws;
	char err[512];

	reload_requested = 0;
	service_reloading();
	if (config_load(&fresh, saved_argc, saved_argv, &out, err, sizeof err) != 0) {
		log_warn("reload_failed", LOG_STR("source", source), LOG_STR("error", err));
	} else {
		config_apply_reload(&cf, &fresh, &restart);
		log_configure(cf.log_level, cf.log_format);
		settings_generation++;
		worker_settings(&cf, &ws);
		pool_update_settings(&ws);
		metrics_events_per_commit(cf.events_per_commit);
		log_info("reloaded", LOG_STR("source", source),
				 LOG_STR("needs_restart", restart.len ? restart.data : "none"));
		warn_settings(&cf);
		/* A node may have left the cluster: its pending rows come here (pgrelay.remove_node). */
		if (ha_enabled(cf.mode) && !ha_rehome(&ha, &ticker))
			log_warn("rehome_failed", LOG_STR("sqlstate", ticker.pg.sqlstate),
					 LOG_STR("error", ticker.pg.error));
	}
	config_free(&fresh);
	buf_free(&out);
	buf_free(&restart);
	service_reloaded();
}

/* end_batch writes the "batch" line of a drain and resets its counters. */
static void
end_batch(void)
{
	long long ms = (now_us() - loop.batch_start_us) / 1000;

	log_info("batch", LOG_INT("rounds", loop.rounds), LOG_INT("processed", loop.processed),
			 LOG_INT("ok", loop.ok), LOG_INT("retried", loop.retried), LOG_INT("failed", loop.failed),
			 LOG_INT("skipped", loop.skipped), LOG_INT("deferred", loop.deferred), LOG_INT("lost", loop.lost),
			 LOG_INT("replayed", loop.replayed), LOG_MS("duration_ms", ms));
	loop.batch_active = false;
	loop.rounds = loop.processed = loop.ok = loop.retried = loop.failed = 0;
	loop.skipped = loop.deferred = loop.lost = loop.replayed = 0;
}

/* collect_finished counts the events the workers finished; any real work means "drain on". */
static void
collect_finished(void)
{
	struct Job *jobs = pool_collect(), *j;

	for (j = jobs; j; j = j->next) {
		metrics_event(j->channel, j->outcome, j->duration_us);
		if (j->config_error != CE_NONE)
			metrics_config_error(j->channel, j->config_error);
		switch (j->outcome) {
		case OC_SKIPPED:
			/*
			 * Note that a skipped claim probes again: the row may have been locked only for a
			 * moment, by a fetch that ran while the claim did (it then offered the id, and the
			 * pool dropped it as in flight). Without a probe, --once could stop with that event
			 * still due. A row another session really holds stays locked, and the fetch skips it;
			 * still, one such probe per tick at most, so no disagreement can make a busy loop.
			 */
			loop.skipped++;
			if (!loop.reprobed)
				loop.want_probe = loop.reprobed = true;
			break;
		case OC_DEFERRED:
		case OC_SNOOZED: /* back in the queue for later, no attempt spent */
			loop.deferred++;
			break;
		case OC_REPLAYED:
			/* finished without an attempt (its attempt was recorded already): work was done */
			loop.replayed++;
			loop.want_probe = true;
			break;
		case OC_LOST:
			loop.lost++;
			break;
		case OC_OK:
		case OC_PARTIAL:
		case OC_CANCELLED:
			loop.ok++;
			loop.processed++;
			loop.want_probe = true;
			break;
		case OC_RETRY:
		case OC_TIMEOUT:
			loop.retried++;
			loop.processed++;
			loop.want_probe = true;
			break;
		case OC_FAILED:
			loop.failed++;
			loop.processed++;
			loop.want_probe = true;
			break;
		}
	}
	job_free(jobs);
}

/* can_fetch: a worker is free and nothing is queued for it, so a fetch would be put to work. */
static bool
can_fetch(void)
{
	struct PoolCounts c;

	pool_counts(&c);
	return c.queued == 0 && c.idle > 0;
}

/*
 * control_lost: the control connection was lost. It is reopened at the next turn of the loop; in
 * leader mode this node stops leading at once (its workers publish it before their next event),
 * since the decision rests on a session that is gone, maybe with its server.
 */
static void
control_lost(void)
{
	tick_lost(&ticker);
	if (ha_enabled(cf.mode)) {
		ha_lost(&ha);
		if (cf.mode == MODE_LEADER && pool_set_leader(false) > 0)
			log_debug("queue_dropped", LOG_STR("reason", "control_lost"));
	}
}

/* probe runs the mode's probe: single's, or the multi-node/leader tick (with its heartbeat if beat). */
static bool
probe(bool beat, struct ProbeResult *r)
{
	struct PoolCounts c;

	if (!ha_enabled(cf.mode))
		return tick_probe(&ticker, r);
	pool_counts(&c);
	return ha_probe(&ha, &ticker, beat, c.in_flight, r);
}

/*
 * close_gate acts on a probe at once: leadership goes to the workers (who publish it on their
 * sessions before their next event), and when dispatch is not allowed (paused, a standby, out of
 * contact) or leadership was lost, the ids fetched but not started are dropped, so that none of
 * them starts. (A worker that has taken one already claims it as what this node is now, and the
 * claim refuses what the gate no longer allows.)
 */
static void
close_gate(const struct ProbeResult *r)
{
	int dropped = 0;
	const char *why = "leader_yielded";

	if (r->leader >= 0)
		dropped = pool_set_leader(r->leader == 1);
	if (!r->dispatch || r->paused) {
		why = r->paused ? "paused" : "gate_closed";
		dropped += pool_drop_queued();
	}
	if (dropped > 0)
		log_debug("queue_dropped", LOG_INT("count", dropped), LOG_STR("reason", why));
}

/*
 * fire_schedules queues the schedules' due occurrences, also while paused (their events wait like
 * any other), and lets this tick fetch them. A failed statement is logged and changes nothing
 * else: the schedules stay due, and the next probe says so again. Returns false only when the
 * control connection was lost.
 */
static bool
fire_schedules(struct ProbeResult *r)
{
	int queued;

	if (schedule_fire(&ticker, &queued)) {
		if (queued > 0)
			r->has_work = true;
		return true;
	}
	if (ticker.pg.lost)
		return false;
	log_warn_c(&ticker.pg, "schedule_fire_failed", LOG_STR("sqlstate", ticker.pg.sqlstate),
			   LOG_STR("error", ticker.pg.error));
	return true;
}

/*
 * install_gone: the probe found that schema pgrelay is not the one the startup check
 * trusted (it was dropped, and maybe made again), and ran nothing of it. The Processor stops
 * (exit 1): a new start checks the new one.
 */
static void
install_gone(void)
{
	log_error("install_changed",
			  LOG_STR("error", "schema pgrelay is not the one this Processor checked at start"
							   " (it was dropped, and maybe made again)"),
			  LOG_STR("hint", "start the Processor again: it checks the install anew"));
	install_changed = true;
	shutdown_requested = 1;
}

/*
 * run_tick: probe (with the mode gate; beat: the heartbeat too), reload or pause if asked, then
 * fetch and dispatch when a worker is free.
 */
static void
run_tick(bool beat)
{
	struct ProbeResult r;
	struct Job *jobs;
	long long t0 = now_us();
	bool ok;
	int n;

	loop.ticked = true;
	ok = probe(beat, &r);
	metrics_probe(now_us() - t0, ok);
	if (!ok && ticker.schema_changed) {
		install_gone();
		return;
	}
	if (!ok)
		goto failed;
	metrics_state(true, r.dispatch, r.paused, r.leader);
	if (r.reload_requested) {
		ticker.seen_generation = r.generation;
		reload("database");
	}
	if (r.schedule_due && !fire_schedules(&r))
		goto failed;
	close_gate(&r);
	if (!r.dispatch || r.paused || !r.has_work)
		return;
	if (!can_fetch()) { /* a tick while every worker is busy: fetch as soon as one is free */
		loop.want_probe = true;
		return;
	}
	n = tick_fetch(&ticker, cf.batch_size, &jobs);
	if (n < 0)
		goto failed;
	if (n == 0 || pool_submit(jobs) == 0)
		return;
	if (!loop.batch_active) {
		loop.batch_active = true;
		loop.batch_start_us = now_us();
	}
	loop.rounds++;
	return;

failed:
	if (ticker.pg.lost) {
		control_lost();
	} else {
		log_error("tick_failed", LOG_STR("sqlstate", ticker.pg.sqlstate), LOG_STR("error", ticker.pg.error));
	}
}

/* A worker whose connection attempts have failed for this long is missing (note_workers). */
#define WORKER_MISSING_MS 1000

/*
 * note_workers: workers whose connections fail (the server out of connection slots, say) leave
 * the events to the others. The Processor runs with the workers it has rather than wait for all
 * of them, and says so when the number of missing workers changes: workers_missing (warn; each
 * worker's reconnecting lines say why), workers_connected (info) once all are back, the gauge
 * pgrelay_workers_connected, and its row of pgrelay.processors, reported at once.
 */
static void
note_workers(void)
{
	int missing = pool_workers_missing(WORKER_MISSING_MS);

	if (missing == loop.missing)
		return;
	if (missing > 0)
		log_warn("workers_missing", LOG_INT("connected", cf.workers - missing),
				 LOG_INT("workers", cf.workers),
				 LOG_STR("hint", "the events run on the connected workers; the others keep trying to connect "
								 "(their reconnecting lines say why)"));
	else if (loop.missing > 0)
		log_info("workers_connected", LOG_INT("connected", cf.workers), LOG_INT("workers", cf.workers));
	loop.missing = missing;
	metrics_workers_connected(cf.workers - missing);
	presence_soon(&presence);
}

/*
 * after_tick does what rides on the control connection besides the probe: this Processor's row
 * of pgrelay.processors (every 10 s, after a tick), and the queue figures a scrape of --metrics
 * waits for. Neither failing stops dispatch; a lost connection is reopened as after a probe.
 */
static void
after_tick(bool ticked)
{
	struct PoolCounts c;

	pool_counts(&c);
	metrics_busy(c.in_flight);
	if (ticked)
		note_workers();
	if (ticked && pgconn_is_up(&ticker.pg) &&
		!presence_tick(&presence, &ticker, cf.workers, cf.workers - loop.missing, c.in_flight,
					   cf.poll_interval_ms)) {
		control_lost();
		return;
	}
	if (metrics_queue_wanted() && pgconn_is_up(&ticker.pg) && !tick_queue_stats(&ticker)) {
		if (ticker.pg.lost)
			control_lost();
		else
			log_warn_c(&ticker.pg, "queue_stats_failed", LOG_STR("sqlstate", ticker.pg.sqlstate),
					   LOG_STR("error", ticker.pg.error));
	}
}

/*
 * pool_empty: nothing queued, running, or finished but not counted yet (so that the batch line
 * misses no event).
 */
static bool
pool_empty(void)
{
	struct PoolCounts c;

	pool_counts(&c);
	return c.queued + c.in_flight + c.done == 0;
}

/* once_finished: with --once, stop when a probe found nothing more to do and the pool is empty. */
static bool
once_finished(void)
{
	return loop.ticked && !loop.want_probe && !loop.batch_active && pool_empty();
}

/*
 * main_loop_once: reload if asked, account for finished events, keep the control connection up,
 * probe on each tick or at once while draining, then sleep until something happens.
 */
static void
main_loop_once(void)
{
	long long now;
	long wait_ms;

	if (reload_requested)
		reload("signal");
	collect_finished();
	now = now_us();

	if (!tick_session(&ticker, &cf, &wait_ms)) {
		metrics_state(false, false, false, -1);
		if (metrics_queue_wanted()) /* the scrape serves the figures it has */
			metrics_queue_update(NULL, 0, false);
		if (cf.once) /* one attempt only: nothing is left to do without the control connection */
			shutdown_requested = 1;
		else
			pool_wait(service_loop(wait_ms, false));
		return;
	}
	if (now >= loop.next_tick_us) {
		loop.want_probe = true;
		loop.tick_due = true;
		loop.reprobed = false;
		loop.next_tick_us = now + cf.poll_interval_ms * 1000LL;
	}
	/*
	 * Note that a tick probes even while every worker is busy (it fetches only for a free one):
	 * so a closed gate drops the ids waiting for a worker at once, and the heartbeat of
	 * multi-node and leader mode is never late because events are long.
	 */
	if ((loop.want_probe && can_fetch()) || loop.tick_due) {
		bool beat = loop.tick_due;

		loop.want_probe = false;
		loop.tick_due = false;
		run_tick(beat);
		after_tick(beat);
	} else
		after_tick(false);
	if (loop.batch_active && !loop.want_probe && pool_empty())
		end_batch();
	if (cf.once && once_finished()) {
		shutdown_requested = 1;
		return;
	}
	wait_ms = (loop.next_tick_us - now_us()) / 1000 + 1;
	if (loop.want_probe && can_fetch())
		wait_ms = 0;
	pool_wait(service_loop(wait_ms, true));
}

/*
 * startup_connect: the first connection; retried with backoff unless --once, or the failure lasts
 * until someone changes the set-up (a wrong password, no such role or database, pg_hba.conf): a
 * Processor started by hand then stops with the hint rather than retry for ever, and under systemd
 * it is started again (Restart=on-failure), so a fix is picked up within seconds. Once it has
 * connected, it keeps retrying whatever the failure (pgconn_session).
 */
static bool
startup_connect(void)
{
	long wait_ms;

	while (!shutdown_requested) {
		if (tick_session(&ticker, &cf, &wait_ms))
			return true;
		if (cf.once || ticker.pg.lasting)
			return false;
		pool_wait(service_loop(wait_ms, false));
	}
	return false;
}

/*
 * log_started writes the "started" line: the version, the SQL side the startup check found (which
 * versions, and installed how) and every effective setting.
 */
static void
log_started(void)
{
	static struct ConfigFields settings; /* its strings outlive the call; main thread only */
	struct LogField f[2 + CONFIG_NPARAMS];
	int i;

	if (!log_enabled(LL_INFO))
		return;
	config_describe(&cf, &settings);
	f[0] = LOG_STR("version", PGRELAY_VERSION);
	f[1] = LOG_STR("sql", ticker.install);
	for (i = 0; i < settings.n; i++)
		f[2 + i] = settings.f[i];
	log_write(LL_INFO, NULL, "started", f, (size_t) settings.n + 2);
}

/*
 * start_metrics starts the Prometheus endpoint when --metrics asks for one, before the first
 * connection: a Processor that cannot reach its database is when its metrics matter most.
 */
static bool
start_metrics(void)
{
	char bound[128], err[512];

	metrics_init(PGRELAY_VERSION, config_mode_name(cf.mode), cf.workers, pool_wake);
	metrics_events_per_commit(cf.events_per_commit);
	if (cf.metrics == NULL)
		return true;
	if (!metrics_http_start(cf.metrics, bound, sizeof bound, err, sizeof err)) {
		log_error("startup_failed", LOG_STR("error", err),
				  LOG_STR("hint", "choose another port for --metrics, or free this one"));
		return false;
	}
	log_info("metrics_listening", LOG_STR("address", bound));
	return true;
}

static int
usage_error(const char *msg)
{
	fprintf(stderr, "pg_relay: %s\nTry \"pg_relay --help\" for more information.\n", msg);
	return 2;
}

int
main(int argc, char **argv)
{
	struct Buf out = BUF_INIT;
	struct WorkerSettings ws;
	struct PoolCounts counts;
	char err[512], hint[256];
	int rc, left;

	malloc_tune(); /* before any thread: the arenas' limit applies to those made from now on */
	if (argc > 1 && strcmp(argv[1], "status") == 0)
		return status_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "web") == 0)
		return web_main(argc - 1, argv + 1);
	if (argc > 1 && (strcmp(argv[1], "install") == 0 || strcmp(argv[1], "upgrade") == 0))
		return install_main(argc - 1, argv + 1, strcmp(argv[1], "upgrade") == 0);
	saved_argc = argc;
	saved_argv = argv;
	rc = config_load(&cf, argc, argv, &out, err, sizeof err);
	if (rc == 1) {
		fputs(out.data ? out.data : "", stdout);
		buf_free(&out);
		config_free(&cf);
		return 0;
	}
	if (rc == 2)
		return usage_error(err);
	if (ha_enabled(cf.mode) && cf.once) {
		snprintf(err, sizeof err,
				 "--once cannot be used with --mode=%s: its heartbeats need a running Processor",
				 config_mode_name(cf.mode));
		return usage_error(err);
	}
	if (!pgconn_check_conninfo(cf.dbname, err, sizeof err))
		return usage_error(err);

	log_configure(cf.log_level, cf.log_format);
	setup_signals();
	service_init();
	/* libcurl is set up by the first mail delivery (transport_global_init), not here. */
	pgconn_hint_workers(cf.workers);
	tick_init(&ticker, &cf);
	ha_init(&ha, cf.mode);
	presence_init(&presence);

	rc = 0;
	if (!start_metrics()) {
		rc = 1;
	} else if (!startup_connect()) {
		if (!shutdown_requested) {
			bool config;

			log_error("startup_failed", LOG_STR("error", ticker.pg.error),
					  LOG_OPT_STR("hint", pgconn_connect_hint(ticker.pg.error, &config)));
			rc = 1;
		}
	} else if (!tick_check_installation(&ticker, err, sizeof err, hint, sizeof hint)) {
		log_error("startup_failed", LOG_STR("error", err), LOG_STR("hint", hint));
		rc = 1;
	} else if (ha_enabled(cf.mode) && !ha_rehome(&ha, &ticker)) {
		log_error("startup_failed", LOG_STR("error", ticker.pg.error),
				  LOG_STR("hint", "every node of the cluster needs its pg_relay node id (docs/ha.md)"));
		rc = 1;
	} else if (worker_settings(&cf, &ws),
			   !pool_start(cf.workers, cf.dbname, config_mode_name(cf.mode), &ws)) {
		log_error("startup_failed", LOG_STR("error", "could not start the worker threads"));
		rc = 1;
	} else {
		log_started();
		warn_settings(&cf);
		service_ready();
		loop.next_tick_us = now_us();
		while (!shutdown_requested)
			main_loop_once();
		if (install_changed)
			rc = 1;
	}

	pool_counts(&counts);
	metrics_state(false, false, false, -1); /* scrapes from now on wait for nothing */
	if (metrics_queue_wanted())
		metrics_queue_update(NULL, 0, false);
	log_info("stopping", LOG_STR("reason", stop_reason(rc)), LOG_INT("in_flight", counts.in_flight));
	service_stopping(counts.in_flight);
	left = pool_stop(cf.shutdown_timeout_ms);
	/* Nothing runs any more: another node may lead at once rather than after dead_after. */
	if (rc == 0 && left == 0 && ha_enabled(cf.mode))
		ha_stop(&ha, &ticker);
	if (rc == 0)
		presence_stop(&presence, &ticker);
	collect_finished();
	if (loop.batch_active)
		end_batch();
	tick_free(&ticker);
	pool_free();
	transport_global_cleanup();
	if (left == 0) /* every worker has been joined: none can be inside the rate limiter */
		ratelimit_free();
	metrics_http_stop();
	metrics_reset();
	log_info("stopped", LOG_INT("unfinished", left));
	config_free(&cf);
	buf_free(&out);
	return rc;
}
