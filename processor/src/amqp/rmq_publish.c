/*
 * rmq_publish.c - events published and confirmed (rmq_publish.h), a batch at once (one event alone
 * is a batch of one). The message: persistent (delivery_mode 2), message_id the event's id,
 * headers channel, attempt, queued_at, key, publication_id and event_type (each of the last three
 * when set), content_type application/json for a JSON payload. After basic.publish the connection
 * is read until the broker answers for the delivery tags: basic.ack, basic.nack (either for many
 * tags at once when multiple), or basic.return (then the ack) for a mandatory message no queue
 * took; a channel.close or connection.close says why it refused.
 */
#include "rmq_publish.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include <amqp_framing.h>
#include <openssl/err.h>

#include "clock.h"

/* What a message written whole without its answer in time is told (the guard's cut, the reads). */
static const char NO_CONFIRM[] = "no confirm from the broker within the timeout";

/* text_header sets entries[*n] to the text header key: value, and counts it. */
static void
text_header(amqp_table_entry_t *entries, int *n, const char *key, const char *value)
{
	entries[*n].key = amqp_cstring_bytes(key);
	entries[*n].value.kind = AMQP_FIELD_KIND_UTF8;
	entries[(*n)++].value.value.bytes = amqp_cstring_bytes(value);
}

/* fill_properties sets p for m; entries must have room for RMQ_HEADERS_MAX headers. */
static void
fill_properties(const struct RmqMessage *m, amqp_basic_properties_t *p, amqp_table_entry_t *entries)
{
	int n = 0;

	memset(p, 0, sizeof *p);
	p->_flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG |
				AMQP_BASIC_APP_ID_FLAG;
	p->delivery_mode = AMQP_DELIVERY_PERSISTENT;
	p->message_id = amqp_cstring_bytes(m->event_id);
	p->app_id = amqp_cstring_bytes("pg_relay");
	if (m->json) {
		p->_flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
		p->content_type = amqp_cstring_bytes("application/json");
	}
	text_header(entries, &n, "channel", m->channel);
	entries[n].key = amqp_cstring_bytes("attempt");
	entries[n].value.kind = AMQP_FIELD_KIND_I32;
	entries[n++].value.value.i32 = m->attempt;
	text_header(entries, &n, "queued_at", m->queued_at);
	if (m->key != NULL)
		text_header(entries, &n, "key", m->key);
	if (m->publication_id[0] != '\0')
		text_header(entries, &n, "publication_id", m->publication_id);
	if (m->event_type != NULL)
		text_header(entries, &n, "event_type", m->event_type);
	p->headers.num_entries = n;
	p->headers.entries = entries;
}

/* for_us says whether an ack or nack of tag (multiple: all up to it) answers for ours. */
static bool
for_us(uint64_t tag, amqp_boolean_t multiple, uint64_t ours)
{
	return tag == ours || (multiple && tag >= ours);
}

/*
 * closed handles the broker's close of the channel or the connection: its reply in r, close-ok
 * sent before the deadline.
 */
static enum RmqIo
closed(struct RmqConn *c, const amqp_frame_t *f, long long deadline_ms, struct RmqResult *r)
{
	const amqp_channel_close_t *ch;
	const amqp_connection_close_t *cc;
	amqp_channel_close_ok_t chok = {0};
	amqp_connection_close_ok_t ccok = {0};
	int code;

	if (f->payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) {
		ch = f->payload.method.decoded;
		code = ch->reply_code;
		snprintf(r->error, sizeof r->error, "the broker closed the channel: %d %.*s", code,
				 (int) ch->reply_text.len, (const char *) ch->reply_text.bytes);
		/*
		 * The connection is dropped afterwards anyway: a failed close-ok changes nothing. Its write
		 * is guarded too: it may queue behind messages a blocked broker has not read.
		 */
		rmq_write_begin(c, deadline_ms);
		(void) amqp_send_method(c->st, f->channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &chok);
	} else {
		cc = f->payload.method.decoded;
		code = cc->reply_code;
		snprintf(r->error, sizeof r->error, "the broker closed the connection: %d %.*s", code,
				 (int) cc->reply_text.len, (const char *) cc->reply_text.bytes);
		rmq_write_begin(c, deadline_ms);
		(void) amqp_send_method(c->st, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ccok);
	}
	(void) rmq_write_end(c); /* cut or not, the connection is closed next */
	return rmq_close_io(code);
}

