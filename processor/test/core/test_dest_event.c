/*
 * test_dest_event.c - the steps every destination kind shares (dest_event.c), run with a kind of
 * the test's own whose send only counts and says ok: the timeout, the settings that make no
 * target, the password resolved once for a batch, and a batch that memory ran out for.
 */
#include <stdlib.h>
#include <string.h>

#include "dest_event.h"
#include "pgrelay.h"
#include "unit.h"

/* The test kind's target: a host and the resolved password. */
struct TestTarget {
	const char *host;
	const char *password;
	long timeout_ms;
};

static int ones, manys;      /* how often each send ran */
static bool many_runs_out;   /* many says memory ran out */
static char seen[64];        /* the password the last send was given */
static long seen_timeout_ms; /* ... and the timeout */

static const char **
test_target(struct DestEvent *e, json_t *doc, void *target)
{
	struct TestTarget *t = target;

	t->host = dest_event_text(doc, "host");
	t->timeout_ms = dest_event_timeout_ms(e, json_object_get(doc, "timeout_ms"));
	return t->host != NULL ? &t->password : NULL;
}

static void
saw(const struct TestTarget *t)
{
	snprintf(seen, sizeof seen, "%s", t->password != NULL ? t->password : "(none)");
	seen_timeout_ms = t->timeout_ms;
}

static void
test_one(struct DestEvent *e, json_t *doc, const void *t, struct Verdict *v)
{
	(void) e;
	(void) doc;
	ones++;
	saw(t);
	v->result = AR_OK;
}

static bool
test_many(void *const *sts, int n, json_t *doc, const void *t, struct Verdict *vs)
{
	int i;

	(void) sts;
	(void) doc;
	manys++;
	if (many_runs_out)
		return false;
	saw(t);
	for (i = 0; i < n; i++)
		vs[i].result = AR_OK;
	return true;
}

static const struct DestSteps test_kind = {"test", sizeof(struct TestTarget), test_target, test_one,
										   test_many};
static const struct DestSteps batch_only = {"test", sizeof(struct TestTarget), test_target, NULL, test_many};

#define N 3

/* A batch of N events of one channel with the settings given (NULL: none). */
static struct WorkerSettings ws;
static struct EventReport reps[N];
static struct Attempt as[N];
static void *sts[N];
static struct Verdict vs[N];

static void
batch_open(const struct DestSteps *kind, const char *settings, long timeout_ms)
{
	int i;

	ones = manys = 0;
	many_runs_out = false;
	seen[0] = '\0';
	for (i = 0; i < N; i++) {
		struct DestEvent *e;

		memset(&reps[i], 0, sizeof reps[i]);
		as[i] = (struct Attempt){.ws = &ws, .rep = &reps[i], .attempt = i + 1};
		vs[i] = (struct Verdict){.result = AR_TRANSIENT, .retry_after_s = -1};
		sts[i] = e = dest_event_open(&as[i], kind);
		if (e == NULL)
			abort();
		e->r.channel = strdup("orders");
		e->r.payload = strdup("{}");
		e->r.settings = settings != NULL ? strdup(settings) : NULL;
		e->r.timeout_ms = timeout_ms;
	}
}

static void
batch_close(void)
{
	int i;

	for (i = 0; i < N; i++)
		dest_event_close(sts[i]);
}

static void
test_timeout(void)
{
	json_t *own = json_integer(500);

	batch_open(&test_kind, NULL, 0);
	ws.max_delivery_time_ms = 0;
	CHECK(dest_event_timeout_ms(sts[0], NULL) == 30000);
	((struct DestEvent *) sts[0])->r.timeout_ms = 2000;
	CHECK(dest_event_timeout_ms(sts[0], NULL) == 2000);
	CHECK(dest_event_timeout_ms(sts[0], own) == 500);
	ws.max_delivery_time_ms = 1000;
	CHECK(dest_event_timeout_ms(sts[0], NULL) == 1000);
	CHECK(dest_event_timeout_ms(sts[0], own) == 500);
	ws.max_delivery_time_ms = 0;
	json_decref(own);
	batch_close();
}

/* deliver_unsent delivers a batch with settings that make no target: the kind never sends. */
static void
deliver_unsent(const char *settings)
{
	batch_open(&test_kind, settings, 0);
	dest_event_deliver_many(sts, N, vs);
	CHECK(ones == 0 && manys == 0);
}

