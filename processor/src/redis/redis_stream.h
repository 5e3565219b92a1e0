/*
 * redis_stream.h - an event appended to a Redis stream (XADD), once: a Lua script, atomic on the
 * server, appends the entry and remembers the event's id beside the stream for a while, so that a
 * retry after a lost reply finds the entry it made instead of adding a second one. The entry's
 * fields: event_id, channel, attempt, queued_at, key (when the event has one), publication_id and
 * event_type (when the event delivers a publication, one with an event type) and payload.
 *
 * A worker keeps one RedisSession (its connection, reused while the next event goes to the same
 * server). Never logs, never exits.
 */
#ifndef PGRELAY_REDIS_STREAM_H
#define PGRELAY_REDIS_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "redis_conn.h"

/* A channel's destination, its secrets resolved. */
struct RedisStreamTarget {
	struct RedisAddress addr;
	const char *stream; /* the stream's key */
	long maxlen;        /* 0: never trimmed; else XADD MAXLEN ~ maxlen */
	long dedup_ttl_s;   /* how long an appended event's id is remembered (1 s to 30 days) */
	long timeout_ms;    /* connecting, and each command */
};

/* One event as its entry carries it. */
struct RedisStreamEntry {
	const char *event_id;
	const char *channel;
	const char *attempt;
	const char *queued_at;      /* ISO 8601 */
	const char *key;            /* NULL: the event has none */
	const char *publication_id; /* NULL: an event of notify() */
	const char *event_type;     /* NULL: none */
	const char *payload;
	size_t payload_len;
};

enum RedisOutcome {
	RO_SENT,      /* appended now */
	RO_DUPLICATE, /* appended by an earlier attempt (its entry id in entry_id) */
	RO_RETRY,     /* not appended, or unknown: try again later (the retry cannot add a second entry) */
	RO_CONFIG,    /* refused for what the channel's settings or the server's say: fix them, then retry */
};

struct RedisStreamResult {
	enum RedisOutcome outcome;
	bool unknown;      /* RO_RETRY after the command went out: the entry may be there */
	char entry_id[64]; /* the stream entry's id, RO_SENT and RO_DUPLICATE */
	char error[512];   /* why, otherwise; never holds a secret */
	bool noscript;     /* (redis_stream_append_many's own: the server did not know the script) */
};

struct RedisSession {
	struct RedisConn *conn; /* NULL until the first event, and after a failure */
	bool script_known;      /* the server has the script (EVALSHA works) */
	bool reused;            /* this attempt runs on a connection kept from an earlier one */
	long long deadline_ms;  /* this attempt's end (now_us() / 1000 based) */
};

/* redis_stream_append appends e to t's stream through s, reusing or replacing its connection. */
void redis_stream_append(struct RedisSession *s, const struct RedisStreamTarget *t,
						 const struct RedisStreamEntry *e, struct RedisStreamResult *r);

/*
 * redis_stream_append_many appends e[0..n) to t's stream through s, pipelined: every append sent
 * at once on one connection, then every reply read, each event its own result in r[0..n) (one
 * refused by the server fails alone). A connection lost before a reply leaves that append and
 * those after it RO_RETRY, unknown: the marker makes their retry add nothing twice. One deadline,
 * t's timeout, for the whole batch.
 */
void redis_stream_append_many(struct RedisSession *s, const struct RedisStreamTarget *t,
							  const struct RedisStreamEntry *e, int n, struct RedisStreamResult *r);

/* redis_session_close closes s's connection, if any. */
void redis_session_close(struct RedisSession *s);

/*
 * redis_error_outcome classifies an error reply of the server by its first word: RO_RETRY for
 * what passes (OOM, LOADING, BUSY, TRYAGAIN, READONLY after a failover, ...), RO_CONFIG for the
 * rest (WRONGTYPE, NOAUTH, NOPERM, MOVED from a cluster, ...). *reconnect: the connection should
 * not be reused (READONLY, LOADING: another server may answer next time).
 */
enum RedisOutcome redis_error_outcome(const char *reply, bool *reconnect);

/* redis_stream_script is the Lua script of an append; redis_stream_script_sha1 its SHA-1 in hex,
 * the name EVALSHA calls it by (a constant: the test checks it against the script). */
const char *redis_stream_script(void);
const char *redis_stream_script_sha1(void);

#endif