/*
 * publish_error says in err why basic.publish failed (rc): when the write guard cut it (cut), that
 * the message did not go out within the timeout. A broker that stops reading its publishers (a
 * memory or disk alarm) is the usual cause; the message went out in part at most, so the broker
 * cannot queue it.
 */
static void
publish_error(int rc, bool cut, char *err, size_t errlen)
{
	if (cut)
		snprintf(err, errlen,
				 "cannot publish within the timeout: the broker took no more (are publishers "
				 "blocked by a memory or disk alarm?)");
	else
		snprintf(err, errlen, "cannot publish: %s", amqp_error_string2(rc));
}

/*
 * still_open says whether a kept connection is still usable: it reads what the broker sent
 * meanwhile without waiting. A connection.close (the broker's restart, an operator's
 * close_connection) or a closed socket means no: a new connection then costs the event nothing.
 */
static bool
still_open(struct RmqConn *c)
{
	amqp_frame_t f;
	struct timeval none = {0, 0};
	int rc;

	for (;;) {
		rc = amqp_simple_wait_frame_noblock(c->st, &f, &none);
		if (rc == AMQP_STATUS_TIMEOUT)
			return true;
		if (rc != AMQP_STATUS_OK)
			return false;
		if (f.frame_type == AMQP_FRAME_METHOD && (f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD ||
												  f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD))
			return false;
		/* anything else (connection.blocked, a heartbeat) leaves it usable */
	}
}

/* outcome_of sets r's outcome from the io of a failed attempt. */
static void
outcome_of(enum RmqIo io, struct RmqResult *r)
{
	r->outcome = io == QIO_SETUP ? QO_CONFIG : QO_RETRY;
	r->unknown = io == QIO_LOST;
}

/*
 * A batch under way on one connection (rmq_publish_many): its messages, their results, the
 * delivery tag of the first. The tags of a channel in confirm mode count its messages, so m[i]
 * has tag first + i.
 */
struct Batch {
	struct RmqConn *c;
	const struct RmqMessage *m;
	struct RmqResult *r;
	int n;
	uint64_t first;
	int sent;       /* m[0..sent) went out */
	int open;       /* how many of them have no answer yet */
	bool returning; /* a basic.return was read: the header that follows names the message */
	bool unmatched; /* a returned message's id named none of the batch: the next one acked is it */
	bool cut;       /* the write guard ended the publishes at the deadline */
	char why[256];  /* the last return's reply */
};

/*
 * answer settles the messages an ack or a nack of tag answers for (multiple: every one up to it):
 * acked is sent, or unroutable when a basic.return named it first; nacked is retried.
 */
static void
answer(struct Batch *b, uint64_t tag, amqp_boolean_t multiple, bool acked)
{
	int i;

	for (i = 0; i < b->sent; i++) {
		struct RmqResult *r = &b->r[i];

		if (!r->pending || !for_us(tag, multiple, b->first + (uint64_t) i))
			continue;
		r->pending = false;
		b->open--;
		if (acked && b->unmatched && !r->returned) {
			b->unmatched = false;
			r->returned = true;
			snprintf(r->error, sizeof r->error, "%s", b->why);
		}
		if (!acked) {
			r->outcome = QO_RETRY;
			snprintf(r->error, sizeof r->error, "the broker nacked the message (it could not take it)");
		} else if (r->returned) {
			r->outcome = QO_UNROUTABLE;
		} else {
			r->outcome = QO_SENT;
			r->tag = b->first + (uint64_t) i;
		}
	}
}

