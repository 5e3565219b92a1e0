/*
 * dest_event.c - a destination event (redis, kafka, rabbitmq): the steps its kinds share.
 */
#include "dest_event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secrets.h"

void *
dest_event_open(struct Attempt *a, const struct DestSteps *kind)
{
	struct DestEvent *e = calloc(1, sizeof *e);

	if (e != NULL) {
		e->a = a;
		e->kind = kind;
	}
	return e;
}

void
dest_event_close(void *st)
{
	struct DestEvent *e = st;

	if (e == NULL)
		return;
	dest_row_free(&e->r);
	free(e->error);
	free(e->detail);
	free(e);
}

/* claimed notes the attempt's number as text, once the claim is read (c). */
static enum HeldClaim
claimed(struct DestEvent *e, enum HeldClaim c)
{
	snprintf(e->attempt, sizeof e->attempt, "%d", e->a->attempt);
	return c;
}

enum HeldClaim
dest_event_read_row(void *st, const PGresult *res, int row)
{
	struct DestEvent *e = st;

	return claimed(e, dest_row_read(&e->r, &e->a->attempt, res, row));
}

enum HeldClaim
dest_event_read(void *st, PGresult *res, bool trusted, const char *fetch_error)
{
	struct DestEvent *e = st;

	(void) trusted; /* the claim names nothing of another schema, and fetches nothing */
	(void) fetch_error;
	return claimed(e, dest_row_read_one(&e->r, &e->a->attempt, res));
}

const char *
dest_event_text(const json_t *doc, const char *key)
{
	return json_string_value(json_object_get(doc, key));
}

long
dest_event_timeout_ms(const struct DestEvent *e, const json_t *own)
{
	long ms = json_is_integer(own)  ? (long) json_integer_value(own)
			  : e->r.timeout_ms > 0 ? e->r.timeout_ms
									: 30000;

	if (e->a->ws->max_delivery_time_ms > 0 && e->a->ws->max_delivery_time_ms < ms)
		ms = e->a->ws->max_delivery_time_ms;
	return ms;
}

void
dest_event_nothing_sent(struct DestEvent *e, struct Verdict *v, enum AttemptResult result, const char *error)
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

void
dest_event_misconfigured(struct DestEvent *e, struct Verdict *v, const char *error, const char *hint)
{
	attempt_config_error(e->a->rep, CE_DESTINATION, SECRETS_SQLSTATE, hint);
	dest_event_nothing_sent(e, v, AR_TRANSIENT, error);
}

void
dest_event_detail(struct DestEvent *e, struct Verdict *v, json_t *d)
{
	char *text = d != NULL ? json_dumps(d, JSON_COMPACT) : NULL;

	json_decref(d);
	free(e->detail);
	e->detail = text;
	v->detail = text; /* NULL (out of memory): the log row goes without its detail */
}

/*
 * target_of fills t from doc (the channel's settings, NULL when it has none), the password
 * resolved for e's channel only. False with the reason in err; *config: it is the set-up's (a
 * secret that cannot be read).
 */
static bool
target_of(struct DestEvent *e, json_t *doc, void *t, bool *config, char *err, size_t errlen)
{
	const char *ref = dest_event_text(doc, "password");
	struct SecretOwner o = {SO_CHANNEL, e->r.channel, e->a->ws->secrets_dir, e->a->ws->secret_env};
	const char **password = doc != NULL ? e->kind->target(e, doc, t) : NULL;

	*config = false;
	if (password == NULL) {
		if (doc == NULL)
			snprintf(err, errlen, "the channel has no %s settings", e->kind->name);
		else
			snprintf(err, errlen, "the channel's %s settings are incomplete", e->kind->name);
		return false;
	}
	/* a batch that falls back to one event at a time resolves the first event's again */
	dest_row_forget_password(&e->r);
	if (ref != NULL && !secrets_resolve(ref, &o, &e->r.password, err, errlen)) {
		*config = true;
		return false;
	}
	*password = e->r.password;
	return true;
}

/* no_target is e's verdict when its channel's settings made no target: target_of's reason, err. */
static void
no_target(struct DestEvent *e, struct Verdict *v, bool config, const char *err)
{
	if (config)
		attempt_config_error(e->a->rep, CE_SECRET, SECRETS_SQLSTATE, secrets_hint(err));
	dest_event_nothing_sent(e, v, config ? AR_TRANSIENT : AR_PERMANENT, err);
}

/* send sends sts[0..n) to t with the kind's send; false, nothing sent, when memory ran out. */
static bool
send(const struct DestSteps *k, void *const *sts, int n, json_t *doc, const void *t, struct Verdict *vs)
{
	if (n > 1 || k->one == NULL)
		return k->many(sts, n, doc, t, vs);
	k->one(sts[0], doc, t, vs);
	return true;
}

void
dest_event_deliver_many(void *const *sts, int n, struct Verdict *vs)
{
	struct DestEvent *first = sts[0];
	json_t *doc = first->r.settings != NULL ? json_loads(first->r.settings, 0, NULL) : NULL;
	void *t = calloc(1, first->kind->target_size);
	bool config, sent = false;
	char err[1024];
	int i;

	/* the events are of one channel: its settings, and its secret, are read once */
	if (t != NULL && target_of(first, doc, t, &config, err, sizeof err))
		sent = send(first->kind, sts, n, doc, t, vs);
	else if (t != NULL)
		for (sent = true, i = 0; i < n; i++)
			no_target(sts[i], &vs[i], config, err);
	json_decref(doc);
	free(t);
	/* no memory for the batch: each event as alone; for one alone, a transient failure */
	if (!sent && n == 1)
		dest_event_nothing_sent(first, &vs[0], AR_TRANSIENT, "out of memory");
	for (i = 0; !sent && n > 1 && i < n; i++)
		dest_event_deliver_many(&sts[i], 1, &vs[i]);
}

void
dest_event_deliver(void *st, struct Verdict *v)
{
	dest_event_deliver_many(&st, 1, v);
}
