/*
 * redis_stream.c - one event appended to a Redis stream, once (redis_stream.h).
 */
#include "redis_stream.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "clock.h"

/*
 * KEYS[1] the stream, KEYS[2] the marker of the event; ARGV[1] the marker's lifetime in seconds,
 * ARGV[2] MAXLEN (0: none), the rest the entry's fields and values. The marker holds the entry's
 * id: an attempt that finds it answers with that id and appends nothing. pcall, so that the
 * server's own error (READONLY after a failover, OOM) comes back as itself, not wrapped in the
 * script's error as Redis before 7 does; an append whose marker could not be set is still an
 * append (answered as one: a second attempt could add a second entry, never lose the first).
 */
static const char SCRIPT[] =
	"local prev = redis.call('GET', KEYS[2])\n"
	"if prev then return {prev, 1} end\n"
	"local id\n"
	"if ARGV[2] ~= '0' then\n"
	"  id = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 3))\n"
	"else\n"
	"  id = redis.pcall('XADD', KEYS[1], '*', unpack(ARGV, 3))\n"
	"end\n"
	"if type(id) == 'table' and id.err then return id end\n"
	"redis.pcall('SET', KEYS[2], id, 'EX', ARGV[1])\n"
	"return {id, 0}\n";

/*
 * The SHA-1 of SCRIPT in hex, as EVALSHA names it: a constant, not computed. OpenSSL 3's first
 * digest sets up its default provider, which left 2 MB more of libcrypto resident and 0.6 MB more
 * heap in a Processor that used no TLS otherwise (docs/design/memory.md). test_redis_stream
 * checks it against SCRIPT.
 */
static const char SCRIPT_SHA1[] = "8b1983d0da324905b286ebb5723be65023fab9cd";

/* The arguments of EVAL/EVALSHA: command, script, numkeys, 2 keys, 2 ARGV, 8 field pairs. */
#define MAX_ARGS 23

enum RedisOutcome
redis_error_outcome(const char *reply, bool *reconnect)
{
	static const char *const passing[] = {"OOM",        "LOADING",    "BUSY",        "TRYAGAIN", "READONLY",
										  "NOREPLICAS", "MASTERDOWN", "CLUSTERDOWN", "MISCONF",  "UNBLOCKED"};
	size_t i, n = strcspn(reply, " ");

	*reconnect = false;
	for (i = 0; i < sizeof passing / sizeof passing[0]; i++)
		if (n == strlen(passing[i]) && strncmp(reply, passing[i], n) == 0) {
			*reconnect = strcmp(passing[i], "READONLY") == 0 || strcmp(passing[i], "LOADING") == 0 ||
						 strcmp(passing[i], "MASTERDOWN") == 0;
			return RO_RETRY;
		}
	return RO_CONFIG;
}

const char *
redis_stream_script(void)
{
	return SCRIPT;
}

const char *
redis_stream_script_sha1(void)
{
	return SCRIPT_SHA1;
}

/* Where the arguments of one append are kept while the command is made. */
struct Args {
	const char *v[MAX_ARGS];
	size_t len[MAX_ARGS];
	int n;
	char marker[1024];
	char ttl[24];
	char maxlen[24];
};

static void
add(struct Args *a, const char *s, size_t len)
{
	a->v[a->n] = s;
	a->len[a->n++] = len;
}

static void
add_str(struct Args *a, const char *s)
{
	add(a, s, strlen(s));
}

/*
 * build_args makes EVALSHA (or EVAL, by_text) for e. The marker's key names the stream in braces,
 * so that a Redis Cluster would keep it in the stream's slot (for a stream name without braces).
 */
static bool
build_args(struct Args *a, const struct RedisStreamTarget *t, const struct RedisStreamEntry *e, bool by_text)
{
	if ((size_t) snprintf(a->marker, sizeof a->marker, "{%s}:pg_relay:sent:%s", t->stream, e->event_id) >=
		sizeof a->marker)
		return false;
	snprintf(a->ttl, sizeof a->ttl, "%ld", t->dedup_ttl_s);
	snprintf(a->maxlen, sizeof a->maxlen, "%ld", t->maxlen > 0 ? t->maxlen : 0);
	a->n = 0;
	add_str(a, by_text ? "EVAL" : "EVALSHA");
	if (by_text)
		add(a, SCRIPT, sizeof SCRIPT - 1);
	else
		add_str(a, SCRIPT_SHA1);
	add_str(a, "2");
	add_str(a, t->stream);
	add_str(a, a->marker);
	add_str(a, a->ttl);
	add_str(a, a->maxlen);
	add_str(a, "event_id");
	add_str(a, e->event_id);
	add_str(a, "channel");
	add_str(a, e->channel);
	add_str(a, "attempt");
	add_str(a, e->attempt);
	add_str(a, "queued_at");
	add_str(a, e->queued_at);
	if (e->key != NULL) {
		add_str(a, "key");
		add_str(a, e->key);
	}
	if (e->publication_id != NULL) {
		add_str(a, "publication_id");
		add_str(a, e->publication_id);
	}
	if (e->event_type != NULL) {
		add_str(a, "event_type");
		add_str(a, e->event_type);
	}
	add_str(a, "payload");
	add(a, e->payload, e->payload_len);
	return true;
}

