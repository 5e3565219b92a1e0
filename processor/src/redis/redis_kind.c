/*
 * redis_kind.c - the redis kind of event (held.c runs its held transaction, docs/destinations.md):
 *
 *   BEGIN; _destination_claim (the row and the channel's settings); the event appended to the
 *   stream outside the database under the channel's timeout (redis_stream.c); _finish_held; COMMIT.
 *
 * The claimed row stays locked for the whole append, so no other worker takes it; a crash before
 * COMMIT leaves it for a later poll, and the append's marker makes that attempt find the entry the
 * first one made instead of adding a second. Here: the channel's target, the append (alone or a
 * batch's pipeline) and its verdict; the rest is every destination event's (dest_event.c).
 */
#include "redis_kind.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "dest_event.h"
#include "redis_stream.h"

/*
 * Each worker thread keeps its connection between events: the next event to the same server
 * (same address, TLS and credentials) reuses it.
 */
static _Thread_local struct RedisSession session;

void
redis_kind_thread_end(void)
{
	redis_session_close(&session);
}

/* target_of fills t from the channel's settings (DestSteps.target). */
static const char **
target_of(struct DestEvent *e, json_t *doc, void *target)
{
	struct RedisStreamTarget *t = target;

	t->addr.host = dest_event_text(doc, "host");
	t->addr.port = (int) json_integer_value(json_object_get(doc, "port"));
	t->addr.tls = json_is_true(json_object_get(doc, "tls"));
	t->addr.ca_file = dest_event_text(doc, "ca_file");
	t->addr.user = dest_event_text(doc, "user");
	t->stream = dest_event_text(doc, "stream");
	t->maxlen = (long) json_integer_value(json_object_get(doc, "maxlen"));
	t->dedup_ttl_s = (long) json_integer_value(json_object_get(doc, "dedup_seconds"));
	t->timeout_ms = dest_event_timeout_ms(e, NULL);
	if (t->addr.host == NULL || t->stream == NULL || t->addr.port <= 0 || t->dedup_ttl_s <= 0)
		return NULL;
	return &t->addr.password;
}

/* verdict_of turns the append's result into the attempt's verdict and its log detail. */
static void
verdict_of(struct DestEvent *e, const struct RedisStreamTarget *t, const struct RedisStreamResult *r,
		   struct Verdict *v)
{
	json_t *d = json_pack("{s:s, s:s, s:i}", "stream", t->stream, "host", t->addr.host, "port", t->addr.port);

	if (d != NULL && (r->outcome == RO_SENT || r->outcome == RO_DUPLICATE)) {
		json_object_set_new(d, "entry_id", json_string(r->entry_id));
		json_object_set_new(d, "duplicate", json_boolean(r->outcome == RO_DUPLICATE));
	} else if (d != NULL && r->unknown) {
		json_object_set_new(d, "unknown", json_true());
	}
	dest_event_detail(e, v, d);
	switch (r->outcome) {
	case RO_SENT:
	case RO_DUPLICATE:
		v->result = AR_OK;
		break;
	case RO_CONFIG:
		dest_event_misconfigured(e, v, r->error,
								 "fix the channel's settings (pgrelay.register(channel, settings => ...)) or "
								 "the Redis server's configuration, as the error says");
		break;
	case RO_RETRY:
		dest_event_nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	}
}

/* entry_of is the stream entry of e. */
static struct RedisStreamEntry
entry_of(const struct DestEvent *e)
{
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

/* append_one appends e alone (DestSteps.one). */
static void
append_one(struct DestEvent *e, json_t *doc, const void *t, struct Verdict *v)
{
	struct RedisStreamEntry entry = entry_of(e);
	struct RedisStreamResult r;

	(void) doc;
	redis_stream_append(&session, t, &entry, &r);
	verdict_of(e, t, &r, v);
}

/*
 * append_all appends the events of sts[0..n), of one channel, to t in one pipeline
 * (redis_stream_append_many), and gives each its verdict (DestSteps.many).
 */
static bool
append_all(void *const *sts, int n, json_t *doc, const void *t, struct Verdict *vs)
{
	struct RedisStreamEntry *entries = calloc((size_t) n, sizeof *entries);
	struct RedisStreamResult *rs = calloc((size_t) n, sizeof *rs);
	int i;

	(void) doc;
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

static const struct DestSteps redis = {"redis", sizeof(struct RedisStreamTarget), target_of, append_one,
									   append_all};

void *
redis_kind_open(struct Attempt *a)
{
	return dest_event_open(a, &redis);
}
