/*
 * test_oauth.c - the OAuth2 token cache (oauth.c) with a fake token request, and the pure parts
 * of the real one (oauth_request.c): the form and the classification of the endpoint's answers.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "oauth.h"
#include "oauth_request.h"
#include "unit.h"

#define S 1000000LL /* a second, in the cache's microseconds */

/* Fake is a token endpoint for the cache: counts requests, answers with the next token or fails. */
struct Fake {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int requests;
	long expires_in; /* 0: the request fails */
	enum DeliveryStatus fails_as;
	bool hold;          /* block inside the request until released */
	bool in_fetch;      /* a request is blocked */
	long delay_ms;      /* make concurrent callers overlap */
	const char *secret; /* when set, a request with another client secret is refused */
};

static void
fake_init(struct Fake *f, long expires_in)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->expires_in = expires_in;
}

static void
fake_fetch(void *ctx, const struct OAuthClient *c, struct OAuthGrant *g)
{
	struct Fake *f = ctx;
	char tok[64];
	int n;

	pthread_mutex_lock(&f->mu);
	n = ++f->requests;
	f->in_fetch = true;
	pthread_cond_broadcast(&f->cond);
	while (f->hold)
		pthread_cond_wait(&f->cond, &f->mu);
	f->in_fetch = false;
	pthread_mutex_unlock(&f->mu);
	if (f->delay_ms > 0) {
		struct timespec ts = {0, f->delay_ms * 1000000L};

		nanosleep(&ts, NULL);
	}
	if (f->secret != NULL && strcmp(c->client_secret, f->secret) != 0) {
		g->status = DS_PERMANENT;
		snprintf(g->error, sizeof(g->error), "invalid_client (%d)", n);
		return;
	}
	if (f->expires_in == 0) {
		g->status = f->fails_as;
		snprintf(g->error, sizeof(g->error), "refused (%d)", n);
		return;
	}
	snprintf(tok, sizeof(tok), "token-%d", n);
	g->access_token = strdup(tok);
	g->expires_in_s = f->expires_in;
}

static const struct OAuthClient app = {"https://login.example", "contoso.example", "client-1", "s3cret",
									   "https://graph.example/.default"};

/* get asks the cache at time now (synthetic seconds); returns the token text or NULL. */
static char *
get(const struct OAuthClient *c, struct Fake *f, long long now, struct OAuthToken *t, struct OAuthGrant *g)
{
	memset(g, 0, sizeof(*g));
	if (!oauth_token(c, fake_fetch, f, now, now + 5 * S, t, g))
		return NULL;
	return t->value;
}

static void
test_cached_until_due(void)
{
	struct Fake f;
	struct OAuthToken t;
	struct OAuthGrant g;

	fake_init(&f, 3600);
	CHECK_STR(get(&app, &f, 1000 * S, &t, &g), "token-1");
	CHECK(t.fetched && f.requests == 1);
	oauth_token_free(&t);
	/* lifetime 3600 s: used as is until 300 s before the end */
	CHECK_STR(get(&app, &f, (1000 + 3299) * S, &t, &g), "token-1");
	CHECK(!t.fetched && f.requests == 1);
	oauth_token_free(&t);
	/* then the next caller fetches a new one */
	CHECK_STR(get(&app, &f, (1000 + 3300) * S, &t, &g), "token-2");
	CHECK(t.fetched && f.requests == 2);
	oauth_token_free(&t);
	/* another scope is another token */
	{
		struct OAuthClient smtp = app;

		smtp.scope = "https://outlook.office365.com/.default";
		CHECK_STR(get(&smtp, &f, (1000 + 3300) * S, &t, &g), "token-3");
		oauth_token_free(&t);
		CHECK_STR(get(&app, &f, (1000 + 3300) * S, &t, &g), "token-2");
		oauth_token_free(&t);
	}
	oauth_cache_free();
}

/*
 * Two profiles of the same tenant and app, one with the wrong secret: the wrong one never gets the
 * right one's token. It asks the token endpoint itself, and fails with the endpoint's reason on
 * its first message, however often the right one has a token cached.
 */
