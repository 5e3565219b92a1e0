/*
 * transport.c - the transport layer: the table of transports, libcurl's process-wide set-up, the
 * per-worker session cache and the life cycle of a DeliveryResult.
 */
#include "transport.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "https.h"
#include "oauth.h"

/* The transports a profile may name (docs/interface.md, profile.transport). */
static const struct {
	const char *name;           /* profile.transport */
	const char *title;          /* for messages */
	const struct Transport *tr; /* NULL: not built into this Processor */
} transports[] = {
	{"smtp", "SMTP", &smtp_transport},
	{"graph", "Microsoft Graph", &graph_transport},
};

#define NTRANSPORTS (sizeof transports / sizeof transports[0])

struct TransportCache {
	struct TransportSession *session[NTRANSPORTS]; /* by row of transports[]; NULL until used */
	struct Https *http;                            /* the webhooks' client; NULL until used */
	long generation;                               /* of the settings the sessions were made under */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static bool curl_ready;
/* Session caches alive: the shared token cache is freed at exit only when none is left. */
static atomic_int live_caches;

const struct Transport *
transport_find(const char *name, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < NTRANSPORTS; i++) {
		if (strcmp(transports[i].name, name) != 0)
			continue;
		if (transports[i].tr == NULL)
			snprintf(err, errlen, "%s delivery is not available in this Processor", transports[i].title);
		return transports[i].tr;
	}
	snprintf(err, errlen, "unknown transport \"%s\"", name);
	return NULL;
}

static void
curl_init_once(void)
{
	curl_ready = curl_global_init(CURL_GLOBAL_ALL) == CURLE_OK;
}

bool
transport_global_init(void)
{
	pthread_once(&curl_once, curl_init_once);
	return curl_ready;
}

void
transport_global_cleanup(void)
{
	/* A worker stuck in a delivery still holds its sessions: then leave the cache to process exit. */
	if (atomic_load(&live_caches) == 0)
		oauth_cache_free();
	if (curl_ready)
		curl_global_cleanup();
	curl_ready = false;
}

struct TransportCache *
transport_cache_new(void)
{
	struct TransportCache *tc = calloc(1, sizeof(struct TransportCache));

	if (tc != NULL)
		atomic_fetch_add(&live_caches, 1);
	return tc;
}

/* drop_sessions closes every session of tc. */
static void
drop_sessions(struct TransportCache *tc)
{
	size_t i;

	for (i = 0; i < NTRANSPORTS; i++) {
		if (tc->session[i] != NULL)
			transports[i].tr->session_free(tc->session[i]);
		tc->session[i] = NULL;
	}
	https_free(tc->http);
	tc->http = NULL;
}

void
transport_cache_free(struct TransportCache *tc)
{
	if (tc == NULL)
		return;
	drop_sessions(tc);
	free(tc);
	atomic_fetch_sub(&live_caches, 1);
}

struct TransportSession *
transport_cache_session(struct TransportCache *tc, const struct Transport *t, long generation)
{
	size_t i;

	if (tc->generation != generation) {
		drop_sessions(tc);
		tc->generation = generation;
	}
	for (i = 0; i < NTRANSPORTS && transports[i].tr != t; i++)
		;
	if (i == NTRANSPORTS)
		return NULL;
	if (tc->session[i] == NULL)
		tc->session[i] = t->session_new();
	return tc->session[i];
}

struct Https *
transport_cache_http(struct TransportCache *tc, long generation)
{
	if (tc->generation != generation) {
		drop_sessions(tc);
		tc->generation = generation;
	}
	if (tc->http == NULL)
		tc->http = https_new();
	return tc->http;
}

/* delivery_result_init makes r an empty result (no reply, no recipients, no trace). */
void
delivery_result_init(struct DeliveryResult *r)
{
	memset(r, 0, sizeof(*r));
	r->status = DS_TRANSIENT;
	r->retry_after_s = -1;
	r->trace = (struct Buf) BUF_INIT;
}

/* delivery_result_free releases what r owns and leaves it as delivery_result_init does. */
void
delivery_result_free(struct DeliveryResult *r)
{
	int i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n_rcpt; i++)
		free(r->rcpt[i].reply);
	free(r->rcpt);
	free(r->reply);
	free(r->provider_message_id);
	buf_free(&r->trace);
	delivery_result_init(r);
}

long
transport_budget_ms(const struct Message *m, const struct DeliveryOptions *opt)
{
	long t = m->profile.timeout_ms > 0 ? m->profile.timeout_ms : 60000;

	if (opt->max_time_ms > 0 && opt->max_time_ms < t)
		t = opt->max_time_ms;
	return t;
}

bool
transport_curl_cert_error(int code)
{
	return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
		   code == CURLE_SSL_ISSUER_ERROR || code == CURLE_SSL_CRL_BADFILE ||
		   code == CURLE_SSL_PINNEDPUBKEYNOTMATCH || code == CURLE_SSL_CERTPROBLEM;
}

bool
transport_curl_config_error(int code)
{
	return code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT || code == CURLE_NOT_BUILT_IN ||
		   code == CURLE_BAD_FUNCTION_ARGUMENT || code == CURLE_UNKNOWN_OPTION;
}

bool
transport_curl_timeout(int code)
{
	return code == CURLE_OPERATION_TIMEDOUT;
}
