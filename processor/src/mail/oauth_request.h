/*
 * oauth_request.h - one OAuth2 client-credentials token request to the Microsoft identity
 * platform: POST {login_url}/{tenant}/oauth2/v2.0/token, form-encoded, and its answer classified.
 *
 * oauth_request_fetch is the OAuthFetchFn the transports give the token cache (oauth.h); the
 * form and the answer's parsing are pure and unit-tested.
 */
#ifndef PGRELAY_OAUTH_REQUEST_H
#define PGRELAY_OAUTH_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"
#include "https.h"
#include "oauth.h"

/* How a token request goes out: the context of oauth_request_fetch. */
struct OAuthRequest {
	struct Https *http;  /* the session's client (keeps the connection) */
	const char *ca_file; /* NULL: the system's CA store */
	long connect_timeout_ms;
	long long deadline_us; /* monotonic: the request must be done by then */
	struct Buf *trace;     /* the attempt's trace, or NULL */
};

/* oauth_request_fetch is an OAuthFetchFn: ctx is a struct OAuthRequest. */
void oauth_request_fetch(void *ctx, const struct OAuthClient *c, struct OAuthGrant *g);

/*
 * oauth_request_form appends the request's form: grant_type, client_id, client_secret, scope,
 * every value %-encoded (a secret with + / = & % must arrive as it is). With redact the secret
 * is written as [redacted], for the trace.
 */
bool oauth_request_form(struct Buf *out, const struct OAuthClient *c, bool redact) MUSTCHECK;

/*
 * oauth_request_answer classifies the token endpoint's answer (status, Retry-After, body) into g:
 * a token and its lifetime; or the failure, permanent when the service refused the app
 * (invalid_client, unauthorized_client, an unknown tenant, a bad scope: configuration), transient
 * for 408, 429, 5xx and answers that are not a token.
 */
void oauth_request_answer(long status, long retry_after_s, const char *body, size_t len,
						  struct OAuthGrant *g);

/* oauth_request_trace_answer renders a token answer for the trace with the token replaced by [redacted]. */
char *oauth_request_trace_answer(const char *body, size_t len) MUSTCHECK;

#endif