static void
test_a_token_is_only_for_its_own_secret(void)
{
	struct Fake f;
	struct OAuthToken t;
	struct OAuthGrant g;
	struct OAuthClient wrong = app;

	fake_init(&f, 3600);
	f.secret = app.client_secret;
	wrong.client_secret = "not-the-secret";
	CHECK_STR(get(&app, &f, 0, &t, &g), "token-1");
	oauth_token_free(&t);
	CHECK(get(&wrong, &f, 1 * S, &t, &g) == NULL);
	CHECK(f.requests == 2 && g.status == DS_PERMANENT && strcmp(g.error, "invalid_client (2)") == 0);
	oauth_grant_free(&g);
	/* every message of the wrong profile asks again: nothing of the right one is ever handed out */
	CHECK(get(&wrong, &f, 2 * S, &t, &g) == NULL);
	CHECK(f.requests == 3);
	oauth_grant_free(&g);
	/* the right one keeps its cached token */
	CHECK_STR(get(&app, &f, 3 * S, &t, &g), "token-1");
	CHECK(!t.fetched && f.requests == 3);
	oauth_token_free(&t);
	/* the secret fixed (the same text as the right one): the cached token is its token */
	wrong.client_secret = "s3cret";
	CHECK_STR(get(&wrong, &f, 4 * S, &t, &g), "token-1");
	oauth_token_free(&t);
	oauth_cache_free();
}

/* An entry whose token expired and that nobody holds is dropped, and a fresh one fetched. */
static void
test_expired_entries_are_dropped(void)
{
	struct Fake f;
	struct OAuthToken t;
	struct OAuthGrant g;
	struct OAuthClient rotated = app;

	fake_init(&f, 10);
	CHECK_STR(get(&app, &f, 0, &t, &g), "token-1");
	oauth_token_free(&t);
	rotated.client_secret = "rotated";
	CHECK_STR(get(&rotated, &f, 20 * S, &t, &g), "token-2"); /* the first entry is pruned here */
	oauth_token_free(&t);
	CHECK_STR(get(&app, &f, 20 * S, &t, &g), "token-3");
	CHECK(t.fetched);
	oauth_token_free(&t);
	oauth_cache_free();
}

static void
test_failed_refresh_keeps_the_old_token_while_usable(void)
{
	struct Fake f;
	struct OAuthToken t;
	struct OAuthGrant g;

	fake_init(&f, 3600);
	CHECK_STR(get(&app, &f, 0, &t, &g), "token-1");
	oauth_token_free(&t);
	f.expires_in = 0;
	f.fails_as = DS_TRANSIENT;
	/* due for refresh, the refresh fails: the old token is still good for a while */
	CHECK_STR(get(&app, &f, 3400 * S, &t, &g), "token-1");
	CHECK(f.requests == 2);
	oauth_token_free(&t);
	/* 60 s before its end it is no longer handed out: the failure is the caller's */
	CHECK(get(&app, &f, 3540 * S, &t, &g) == NULL);
	CHECK(g.status == DS_TRANSIENT && strcmp(g.error, "refused (3)") == 0);
	oauth_grant_free(&g);
	oauth_cache_free();
}

static void
test_short_lifetimes(void)
{
	struct Fake f;
	struct OAuthToken t;
	struct OAuthGrant g;

	/* 10 s: refresh after 5 s, handed out until 9 s */
	fake_init(&f, 10);
	CHECK_STR(get(&app, &f, 0, &t, &g), "token-1");
	oauth_token_free(&t);
	CHECK_STR(get(&app, &f, 4 * S, &t, &g), "token-1");
	oauth_token_free(&t);
	f.expires_in = 0;
	CHECK_STR(get(&app, &f, 5 * S, &t, &g), "token-1"); /* refresh failed; still usable */
	oauth_token_free(&t);
	CHECK(get(&app, &f, 9 * S, &t, &g) == NULL);
	oauth_grant_free(&g);
	oauth_cache_free();
}

