/*
 * oauth.h - OAuth2 client-credentials tokens (the Microsoft identity platform), cached once per
 * credential (login URL, tenant, client, scope and the client secret) for every worker of the
 * Processor: a profile is only ever handed a token its own secret got.
 *
 * A token is fetched when first needed and again some time before it expires: the first worker
 * that needs it then fetches a new one while the others keep using the old one; a worker that
 * has no usable token waits for the one fetch in flight instead of starting its own. Tokens live
 * in memory only and are wiped when replaced. The token request itself is oauth_request.c's.
 */
#ifndef PGRELAY_OAUTH_H
#define PGRELAY_OAUTH_H

#include <stdbool.h>

#include "buf.h"
#include "compiler.h"
#include "outcome.h"

/* Which app asks which tenant for which resource. */
struct OAuthClient {
	const char *login_url;     /* the identity platform, e.g. https://login.microsoftonline.com */
	const char *tenant_id;     /* a directory GUID or a verified domain */
	const char *client_id;     /* the application (client) id */
	const char *client_secret; /* the resolved secret: never logged, traced or stored */
	const char *scope;         /* one resource's /.default, e.g. https://graph.microsoft.com/.default */
};

/* What one token request came to. */
struct OAuthGrant {
	char *access_token;         /* malloc'd when the request succeeded, else NULL */
	long expires_in_s;          /* its lifetime */
	enum DeliveryStatus status; /* on failure: DS_TRANSIENT or DS_PERMANENT */
	long retry_after_s;         /* the endpoint's Retry-After when it failed, -1 when none */
	int http_status;            /* 0: no answer */
	char error[768];            /* on failure: why, with the service's error code and description */
};

/* OAuthFetchFn makes one token request into g (zeroed by the cache); tests give the cache a fake. */
typedef void (*OAuthFetchFn)(void *ctx, const struct OAuthClient *c, struct OAuthGrant *g);

/* A token handed out by the cache. */
struct OAuthToken {
	char *value;          /* a malloc'd copy; oauth_token_free wipes it */
	unsigned long serial; /* which token of its cache entry this is, for oauth_invalidate */
	bool fetched;         /* this call fetched it */
};

/*
 * oauth_token returns a usable token for c in t: the cached one, or a new one from fetch(ctx)
 * when there is none or the cached one is due for a refresh. now_us is the monotonic time
 * (clock.h), deadline_us when to stop waiting for another worker's fetch. A refresh that fails
 * while the cached token is still usable returns the cached one. Returns false with the reason in
 * g (status DS_TRANSIENT or DS_PERMANENT) when no token can be had. Thread-safe.
 */
bool oauth_token(const struct OAuthClient *c, OAuthFetchFn fetch, void *ctx, long long now_us,
				 long long deadline_us, struct OAuthToken *t, struct OAuthGrant *g) MUSTCHECK;

/*
 * oauth_invalidate drops the cached token of c if it is still the one named by serial (the
 * service refused it: 401); the next oauth_token fetches a new one. A newer token stays.
 */
void oauth_invalidate(const struct OAuthClient *c, unsigned long serial);

/* oauth_token_free wipes and frees t's value; NULL and empty tokens are fine. */
void oauth_token_free(struct OAuthToken *t);
/* oauth_grant_free wipes and frees g's token and leaves g empty. */
void oauth_grant_free(struct OAuthGrant *g);

/*
 * oauth_cache_free forgets every cached token (exit, tests). Only when no thread can be using
 * the cache: transport_global_cleanup calls it once the last worker's sessions are gone.
 */
void oauth_cache_free(void);

#endif
