/*
 * redis_kind.c - the redis kind of event (held.c runs its held transaction, docs/destinations.md):
 *
 *   BEGIN; _destination_claim (the row and the channel's settings); the event appended to the
 *   stream outside the database under the channel's timeout (redis_stream.c); _finish_held; COMMIT.
 *
 * The claimed row stays locked for the whole append, so no other worker takes it; a crash before
 * COMMIT leaves it for a later poll, and the append's marker makes that attempt find the entry the
 * first one made instead of adding a second.
 */
#include "redis_kind.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dest_row.h"
#include "pgconn.h"
#include "redis_stream.h"
#include "secrets.h"

/* A redis event's state, from the claim to the commit. */
struct RedisEvent {
	struct Attempt *a;
	struct DestRow r; /* the claimed row */
	char *error;      /* the verdict's error, NULL until one is given (a batch's events seldom have one) */
	char *detail;     /* the log row's detail (JSON), NULL until made */
	char attempt[16];
};

/*
 * Each worker thread keeps its connection between events: the next event to the same server
 * (same address, TLS and credentials) reuses it.
 */
static _Thread_local struct RedisSession session;

void *
redis_kind_open(struct Attempt *a)
{
	struct RedisEvent *e = calloc(1, sizeof *e);

	if (e != NULL)
		e->a = a;
	return e;
}

void
redis_kind_close(void *st)
{
	struct RedisEvent *e = st;

	if (e == NULL)
		return;
	dest_row_free(&e->r);
	free(e->error);
	free(e->detail);
	free(e);
}

void
redis_kind_thread_end(void)
{
	redis_session_close(&session);
}

enum HeldClaim
redis_kind_read_row(void *st, const PGresult *res, int row)
{
	struct RedisEvent *e = st;

	return dest_row_read(&e->r, &e->a->attempt, res, row);
}

enum HeldClaim
redis_kind_read(void *st, PGresult *res, bool trusted, const char *fetch_error)
{
	struct RedisEvent *e = st;

	(void) trusted; /* the claim names nothing of another schema, and fetches nothing */
	(void) fetch_error;
	return dest_row_read_one(&e->r, &e->a->attempt, res);
}

/*
 * nothing_sent is the verdict of an attempt that appended nothing: result, with a copy of error.
 * The copy is made only here: a batch allocates an event's state for each of its events, and a
 * fixed 1 kB for an error most never have was 0.4 MB of peak RSS at 8 workers
 * (docs/design/memory.md).
 */
static void
nothing_sent(struct RedisEvent *e, struct Verdict *v, enum AttemptResult result, const char *error)
{
	char *copy = strdup(error);

	free(e->error);
	e->error = copy;
	if (copy == NULL) {
		v->lost = "out of memory";
		return;
	}
	v->result = result;
	v->error = copy;
}

/* text_of is the string member key of doc, or NULL. */
static const char *
text_of(json_t *doc, const char *key)
{
	return json_string_value(json_object_get(doc, key));
}

/*
 * target_of fills t from the settings document (register() checked and completed it), the
 * password resolved for this channel only. False with the reason in err; *config: it is the
 * set-up's (a secret that cannot be read).
 */
static bool
target_of(struct RedisEvent *e, json_t *doc, struct RedisStreamTarget *t, bool *config, char *err,
		  size_t errlen)
{
	const char *ref = text_of(doc, "password");
	struct SecretOwner o = {SO_CHANNEL, e->r.channel, e->a->ws->secrets_dir, e->a->ws->secret_env};

	*config = false;
	t->addr.host = text_of(doc, "host");
	t->addr.port = (int) json_integer_value(json_object_get(doc, "port"));
	t->addr.tls = json_is_true(json_object_get(doc, "tls"));
	t->addr.ca_file = text_of(doc, "ca_file");
	t->addr.user = text_of(doc, "user");
	t->stream = text_of(doc, "stream");
	t->maxlen = (long) json_integer_value(json_object_get(doc, "maxlen"));
	t->dedup_ttl_s = (long) json_integer_value(json_object_get(doc, "dedup_seconds"));
	t->timeout_ms = e->r.timeout_ms > 0 ? e->r.timeout_ms : 30000;
	if (e->a->ws->max_delivery_time_ms > 0 && e->a->ws->max_delivery_time_ms < t->timeout_ms)
		t->timeout_ms = e->a->ws->max_delivery_time_ms;
	if (t->addr.host == NULL || t->stream == NULL || t->addr.port <= 0 || t->dedup_ttl_s <= 0) {
		snprintf(err, errlen, "the channel's redis settings are incomplete");
		return false;
	}
	dest_row_forget_password(&e->r);
	if (ref != NULL && !secrets_resolve(ref, &o, &e->r.password, err, errlen)) {
		*config = true;
		return false;
	}
	t->addr.password = e->r.password;
	return true;
}