static void
test_invalidate(void)
{
	struct Fake f;
	struct OAuthToken t, t2;
	struct OAuthGrant g;

	fake_init(&f, 3600);
	CHECK_STR(get(&app, &f, 0, &t, &g), "token-1");
	/* a 401 with token-1 drops it: the next caller fetches */
	oauth_invalidate(&app, t.serial);
	CHECK_STR(get(&app, &f, S, &t2, &g), "token-2");
	CHECK(t2.fetched);
	/* a late 401 for token-1 (another worker's) leaves token-2 alone */
	oauth_invalidate(&app, t.serial);
	oauth_token_free(&t);
	CHECK_STR(get(&app, &f, 2 * S, &t, &g), "token-2");
	CHECK(!t.fetched && f.requests == 2);
	oauth_token_free(&t);
	oauth_token_free(&t2);
	oauth_cache_free();
}

static void
test_permanent_failure_is_reported(void)
{
	struct Fake f;
	struct OAuthToken t;
	struct OAuthGrant g;

	fake_init(&f, 0);
	f.fails_as = DS_PERMANENT;
	CHECK(get(&app, &f, 0, &t, &g) == NULL);
	CHECK(g.status == DS_PERMANENT && t.value == NULL);
	oauth_grant_free(&g);
	/* nothing is cached: the next message asks again */
	CHECK(get(&app, &f, S, &t, &g) == NULL && f.requests == 2);
	oauth_grant_free(&g);
	oauth_cache_free();
}

/* Many workers at once, no token yet: one request, every worker gets its token. */
struct Caller {
	pthread_barrier_t *start;
	struct Fake *f;
	bool ok;
	char token[32];
};

static void *
caller(void *arg)
{
	struct Caller *c = arg;
	struct OAuthToken t;
	struct OAuthGrant g;

	pthread_barrier_wait(c->start);
	memset(&g, 0, sizeof(g));
	c->ok = oauth_token(&app, fake_fetch, c->f, now_us(), now_us() + 30 * S, &t, &g);
	if (c->ok)
		snprintf(c->token, sizeof(c->token), "%s", t.value);
	oauth_token_free(&t);
	oauth_grant_free(&g);
	return NULL;
}

static void
test_one_request_for_many_workers(void)
{
	enum { N = 8 };
	pthread_t th[N];
	struct Caller c[N];
	pthread_barrier_t start;
	struct Fake f;
	int i;

	fake_init(&f, 3600);
	f.delay_ms = 20; /* the first request is still out when the others ask */
	pthread_barrier_init(&start, NULL, N);
	for (i = 0; i < N; i++) {
		c[i] = (struct Caller){&start, &f, false, ""};
		pthread_create(&th[i], NULL, caller, &c[i]);
	}
	for (i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		CHECK(c[i].ok);
		CHECK_STR(c[i].token, "token-1");
	}
	CHECK(f.requests == 1);
	pthread_barrier_destroy(&start);
	oauth_cache_free();
}

/* Refresher is one worker refreshing a token due for it, held inside the request. */
struct Refresher {
	struct Fake *f;
	long long now;
	struct OAuthToken t;
	bool ok;
};

static void *
refresher(void *arg)
{
	struct Refresher *r = arg;
	struct OAuthGrant g;

	memset(&g, 0, sizeof(g));
	r->ok = oauth_token(&app, fake_fetch, r->f, r->now, r->now + 30 * S, &r->t, &g);
	oauth_grant_free(&g);
	return NULL;
}