/* returned_one marks the message the header of a returned message names (by its message_id). */
static void
returned_one(struct Batch *b, const amqp_frame_t *f)
{
	const amqp_basic_properties_t *p = f->payload.properties.decoded;
	int i;

	b->returning = false;
	for (i = 0; p != NULL && (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) && i < b->sent; i++)
		if (b->r[i].pending && strlen(b->m[i].event_id) == p->message_id.len &&
			memcmp(b->m[i].event_id, p->message_id.bytes, p->message_id.len) == 0) {
			b->r[i].returned = true;
			snprintf(b->r[i].error, sizeof b->r[i].error, "%s", b->why);
			return;
		}
	b->unmatched = true;
}

/*
 * one_frame acts on one frame of the broker while answers are awaited: QIO_OK to read on, or the
 * broker's close (its reply in why).
 */
static enum RmqIo
one_frame(struct Batch *b, const amqp_frame_t *f, long long deadline_ms, struct RmqResult *why)
{
	if (f->frame_type == AMQP_FRAME_HEADER && b->returning)
		returned_one(b, f);
	if (f->frame_type != AMQP_FRAME_METHOD)
		return QIO_OK; /* a returned message's header and body, heartbeats */
	switch (f->payload.method.id) {
	case AMQP_BASIC_ACK_METHOD: {
		const amqp_basic_ack_t *ack = f->payload.method.decoded;

		answer(b, ack->delivery_tag, ack->multiple, true);
		return QIO_OK;
	}
	case AMQP_BASIC_NACK_METHOD: {
		const amqp_basic_nack_t *nack = f->payload.method.decoded;

		answer(b, nack->delivery_tag, nack->multiple, false);
		return QIO_OK;
	}
	case AMQP_BASIC_RETURN_METHOD: {
		const amqp_basic_return_t *ret = f->payload.method.decoded;

		b->returning = true;
		snprintf(b->why, sizeof b->why, "the broker returned the message as unroutable: %d %.*s",
				 ret->reply_code, (int) ret->reply_text.len, (const char *) ret->reply_text.bytes);
		return QIO_OK;
	}
	case AMQP_CHANNEL_CLOSE_METHOD:
	case AMQP_CONNECTION_CLOSE_METHOD:
		return closed(b->c, f, deadline_ms, why);
	default:
		return QIO_OK; /* connection.blocked (a resource alarm): the deadline bounds it */
	}
}

/* await_all reads the connection until every message sent is answered for, before the deadline. */
static enum RmqIo
await_all(struct Batch *b, long long deadline_ms, struct RmqResult *why)
{
	amqp_frame_t f;
	struct timeval tv;
	enum RmqIo io;
	int rc;

	while (b->open > 0) {
		rc = rmq_timeval(deadline_ms, &tv) ? amqp_simple_wait_frame_noblock(b->c->st, &f, &tv)
										   : AMQP_STATUS_TIMEOUT;
		if (rc == AMQP_STATUS_TIMEOUT) {
			snprintf(why->error, sizeof why->error, "%s", NO_CONFIRM);
			return QIO_LOST;
		}
		if (rc != AMQP_STATUS_OK) {
			snprintf(why->error, sizeof why->error, "the connection failed before the confirm: %s",
					 amqp_error_string2(rc));
			return QIO_LOST;
		}
		io = one_frame(b, &f, deadline_ms, why);
		amqp_maybe_release_buffers(b->c->st);
		if (io != QIO_OK)
			return io;
	}
	return QIO_OK;
}

/*
 * publish_all sends every message of b, each by its routing key, the writes ending by the
 * deadline; QIO_UNSENT when one could not go (why says why), QIO_LOST when the deadline came as
 * the last went (each went out whole: batch_once tells them that no confirm came).
 */