/* Without settings, or with settings that lack what the kind needs, every event fails for good. */
static void
test_no_target(void)
{
	int i;

	deliver_unsent(NULL);
	for (i = 0; i < N; i++) {
		CHECK(vs[i].result == AR_PERMANENT && reps[i].config_error == CE_NONE);
		CHECK_STR(vs[i].error, "the channel has no test settings");
	}
	batch_close();
	deliver_unsent("{\"port\": 1}");
	for (i = 0; i < N; i++) {
		CHECK(vs[i].result == AR_PERMANENT && reps[i].config_error == CE_NONE);
		CHECK_STR(vs[i].error, "the channel's test settings are incomplete");
	}
	batch_close();
}

/* A secret that cannot be read fails every event of the batch as a configuration error, retried. */
static void
test_secret_unreadable(void)
{
	int i;

	deliver_unsent("{\"host\": \"h\", \"password\": \"env:PGRELAY_TEST_NOT_BOUND\"}");
	for (i = 0; i < N; i++) {
		CHECK(vs[i].result == AR_TRANSIENT && reps[i].config_error == CE_SECRET);
		CHECK(vs[i].error != NULL && strstr(vs[i].error, "PGRELAY_TEST_NOT_BOUND") != NULL);
		CHECK_STR(reps[i].sqlstate, "F0000");
		CHECK(reps[i].hint != NULL);
	}
	batch_close();
}

/* The batch goes to the kind's many with the first event's target, its password resolved. */
static void
test_batch_sent(void)
{
	int i;

	batch_open(&test_kind, "{\"host\": \"h\", \"password\": \"value:s3cret\", \"timeout_ms\": 700}", 5000);
	dest_event_deliver_many(sts, N, vs);
	CHECK(manys == 1 && ones == 0);
	CHECK_STR(seen, "s3cret");
	CHECK(seen_timeout_ms == 700);
	for (i = 0; i < N; i++)
		CHECK(vs[i].result == AR_OK && vs[i].error == NULL);
	CHECK_STR(((struct DestEvent *) sts[0])->r.password, "s3cret");
	batch_close();
}

/* One event alone goes to the kind's one, or to its many as a batch of one. */
static void
test_alone(void)
{
	batch_open(&test_kind, "{\"host\": \"h\"}", 0);
	dest_event_deliver(sts[1], &vs[1]);
	CHECK(ones == 1 && manys == 0);
	CHECK(vs[1].result == AR_OK);
	CHECK_STR(seen, "(none)");
	batch_close();

	batch_open(&batch_only, "{\"host\": \"h\"}", 0);
	dest_event_deliver(sts[1], &vs[1]);
	CHECK(ones == 0 && manys == 1);
	CHECK(vs[1].result == AR_OK);
	batch_close();
}

/* A batch that memory ran out for goes one event at a time; one alone fails, retried. */
static void
test_out_of_memory(void)
{
	int i;

	batch_open(&test_kind, "{\"host\": \"h\"}", 0);
	many_runs_out = true;
	dest_event_deliver_many(sts, N, vs);
	CHECK(manys == 1 && ones == N);
	for (i = 0; i < N; i++)
		CHECK(vs[i].result == AR_OK);
	batch_close();

	batch_open(&batch_only, "{\"host\": \"h\"}", 0);
	many_runs_out = true;
	dest_event_deliver_many(sts, N, vs);
	CHECK(manys == 1 + N);
	for (i = 0; i < N; i++) {
		CHECK(vs[i].result == AR_TRANSIENT);
		CHECK_STR(vs[i].error, "out of memory");
	}
	batch_close();
}

/* What a kind's verdict takes from the shared steps: a copied error, a configuration error, JSON. */
static void
test_verdicts(void)
{
	char error[] = "refused";

	batch_open(&test_kind, NULL, 0);
	dest_event_nothing_sent(sts[0], &vs[0], AR_PERMANENT, error);
	error[0] = 'R';
	CHECK(vs[0].result == AR_PERMANENT);
	CHECK_STR(vs[0].error, "refused");
	dest_event_misconfigured(sts[1], &vs[1], "NOPERM", "fix it");
	CHECK(vs[1].result == AR_TRANSIENT);
	CHECK_STR(vs[1].error, "NOPERM");
	CHECK(reps[1].config_error == CE_DESTINATION);
	CHECK_STR(reps[1].hint, "fix it");
	dest_event_detail(sts[2], &vs[2], json_pack("{s:s, s:i}", "topic", "t", "partition", 2));
	CHECK_STR(vs[2].detail, "{\"topic\":\"t\",\"partition\":2}");
	dest_event_detail(sts[2], &vs[2], NULL);
	CHECK(vs[2].detail == NULL);
	batch_close();
}

int
main(void)
{
	RUN(test_timeout);
	RUN(test_no_target);
	RUN(test_secret_unreadable);
	RUN(test_batch_sent);
	RUN(test_alone);
	RUN(test_out_of_memory);
	RUN(test_verdicts);
	return UNIT_DONE();
}