/* verdict_of turns the append's result into the attempt's verdict and its log detail. */
static void
verdict_of(struct RedisEvent *e, const struct RedisStreamTarget *t, const struct RedisStreamResult *r,
		   struct Verdict *v)
{
	json_t *d = json_pack("{s:s, s:s, s:i}", "stream", t->stream, "host", t->addr.host, "port", t->addr.port);
	char *text;

	if (d != NULL && (r->outcome == RO_SENT || r->outcome == RO_DUPLICATE)) {
		json_object_set_new(d, "entry_id", json_string(r->entry_id));
		json_object_set_new(d, "duplicate", json_boolean(r->outcome == RO_DUPLICATE));
	} else if (d != NULL && r->unknown) {
		json_object_set_new(d, "unknown", json_true());
	}
	/* on the heap: the stream's name alone may be 512 bytes, and a cut document is no JSON */
	text = d != NULL ? json_dumps(d, JSON_COMPACT) : NULL;
	json_decref(d);
	free(e->detail);
	e->detail = text;
	v->detail = text; /* NULL (out of memory): the log row goes without its detail */
	switch (r->outcome) {
	case RO_SENT:
	case RO_DUPLICATE:
		v->result = AR_OK;
		break;
	case RO_CONFIG:
		/* retried, so that the event goes once the settings or the server are fixed */
		attempt_config_error(e->a->rep, CE_DESTINATION, SECRETS_SQLSTATE,
							 "fix the channel's settings (pgrelay.register(channel, settings => ...)) or "
							 "the Redis server's configuration, as the error says");
		nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	case RO_RETRY:
		nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	}
}

/* entry_of is the stream entry of e. */
static struct RedisStreamEntry
entry_of(struct RedisEvent *e)
{
	snprintf(e->attempt, sizeof e->attempt, "%d", e->a->attempt);
	return (struct RedisStreamEntry){.event_id = e->r.event_id,
									 .channel = e->r.channel,
									 .attempt = e->attempt,
									 .queued_at = e->r.queued_at,
									 .key = e->r.key,
									 .publication_id =
										 e->r.publication_id[0] != '\0' ? e->r.publication_id : NULL,
									 .event_type = e->r.event_type,
									 .payload = e->r.payload,
									 .payload_len = strlen(e->r.payload)};
}

void
redis_kind_deliver(void *st, struct Verdict *v)
{
	struct RedisEvent *e = st;
	struct RedisStreamTarget t = {0};
	struct RedisStreamEntry entry;
	struct RedisStreamResult r;
	json_t *doc;
	bool config;
	char err[1024];

	if (e->r.settings == NULL || (doc = json_loads(e->r.settings, 0, NULL)) == NULL) {
		nothing_sent(e, v, AR_PERMANENT, "the channel has no redis settings");
		return;
	}
	if (!target_of(e, doc, &t, &config, err, sizeof err)) {
		if (config)
			attempt_config_error(e->a->rep, CE_SECRET, SECRETS_SQLSTATE, secrets_hint(err));
		nothing_sent(e, v, config ? AR_TRANSIENT : AR_PERMANENT, err);
		json_decref(doc);
		return;
	}
	entry = entry_of(e);
	redis_stream_append(&session, &t, &entry, &r);
	verdict_of(e, &t, &r, v);
	json_decref(doc);
}

/*
 * append_all appends the events of sts[0..n), of one channel, with the target of the first, in
 * one pipeline (redis_stream_append_many), and gives each its verdict. False, nothing sent, when
 * memory ran out.
 */
static bool
append_all(void *const *sts, int n, const struct RedisStreamTarget *t, struct Verdict *vs)
{
	struct RedisStreamEntry *entries = calloc((size_t) n, sizeof *entries);
	struct RedisStreamResult *rs = calloc((size_t) n, sizeof *rs);
	int i;

	if (entries == NULL || rs == NULL) {
		free(entries);
		free(rs);
		return false;
	}
	for (i = 0; i < n; i++)
		entries[i] = entry_of(sts[i]);
	redis_stream_append_many(&session, t, entries, n, rs);
	for (i = 0; i < n; i++)
		verdict_of(sts[i], t, &rs[i], &vs[i]);
	free(entries);
	free(rs);
	return true;
}

void
redis_kind_deliver_many(void *const *sts, int n, struct Verdict *vs)
{
	struct RedisEvent *first = sts[0];
	struct RedisStreamTarget t = {0};
	json_t *doc = first->r.settings != NULL ? json_loads(first->r.settings, 0, NULL) : NULL;
	bool config, sent = false;
	char err[1024];
	int i;

	/* the events are of one channel: its settings, and its secret, are read once */
	if (doc != NULL && target_of(first, doc, &t, &config, err, sizeof err))
		sent = append_all(sts, n, &t, vs);
	json_decref(doc);
	/* settings that do not make a target, or no memory for the batch: each event as alone */
	for (i = 0; !sent && i < n; i++)
		redis_kind_deliver(sts[i], &vs[i]);
}
