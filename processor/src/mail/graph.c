/*
 * graph.c - deliver a message with Microsoft Graph's sendMail.
 *
 * One deliver() is: build the JSON (graph_json.c), get a token (oauth.c, fetched over the same
 * HTTPS client when needed), POST it, and classify the answer (graph_result.c). A 401 means the
 * token was refused (expired early, revoked): it is dropped from the cache, a new one is fetched
 * and the message sent once more, within the same attempt and its time budget.
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "graph_json.h"
#include "graph_result.h"
#include "https.h"
#include "oauth.h"
#include "oauth_request.h"

struct TransportSession {
	struct Https *http; /* the kept-alive client: the token endpoint and Graph */
};

/* graph_session_new makes a session; the connection is opened by the first request. */
static struct TransportSession *
graph_session_new(void)
{
	struct TransportSession *s = calloc(1, sizeof(*s));

	if (s != NULL && (s->http = https_new()) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

/* graph_session_free closes the session's connections; NULL is a no-op. */
static void
graph_session_free(struct TransportSession *s)
{
	if (s == NULL)
		return;
	https_free(s->http);
	free(s);
}

/* Send is one deliver()'s state. */
struct Send {
	struct TransportSession *s;
	const struct Message *m;
	struct OAuthClient client;   /* the profile's app */
	long long deadline;          /* monotonic us: the attempt's time budget ends */
	struct Buf *trace;           /* r->trace when the profile has debug on, else NULL */
	struct Buf url;              /* {graph_url}/v1.0/users/{sender}/sendMail */
	struct GraphBody body;       /* the request body and its trace version */
	struct OAuthToken tokens[2]; /* the token of each request (a 401 makes a second) */
	int n_tokens;
};

/* fail_token describes an attempt that got no token: nothing was sent. */
static void
fail_token(struct DeliveryResult *r, struct OAuthGrant *g)
{
	r->status = g->status;
	r->retry_after_s = g->retry_after_s;
	r->reply_code = g->http_status;
	snprintf(r->error, sizeof(r->error), "no OAuth2 token for Microsoft Graph: %s", g->error);
}

/* get_token takes the next token from the cache (fetching one when needed); false with r filled when none. */
static bool
get_token(struct Send *x, struct DeliveryResult *r)
{
	const struct Profile *p = &x->m->profile;
	struct OAuthRequest orq = {x->s->http, p->graph.ca_file, p->connect_timeout_ms, x->deadline, x->trace};
	struct OAuthGrant g;
	bool ok;

	memset(&g, 0, sizeof(g));
	ok = oauth_token(&x->client, oauth_request_fetch, &orq, now_us(), x->deadline, &x->tokens[x->n_tokens],
					 &g);
	if (ok)
		x->n_tokens++;
	else
		fail_token(r, &g);
	oauth_grant_free(&g);
	return ok;
}

/* post sends the message with the last token taken; false when out of memory. */
static bool
post(struct Send *x, struct HttpsResponse *rs)
{
	const struct Profile *p = &x->m->profile;
	long left = (long) ((x->deadline - now_us()) / 1000);
	struct HttpsRequest rq = {.url = x->url.data,
							  .content_type = "application/json",
							  .body = x->body.json,
							  .body_len = x->body.len,
							  .bearer = x->tokens[x->n_tokens - 1].value,
							  .ca_file = p->graph.ca_file,
							  .connect_timeout_ms = p->connect_timeout_ms,
							  .timeout_ms = left > 0 ? left : 1,
							  .trace_body = x->body.shown,
							  .trace = x->trace};

	return https_send(x->s->http, &rq, rs);
}

/*
 * exchange gets a token and posts; a 401 drops the token from the cache and repeats once with a
 * new one. Returns 1 with rs holding the last answer, 0 when no token could be had (r filled),
 * -1 when out of memory.
 */
static int
exchange(struct Send *x, struct HttpsResponse *rs, struct DeliveryResult *r)
{
	int tries;

	for (tries = 0; tries < 2; tries++) {
		if (!get_token(x, r))
			return 0;
		https_response_free(rs);
		if (!post(x, rs))
			return -1;
		if (rs->status != 401 || tries > 0)
			break;
		if (rs->body.len > 0)
			https_trace_text(x->trace, "< ", rs->body.data, rs->body.len, 16384);
		oauth_invalidate(&x->client, x->tokens[x->n_tokens - 1].serial);
		https_trace_text(x->trace, "* ", "the token was refused (401): fetching a new one, sending once more",
						 66, HTTPS_LINE_MAX);
	}
	return 1;
}

/* classify fills r from the last answer; false when out of memory. */
static bool
classify(const struct HttpsResponse *rs, struct DeliveryResult *r, struct Buf *trace)
{
	struct GraphAnswer a = {rs->curl_code,     rs->error,      rs->status,
							rs->retry_after_s, rs->request_id, rs->client_request_id,
							rs->body.data,     rs->body.len,   rs->body_sent};

	if (rs->body.len > 0)
		https_trace_text(trace, "< ", rs->body.data, rs->body.len, 16384);
	return graph_result_fill(&a, r);
}

/* redact cuts the secrets (the client secret, every token used) out of what the result keeps. */
static bool
redact(const struct Send *x, struct DeliveryResult *r)
{
	const char *secrets[3] = {x->client.client_secret, x->tokens[0].value, x->tokens[1].value};
	struct Buf e = BUF_INIT;
	bool ok = buf_puts(&e, r->error) && buf_redact(&e, secrets, 3);

	if (ok)
		snprintf(r->error, sizeof(r->error), "%s", e.data ? e.data : "");
	buf_free(&e);
	if (ok && r->reply != NULL) {
		struct Buf rep = BUF_INIT;

		ok = buf_puts(&rep, r->reply) && buf_redact(&rep, secrets, 3);
		if (ok) {
			free(r->reply);
			r->reply = buf_steal(&rep);
			ok = r->reply != NULL;
		}
		buf_free(&rep);
	}
	return ok && buf_redact(&r->trace, secrets, 3);
}

/* prepare checks the profile, builds the body and the URL; false with r filled when m cannot be sent. */
static bool
prepare(struct Send *x, struct DeliveryResult *r, bool *oom)
{
	const struct GraphProfile *g = &x->m->profile.graph;

	*oom = false;
	if (x->m->profile.transport != TRANSPORT_GRAPH) {
		r->status = DS_PERMANENT;
		snprintf(r->error, sizeof(r->error), "profile %s is not a graph profile",
				 x->m->profile.name ? x->m->profile.name : "(unnamed)");
		return false;
	}
	if (!graph_json_build(x->m, &x->body, oom, r->error, sizeof(r->error))) {
		r->status = *oom ? DS_TRANSIENT : DS_PERMANENT;
		return false;
	}
	if (!buf_printf(&x->url, "%s/v1.0/users/", g->graph_url) || !https_escape(&x->url, g->sender) ||
		!buf_puts(&x->url, "/sendMail")) {
		*oom = true;
		return false;
	}
	return true;
}

/*
 * graph_deliver is graph_transport.deliver: one attempt (with at most one more request after a
 * 401) to hand m to Microsoft Graph. Returns false only when r could not be filled for lack of
 * memory.
 */
static bool
graph_deliver(struct TransportSession *s, const struct Message *m, const struct DeliveryOptions *opt,
			  struct DeliveryResult *r)
{
	const struct GraphProfile *g = &m->profile.graph;
	struct Send x;
	struct HttpsResponse rs;
	bool ok = true, oom;
	int i;

	memset(&x, 0, sizeof(x));
	x.s = s;
	x.m = m;
	x.client = (struct OAuthClient){g->login_url, g->tenant_id, g->client_id, g->client_secret, g->scope};
	x.deadline = now_us() + (long long) transport_budget_ms(m, opt) * 1000;
	x.trace = m->profile.debug ? &r->trace : NULL;
	x.url = (struct Buf) BUF_INIT;
	https_response_init(&rs);
	r->error[0] = '\0';
	if (!prepare(&x, r, &oom))
		ok = !oom;
	else if ((i = exchange(&x, &rs, r)) < 0)
		ok = false;
	else if (i > 0)
		ok = classify(&rs, r, x.trace);
	ok = ok && redact(&x, r);
	if (!ok && r->error[0] == '\0')
		snprintf(r->error, sizeof(r->error), "out of memory");
	for (i = 0; i < x.n_tokens; i++)
		oauth_token_free(&x.tokens[i]);
	https_response_free(&rs);
	graph_body_free(&x.body);
	buf_free(&x.url);
	return ok;
}

const struct Transport graph_transport = {
	"graph",
	graph_session_new,
	graph_session_free,
	graph_deliver,
};