static enum RmqIo
publish_all(struct Batch *b, const struct RmqTarget *t, long long deadline_ms, struct RmqResult *why)
{
	amqp_basic_properties_t p;
	amqp_table_entry_t entries[RMQ_HEADERS_MAX];
	int rc = AMQP_STATUS_OK;
	bool cut;

	rmq_write_begin(b->c, deadline_ms);
	for (; b->sent < b->n; b->sent++) {
		const struct RmqMessage *m = &b->m[b->sent];
		amqp_bytes_t body = {m->payload_len, (void *) m->payload};

		fill_properties(m, &p, entries);
		if (t->addr.tls)
			ERR_clear_error();
		rc = amqp_basic_publish(b->c->st, RMQ_CHANNEL, amqp_cstring_bytes(t->exchange),
								amqp_cstring_bytes(m->routing_key), t->mandatory, 0, &p, body);
		if (rc != AMQP_STATUS_OK)
			break;
		b->c->published++;
		b->r[b->sent].pending = true;
		b->open++;
	}
	cut = b->cut = rmq_write_end(b->c);
	if (rc != AMQP_STATUS_OK) {
		publish_error(rc, cut, why->error, sizeof why->error);
		return QIO_UNSENT;
	}
	return cut ? QIO_LOST : QIO_OK;
}

/*
 * batch_once publishes m[0..n) on c and awaits every answer; what was not answered for gets the
 * failure (io, its reason in why): retried, unknown when it went out. *answered: how many were.
 * When the deadline cut the publishes, why names the message cut short; those written whole
 * before it went out, and only their confirm is missing.
 */
static enum RmqIo
batch_once(struct RmqConn *c, const struct RmqTarget *t, const struct RmqMessage *m, int n,
		   struct RmqResult *r, long long deadline_ms, int *answered)
{
	struct Batch b = {c, m, r, n, c->published + 1, 0, 0, false, false, false, ""};
	struct RmqResult why = {0};
	enum RmqIo io = publish_all(&b, t, deadline_ms, &why);
	int i;

	if (io == QIO_OK)
		io = await_all(&b, deadline_ms, &why);
	*answered = b.sent - b.open;
	for (i = 0; io != QIO_OK && i < n; i++) {
		if (i < b.sent && !r[i].pending)
			continue;
		outcome_of(io, &r[i]);
		r[i].unknown = i < b.sent && io != QIO_SETUP;
		r[i].pending = false;
		snprintf(r[i].error, sizeof r[i].error, "%s", b.cut && i < b.sent ? NO_CONFIRM : why.error);
	}
	return io;
}

/* fail_all gives each of r[0..n) the failure io, with error (nothing went out). */
static void
fail_all(struct RmqResult *r, int n, enum RmqIo io, const char *error)
{
	int i;

	for (i = 0; i < n; i++) {
		outcome_of(io, &r[i]);
		r[i].unknown = false;
		snprintf(r[i].error, sizeof r[i].error, "%s", error);
	}
}

void
rmq_publish_many(struct RmqSession *s, const struct RmqTarget *t, const struct RmqMessage *m, int n,
				 struct RmqResult *r)
{
	char err[sizeof r->error];
	enum RmqIo io;
	int answered;

	memset(r, 0, (size_t) n * sizeof *r);
	s->deadline_ms = now_us() / 1000 + t->timeout_ms;
	if (s->conn != NULL && (!rmq_conn_same(s->conn, &t->addr) || !still_open(s->conn)))
		rmq_session_close(s);
	for (;;) {
		s->reused = s->conn != NULL;
		if (s->conn == NULL) {
			s->conn = rmq_conn_open(&t->addr, s->deadline_ms, &io, err, sizeof err);
			if (s->conn == NULL) {
				fail_all(r, n, io, err);
				return;
			}
		}
		io = batch_once(s->conn, t, m, n, r, s->deadline_ms, &answered);
		if (io == QIO_OK)
			return; /* every message answered for: the connection is clean for the next batch */
		rmq_session_close(s);
		/*
		 * A kept connection the broker or the network closed meanwhile, before any answer: the
		 * batch once more, on a new one (a message that went out on the old one is dropped by its
		 * message_id).
		 */
		if (!s->reused || answered > 0 || (io != QIO_LOST && io != QIO_UNSENT) ||
			now_us() / 1000 >= s->deadline_ms)
			return;
		memset(r, 0, (size_t) n * sizeof *r);
	}
}

void
rmq_session_close(struct RmqSession *s)
{
	rmq_conn_close(s->conn);
	s->conn = NULL;
}
