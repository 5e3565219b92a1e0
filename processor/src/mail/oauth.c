/*
 * oauth.c - the token cache: one entry per credential (login URL, tenant, client, scope and a
 * digest of the client secret), behind one mutex, with a condition variable per entry for the
 * workers that wait for a fetch in flight.
 *
 * Why the secret is part of the key: two profiles may name the same tenant and app with different
 * secrets (one of them wrong, revoked or meant for another sender). A token is handed only to a
 * profile whose own secret got it, so a wrong secret fails on its first message with the token
 * endpoint's reason instead of borrowing another profile's token.
 *
 * Timeline of a token of lifetime L, fetched at time F (the time the request started):
 *   F + L - min(300 s, L/2)   refresh_at: the next worker to need it fetches a new one, while
 *                             the others keep using this one
 *   F + L - min(60 s, L/10)   valid_until: never handed out after this (it could expire on its
 *                             way to the server)
 * Microsoft's tokens live 60-90 minutes, so a refresh starts 5 minutes before the end.
 */
#include "oauth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

struct Entry {
	char *key;                 /* login_url, tenant, client, scope, secret digest: one per line */
	int users;                 /* workers inside oauth_token() that hold this entry */
	char *token;               /* the cached token; NULL when there is none */
	unsigned long serial;      /* the token's number (last_serial when it came) */
	long long valid_until;     /* monotonic us: not handed out after this */
	long long refresh_at;      /* monotonic us: a refresh starts at the first request after this */
	bool refreshing;           /* a worker is fetching a token for this entry */
	unsigned long rounds;      /* fetches finished so far */
	bool failed;               /* ... and the last one failed, */
	struct OAuthGrant failure; /* ... for this reason (no token in it) */
	pthread_cond_t done;       /* broadcast when a fetch finishes */
	struct Entry *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct Entry *entries;
/* Serials count every token of the cache, not per entry: an entry may be dropped and made again,
 * and a late oauth_invalidate for a token of the old one must not match a token of the new one. */
static unsigned long last_serial;

#define SECOND_US 1000000LL

/* wipe_free wipes a secret string before freeing it. */
static void
wipe_free(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

void
oauth_token_free(struct OAuthToken *t)
{
	if (t == NULL)
		return;
	wipe_free(t->value);
	t->value = NULL;
}

void
oauth_grant_free(struct OAuthGrant *g)
{
	if (g == NULL)
		return;
	wipe_free(g->access_token);
	memset(g, 0, sizeof(*g));
	g->retry_after_s = -1;
}

/*
 * secret_digest writes the hex SHA-256 of the client secret into hex (65 bytes): the key holds a
 * digest, not the secret, so a key is never a copy of a secret. False when libcrypto fails.
 */
static bool
secret_digest(const char *secret, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;

	if (EVP_Digest(secret ? secret : "", secret ? strlen(secret) : 0, md, &n, EVP_sha256(), NULL) != 1 ||
		n != 32)
		return false;
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	explicit_bzero(md, sizeof(md));
	return true;
}

/* make_key joins what identifies a token; NULL when out of memory or libcrypto fails. */
static char *
make_key(const struct OAuthClient *c)
{
	struct Buf b = BUF_INIT;
	char digest[65];

	if (!secret_digest(c->client_secret, digest))
		return NULL;
	if (!buf_printf(&b, "%s\n%s\n%s\n%s\n%s", c->login_url, c->tenant_id, c->client_id, c->scope, digest)) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/* entry_free wipes and frees one entry (mu held, or no other thread left). */
static void
entry_free(struct Entry *e)
{
	wipe_free(e->token);
	oauth_grant_free(&e->failure);
	pthread_cond_destroy(&e->done);
	free(e->key);
	free(e);
}

/*
 * prune drops the entries nobody holds whose token has expired (or never came): a rotated or
 * mistyped secret leaves its entry behind, and its token should not outlive its use in memory
 * (mu held).
 */
static void
prune(long long now_us)
{
	struct Entry **p = &entries, *e;

	while ((e = *p) != NULL) {
		if (e->users == 0 && !e->refreshing && (e->token == NULL || now_us >= e->valid_until)) {
			*p = e->next;
			entry_free(e);
		} else
			p = &e->next;
	}
}

/* new_entry makes an empty entry for key (taking it); NULL when out of memory. */
static struct Entry *
new_entry(char *key)
{
	struct Entry *e = calloc(1, sizeof(*e));
	pthread_condattr_t attr;

	if (e == NULL)
		return NULL;
	/* waits are bounded by the monotonic clock, like every other deadline of the Processor */
	if (pthread_condattr_init(&attr) != 0) {
		free(e);
		return NULL;
	}
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 || pthread_cond_init(&e->done, &attr) != 0) {
		pthread_condattr_destroy(&attr);
		free(e);
		return NULL;
	}
	pthread_condattr_destroy(&attr);
	e->key = key;
	return e;
}

/*
 * find_entry returns c's entry, made on first use, and counts the caller as one of its users
 * until it calls leave_entry (mu held); NULL when out of memory.
 */
static struct Entry *
find_entry(const struct OAuthClient *c, long long now_us)
{
	char *key = make_key(c);
	struct Entry *e;

	if (key == NULL)
		return NULL;
	prune(now_us);
	for (e = entries; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0) {
			free(key);
			e->users++;
			return e;
		}
	if ((e = new_entry(key)) == NULL) {
		free(key);
		return NULL;
	}
	e->users = 1;
	e->next = entries;
	entries = e;
	return e;
}

/* leave_entry: the caller no longer holds e (mu held). */
static void
leave_entry(struct Entry *e)
{
	e->users--;
}

/* fail_with describes a failure that is not the token endpoint's. */
static bool
fail_with(struct OAuthGrant *g, const char *why)
{
	oauth_grant_free(g);
	g->status = DS_TRANSIENT;
	snprintf(g->error, sizeof(g->error), "%s", why);
	return false;
}

/* hand_out copies e's token into t (mu held). */
static bool
hand_out(struct Entry *e, struct OAuthToken *t, bool fetched, struct OAuthGrant *g)
{
	t->value = strdup(e->token);
	t->serial = e->serial;
	t->fetched = fetched;
	return t->value != NULL || fail_with(g, "out of memory copying the OAuth2 token");
}

/* keep_token stores a new token in e with its refresh and expiry times (mu held). */
static void
keep_token(struct Entry *e, struct OAuthGrant *got, long long fetched_at)
{
	long long life = (long long) got->expires_in_s * SECOND_US;
	long long guard = life / 10 < 60 * SECOND_US ? life / 10 : 60 * SECOND_US;
	long long early = life / 2 < 300 * SECOND_US ? life / 2 : 300 * SECOND_US;

	wipe_free(e->token);
	e->token = got->access_token;
	got->access_token = NULL;
	e->serial = ++last_serial;
	e->valid_until = fetched_at + life - guard;
	e->refresh_at = fetched_at + life - early;
	e->failed = false;
}

/*
 * refresh fetches a token for e as the one worker allowed to (mu held on entry and on return; it
 * is released during the request). A failure is remembered for the workers that waited on it;
 * with keep_old a still usable old token is handed out instead of the failure.
 */
static bool
refresh(struct Entry *e, const struct OAuthClient *c, OAuthFetchFn fetch, void *ctx, long long now,
		bool keep_old, struct OAuthToken *t, struct OAuthGrant *g)
{
	struct OAuthGrant got;
	bool ok;

	e->refreshing = true;
	pthread_mutex_unlock(&mu);
	memset(&got, 0, sizeof(got));
	got.retry_after_s = -1;
	got.status = DS_TRANSIENT;
	fetch(ctx, c, &got);
	pthread_mutex_lock(&mu);
	e->refreshing = false;
	e->rounds++;
	if (got.access_token != NULL && got.access_token[0] != '\0' && got.expires_in_s > 0) {
		keep_token(e, &got, now);
		ok = hand_out(e, t, true, g);
	} else {
		e->failed = true;
		oauth_grant_free(&e->failure);
		e->failure = got;
		e->failure.access_token = NULL;
		if (keep_old && e->token != NULL && now < e->valid_until)
			ok = hand_out(e, t, false, g);
		else {
			*g = e->failure;
			ok = false;
		}
	}
	oauth_grant_free(&got);
	pthread_cond_broadcast(&e->done);
	return ok;
}

/* wait_round waits (mu held) until the fetch in flight finishes; false when the deadline passed first. */
static bool
wait_round(struct Entry *e, long long deadline_us)
{
	unsigned long round = e->rounds;
	struct timespec ts = {(time_t) (deadline_us / SECOND_US), (long) (deadline_us % SECOND_US) * 1000};

	while (e->refreshing && e->rounds == round)
		if (pthread_cond_timedwait(&e->done, &mu, &ts) == ETIMEDOUT)
			return !(e->refreshing && e->rounds == round);
	return true;
}

bool
oauth_token(const struct OAuthClient *c, OAuthFetchFn fetch, void *ctx, long long now_us,
			long long deadline_us, struct OAuthToken *t, struct OAuthGrant *g)
{
	struct Entry *e;
	bool ok;

	memset(t, 0, sizeof(*t));
	pthread_mutex_lock(&mu);
	if ((e = find_entry(c, now_us)) == NULL) {
		pthread_mutex_unlock(&mu);
		return fail_with(g, "out of memory in the OAuth2 token cache");
	}
	for (;;) {
		if (e->token != NULL && now_us < e->valid_until) {
			if (now_us < e->refresh_at || e->refreshing)
				ok = hand_out(e, t, false, g);
			else
				ok = refresh(e, c, fetch, ctx, now_us, true, t, g);
			break;
		}
		if (!e->refreshing) {
			ok = refresh(e, c, fetch, ctx, now_us, false, t, g);
			break;
		}
		/* Another worker is fetching the token this one needs: its result is ours. */
		if (!wait_round(e, deadline_us)) {
			ok = fail_with(g, "timed out waiting for another worker's OAuth2 token request");
			break;
		}
		if (e->token != NULL && !e->failed) {
			ok = hand_out(e, t, false, g);
			break;
		}
		if (e->failed) {
			*g = e->failure;
			ok = false;
			break;
		}
	}
	leave_entry(e);
	pthread_mutex_unlock(&mu);
	return ok;
}

void
oauth_invalidate(const struct OAuthClient *c, unsigned long serial)
{
	char *key = make_key(c);
	struct Entry *e;

	if (key == NULL)
		return;
	pthread_mutex_lock(&mu);
	for (e = entries; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0 && e->token != NULL && e->serial == serial) {
			wipe_free(e->token);
			e->token = NULL;
		}
	pthread_mutex_unlock(&mu);
	free(key);
}

void
oauth_cache_free(void)
{
	struct Entry *e, *next;

	pthread_mutex_lock(&mu);
	for (e = entries; e != NULL; e = next) {
		next = e->next;
		entry_free(e);
	}
	entries = NULL;
	pthread_mutex_unlock(&mu);
}