static void
test_others_keep_sending_during_a_refresh(void)
{
	struct Refresher r;
	struct OAuthToken t;
	struct OAuthGrant g;
	pthread_t th;
	struct Fake f;

	fake_init(&f, 3600);
	CHECK_STR(get(&app, &f, 0, &t, &g), "token-1");
	oauth_token_free(&t);
	/* a worker starts the refresh and is held inside the request ... */
	f.hold = true;
	r = (struct Refresher){&f, 3400 * S, {NULL, 0, false}, false};
	pthread_create(&th, NULL, refresher, &r);
	pthread_mutex_lock(&f.mu);
	while (!f.in_fetch)
		pthread_cond_wait(&f.cond, &f.mu);
	pthread_mutex_unlock(&f.mu);
	/* ... while another gets the old token at once, without a request of its own */
	CHECK_STR(get(&app, &f, 3401 * S, &t, &g), "token-1");
	CHECK(!t.fetched && f.requests == 2);
	oauth_token_free(&t);
	pthread_mutex_lock(&f.mu);
	f.hold = false;
	pthread_cond_broadcast(&f.cond);
	pthread_mutex_unlock(&f.mu);
	pthread_join(th, NULL);
	CHECK(r.ok && r.t.fetched);
	CHECK_STR(r.t.value, "token-2");
	oauth_token_free(&r.t);
	CHECK_STR(get(&app, &f, 3402 * S, &t, &g), "token-2");
	oauth_token_free(&t);
	oauth_cache_free();
}

static void
test_form(void)
{
	struct OAuthClient c = {"https://login.microsoftonline.com", "contoso.onmicrosoft.com",
							"6731de76-14a6-49ae-97bc-6eba6914391e", "Xy~8Q+b/c=d&e%41f%g h",
							"https://graph.microsoft.com/.default"};
	struct Buf b = BUF_INIT;

	CHECK(oauth_request_form(&b, &c, false));
	CHECK_STR(b.data, "grant_type=client_credentials&client_id=6731de76-14a6-49ae-97bc-6eba6914391e"
					  "&client_secret=Xy~8Q%2Bb%2Fc%3Dd%26e%2541f%25g%20h"
					  "&scope=https%3A%2F%2Fgraph.microsoft.com%2F.default");
	buf_reset(&b);
	CHECK(oauth_request_form(&b, &c, true));
	CHECK(strstr(b.data, "client_secret=[redacted]&") != NULL && strstr(b.data, "Xy~8Q") == NULL);
	buf_free(&b);
}

/* answer classifies one token endpoint answer. */
static void
answer(long status, long retry_after, const char *body, struct OAuthGrant *g)
{
	memset(g, 0, sizeof(*g));
	oauth_request_answer(status, retry_after, body, body ? strlen(body) : 0, g);
}