/* read_answer takes the script's answer {id, was_there} into r. */
static void
read_answer(const redisReply *rep, struct RedisStreamResult *r)
{
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING ||
		rep->element[1]->type != REDIS_REPLY_INTEGER) {
		r->outcome = RO_RETRY;
		r->unknown = true;
		snprintf(r->error, sizeof r->error, "unexpected answer from the server's script");
		return;
	}
	snprintf(r->entry_id, sizeof r->entry_id, "%.*s", (int) rep->element[0]->len, rep->element[0]->str);
	r->outcome = rep->element[1]->integer ? RO_DUPLICATE : RO_SENT;
}

/* connect_session makes sure s has a connection to t's server. */
static bool
connect_session(struct RedisSession *s, const struct RedisStreamTarget *t, struct RedisStreamResult *r)
{
	enum RedisIo io;

	if (s->conn != NULL && redis_conn_same(s->conn, &t->addr)) {
		s->reused = true;
		return true;
	}
	redis_session_close(s);
	s->reused = false;
	s->conn = redis_conn_open(&t->addr, s->deadline_ms, &io, r->error, sizeof r->error);
	if (s->conn != NULL)
		return true;
	r->outcome = io == RIO_AUTH || io == RIO_SETUP ? RO_CONFIG : RO_RETRY;
	return false;
}

/*
 * run_script sends the append by EVALSHA, and by EVAL when the server does not know the script
 * yet (NOSCRIPT: a new server, or SCRIPT FLUSH). The reply, or NULL with r filled.
 */
static redisReply *
run_script(struct RedisSession *s, const struct RedisStreamTarget *t, const struct RedisStreamEntry *e,
		   struct RedisStreamResult *r)
{
	struct Args a;
	redisReply *rep = NULL;
	int round;

	for (round = 0; round < 2; round++) {
		bool by_text = !s->script_known || round == 1;
		enum RedisIo io;

		if (!build_args(&a, t, e, by_text)) {
			r->outcome = RO_CONFIG;
			snprintf(r->error, sizeof r->error, "the stream's name is too long");
			return NULL;
		}
		io = redis_conn_command(s->conn, a.n, a.v, a.len, s->deadline_ms, &rep, r->error, sizeof r->error);
		if (io != RIO_OK) {
			r->outcome = RO_RETRY;
			r->unknown = io == RIO_SENT_LOST;
			redis_session_close(s);
			return NULL;
		}
		if (rep->type != REDIS_REPLY_ERROR || strncmp(rep->str, "NOSCRIPT", 8) != 0 || by_text)
			break;
		freeReplyObject(rep);
		rep = NULL;
	}
	s->script_known = true;
	return rep;
}

/*
 * take_reply takes the server's reply to one append into r; *reconnect is set when the connection
 * should not be reused (redis_error_outcome).
 */
static void
take_reply(const redisReply *rep, struct RedisStreamResult *r, bool *reconnect)
{
	bool again = false;

	if (rep->type == REDIS_REPLY_ERROR) {
		r->outcome = redis_error_outcome(rep->str, &again);
		snprintf(r->error, sizeof r->error, "the server refused the append: %.*s",
				 (int) (rep->len > 400 ? 400 : rep->len), rep->str);
	} else {
		read_answer(rep, r);
	}
	*reconnect = *reconnect || again;
}

void
redis_stream_append(struct RedisSession *s, const struct RedisStreamTarget *t,
					const struct RedisStreamEntry *e, struct RedisStreamResult *r)
{
	redisReply *rep;
	bool reconnect = false;

	memset(r, 0, sizeof *r);
	s->deadline_ms = now_us() / 1000 + t->timeout_ms; /* one for the whole attempt */
	if (!connect_session(s, t, r))
		return;
	rep = run_script(s, t, e, r);
	/*
	 * A kept connection the server has closed meanwhile (its idle timeout, a restart) fails the
	 * first command: once, on a new connection, while the deadline lasts. The script appends once
	 * whatever reached the server before.
	 */
	if (rep == NULL && r->outcome == RO_RETRY && s->reused && now_us() / 1000 < s->deadline_ms) {
		memset(r, 0, sizeof *r);
		if (!connect_session(s, t, r))
			return;
		rep = run_script(s, t, e, r);
	}
	if (rep == NULL)
		return;
	take_reply(rep, r, &reconnect);
	if (reconnect)
		redis_session_close(s);
	freeReplyObject(rep);
}

/* all_as gives every result of r[0..n) what r[0] says (a failure before anything was sent). */
static void
all_as(struct RedisStreamResult *r, int n)
{
	int i;

	for (i = 1; i < n; i++)
		r[i] = r[0];
}

/*
 * send_many formats the appends of e[0..n) into one buffer (EVALSHA, or EVAL while the server may
 * not know the script) and sends it. False with every result filled when it could not.
 */
static bool
send_many(struct RedisSession *s, const struct RedisStreamTarget *t, const struct RedisStreamEntry *e, int n,
		  struct RedisStreamResult *r)
{
	struct Buf out = BUF_INIT;
	struct Args a;
	enum RedisIo io;
	int i;

	for (i = 0; i < n; i++) {
		char *cmd = NULL;
		int len;

		if (!build_args(&a, t, &e[i], !s->script_known)) {
			buf_free(&out);
			r[0].outcome = RO_CONFIG;
			snprintf(r[0].error, sizeof r[0].error, "the stream's name is too long");
			all_as(r, n);
			return false;
		}
		len = redisFormatCommandArgv(&cmd, a.n, a.v, a.len);
		if (len >= 0)
			buf_append(&out, cmd, (size_t) len);
		redisFreeCommand(cmd);
		if (len < 0)
			out.oom = true;
	}
	io = out.oom ? RIO_UNSENT
				 : redis_conn_send(s->conn, out.data, out.len, s->deadline_ms, r[0].error, sizeof r[0].error);
	if (out.oom)
		snprintf(r[0].error, sizeof r[0].error, "out of memory formatting the appends");
	buf_free(&out);
	if (io == RIO_OK)
		return true;
	r[0].outcome = RO_RETRY;
	r[0].unknown = io == RIO_SENT_LOST;
	all_as(r, n);
	redis_session_close(s);
	return false;
}

/*
 * pipeline sends the appends of e[0..n) at once and reads their replies, in order, into r. A
 * connection lost on the way leaves the appends not answered unknown (RO_RETRY: the marker makes
 * their retry append nothing twice). Returns how many replies were read.
 */
static int
pipeline(struct RedisSession *s, const struct RedisStreamTarget *t, const struct RedisStreamEntry *e, int n,
		 struct RedisStreamResult *r)
{
	bool reconnect = false, by_text = !s->script_known;
	int i;

	if (!send_many(s, t, e, n, r))
		return 0;
	for (i = 0; i < n; i++) {
		redisReply *rep;

		if (redis_conn_read(s->conn, s->deadline_ms, &rep, r[i].error, sizeof r[i].error) != RIO_OK) {
			r[i].outcome = RO_RETRY;
			r[i].unknown = true;
			all_as(r + i, n - i);
			redis_session_close(s);
			return i;
		}
		r[i].noscript = !by_text && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0;
		if (!r[i].noscript)
			take_reply(rep, &r[i], &reconnect);
		freeReplyObject(rep);
	}
	s->script_known = true;
	if (reconnect)
		redis_session_close(s);
	return n;
}

void
redis_stream_append_many(struct RedisSession *s, const struct RedisStreamTarget *t,
						 const struct RedisStreamEntry *e, int n, struct RedisStreamResult *r)
{
	int i, got;

	memset(r, 0, (size_t) n * sizeof *r);
	s->deadline_ms = now_us() / 1000 + t->timeout_ms; /* one for the whole batch */
	if (!connect_session(s, t, &r[0])) {
		all_as(r, n);
		return;
	}
	got = pipeline(s, t, e, n, r);
	/* a kept connection the server closed meanwhile: once more on a new one, as one append does */
	if (got == 0 && r[0].outcome == RO_RETRY && s->reused && now_us() / 1000 < s->deadline_ms) {
		memset(r, 0, (size_t) n * sizeof *r);
		if (!connect_session(s, t, &r[0])) {
			all_as(r, n);
			return;
		}
		got = pipeline(s, t, e, n, r);
	}
	/* the server did not know the script (a SCRIPT FLUSH meanwhile): those again, by its text */
	for (i = 0; i < got; i++)
		if (r[i].noscript)
			redis_stream_append(s, t, &e[i], &r[i]);
}

void
redis_session_close(struct RedisSession *s)
{
	redis_conn_close(s->conn);
	s->conn = NULL;
	s->script_known = false;
}