static void
test_answers(void)
{
	static const struct {
		long status;
		const char *body;
		const char *token;           /* NULL: a failure */
		long expires;                /* with a token */
		enum DeliveryStatus status_; /* with a failure */
		const char *in_error;
	} rows[] = {
		{200,
		 "{\"token_type\":\"Bearer\",\"expires_in\":3599,\"ext_expires_in\":3599,\"access_token\":\"eyJ0.a-b_"
		 "c\"}",
		 "eyJ0.a-b_c", 3599, DS_SENT, NULL},
		{200, "{\"token_type\":\"bearer\",\"expires_in\":\"3600\",\"access_token\":\"t\"}", "t", 3600,
		 DS_SENT, NULL},
		{200, "{\"access_token\":\"t\",\"expires_in\":60}", "t", 60, DS_SENT, NULL},
		{200, "{\"token_type\":\"Bearer\",\"expires_in\":3599}", NULL, 0, DS_TRANSIENT, "without a usable"},
		{200, "{\"token_type\":\"Bearer\",\"expires_in\":0,\"access_token\":\"t\"}", NULL, 0, DS_TRANSIENT,
		 "without a usable"},
		{200, "{\"token_type\":\"Bearer\",\"expires_in\":10,\"access_token\":\"a b\"}", NULL, 0, DS_TRANSIENT,
		 "without a usable"},
		{200, "{\"token_type\":\"mac\",\"expires_in\":10,\"access_token\":\"t\"}", NULL, 0, DS_TRANSIENT,
		 "without a usable"},
		{200, "<html>proxy login</html>", NULL, 0, DS_TRANSIENT, "without a usable"},
		{401,
		 "{\"error\":\"invalid_client\",\"error_description\":\"AADSTS7000215: Invalid client secret "
		 "provided.\\r\\nTrace "
		 "ID: 1\\r\\nCorrelation ID: 2\",\"error_codes\":[7000215]}",
		 NULL, 0, DS_PERMANENT,
		 "(HTTP 401: invalid_client: AADSTS7000215: Invalid client secret provided.  Trace ID: 1  "
		 "Correlation ID: 2)"},
		{400,
		 "{\"error\":\"unauthorized_client\",\"error_description\":\"AADSTS700016: Application not found\"}",
		 NULL, 0, DS_PERMANENT, "unauthorized_client: AADSTS700016"},
		{400, "{\"error\":\"invalid_request\",\"error_description\":\"AADSTS90002: Tenant 'x' not found.\"}",
		 NULL, 0, DS_PERMANENT, "invalid_request: AADSTS90002"},
		{400, "{\"error\":\"invalid_scope\",\"error_description\":\"AADSTS70011: bad scope\"}", NULL, 0,
		 DS_PERMANENT, "(configuration)"},
		{503, "{\"error\":\"temporarily_unavailable\",\"error_description\":\"AADSTS90033: try again\"}",
		 NULL, 0, DS_TRANSIENT, "unavailable (HTTP 503: temporarily_unavailable: AADSTS90033"},
		{400, "{\"error\":\"temporarily_unavailable\"}", NULL, 0, DS_TRANSIENT, "unavailable"},
		{429, "", NULL, 0, DS_TRANSIENT, "unavailable (HTTP 429)"},
		{500, "<html>oops</html>", NULL, 0, DS_TRANSIENT, "(HTTP 500: <html>oops</html>)"},
		{404, "Not Found", NULL, 0, DS_PERMANENT, "HTTP 404: Not Found); check the profile's login_url"},
		{400, "{\"error\":\"invalid_client\",\"error_description\":\"bad \\u0000 \xff bytes\"}", NULL, 0,
		 DS_PERMANENT, "invalid_client"},
	};
	struct OAuthGrant g;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		answer(rows[i].status, rows[i].status == 429 ? 7 : -1, rows[i].body, &g);
		CHECK(g.http_status == rows[i].status);
		if (rows[i].token != NULL) {
			CHECK_STR(g.access_token, rows[i].token);
			CHECK(g.expires_in_s == rows[i].expires);
		} else {
			CHECK(g.access_token == NULL && g.status == rows[i].status_);
			if (strstr(g.error, rows[i].in_error) == NULL)
				fprintf(stderr, "  row %zu: error \"%s\"\n", i, g.error);
			CHECK(strstr(g.error, rows[i].in_error) != NULL);
			CHECK(strchr(g.error, '\r') == NULL && strchr(g.error, '\n') == NULL);
		}
		if (rows[i].status == 429)
			CHECK(g.retry_after_s == 7);
		oauth_grant_free(&g);
	}
}

static void
test_trace_answer_hides_the_token(void)
{
	const char *body = "{\"token_type\":\"Bearer\",\"expires_in\":3599,\"access_token\":\"SECRET-TOKEN\"}";
	char *shown = oauth_request_trace_answer(body, strlen(body));

	CHECK_STR(shown, "{\"token_type\":\"Bearer\",\"expires_in\":3599,\"access_token\":\"[redacted]\"}");
	free(shown);
	shown = oauth_request_trace_answer("SECRET", 6);
	CHECK_STR(shown, "[body 6 bytes, not JSON]");
	free(shown);
}

int
main(void)
{
	RUN(test_cached_until_due);
	RUN(test_a_token_is_only_for_its_own_secret);
	RUN(test_expired_entries_are_dropped);
	RUN(test_failed_refresh_keeps_the_old_token_while_usable);
	RUN(test_short_lifetimes);
	RUN(test_invalidate);
	RUN(test_permanent_failure_is_reported);
	RUN(test_one_request_for_many_workers);
	RUN(test_others_keep_sending_during_a_refresh);
	RUN(test_form);
	RUN(test_answers);
	RUN(test_trace_answer_hides_the_token);
	return UNIT_DONE();
}
