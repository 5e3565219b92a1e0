/*
 * smtp_result.c - classify one SMTP attempt (RFC 5321 reply classes, libcurl error codes).
 *
 * The rules, in the order they are tried (the first that applies wins):
 *   libcurl OK          each RCPT reply decides its recipient: 2xx sent, 4xx retrying, 5xx
 *                       failed; all sent = DS_SENT, any retrying = DS_TRANSIENT, else DS_PARTIAL
 *   body sent, no reply connection lost or timed out after the whole message was handed over:
 *                       DS_TRANSIENT with unknown_outcome (it may have been delivered)
 *   a reply to end-of-data, DATA, all RCPTs or MAIL that is 4xx/5xx: transient/permanent
 *   AUTH refused        DS_PERMANENT (configuration), unless the server said 4xx
 *   STARTTLS missing    DS_PERMANENT (configuration), unless STARTTLS was answered 4xx
 *   certificate failure DS_PERMANENT (configuration)
 *   greeting/EHLO 5xx   DS_PERMANENT; 4xx (421) transient
 *   bad URL / option    DS_PERMANENT (configuration)
 *   anything else       DS_TRANSIENT: network, timeout, TLS handshake
 */
#include "smtp_result.h"
#include "utf8.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Verdict is the outcome before recipients are filled in. */
struct Verdict {
	enum DeliveryStatus status;
	const struct SmtpReply *reply; /* the reply that decided, or NULL */
	bool unknown;
};

/* set_reply copies a reply into r->reply_code / r->reply. */
static bool
set_reply(struct DeliveryResult *r, const struct SmtpReply *rep)
{
	free(r->reply);
	r->reply = NULL;
	r->reply_code = rep ? rep->code : 0;
	if (rep == NULL || rep->text == NULL)
		return true;
	r->reply = strdup(rep->text);
	return r->reply != NULL;
}

/* class_status maps a 4xx/5xx reply to transient/permanent. */
static enum DeliveryStatus
class_status(int code)
{
	return code / 100 == 5 ? DS_PERMANENT : DS_TRANSIENT;
}

/* any_rcpt_class: some RCPT reply of the class (2, 4 or 5). */
static bool
any_rcpt_class(const struct SmtpDialog *d, int cls)
{
	int i;

	for (i = 0; i < d->n_rcpt; i++)
		if (d->rcpt[i].code / 100 == cls)
			return true;
	return false;
}

/* text_of returns a reply's text for messages ("" when none). */
static const char *
text_of(const struct SmtpReply *rep)
{
	return rep && rep->text ? rep->text : "";
}

/* verdict_replies decides from a negative server reply after the connection was set up. */
static bool
verdict_replies(const struct SmtpAttempt *a, struct Verdict *v, struct DeliveryResult *r)
{
	const struct SmtpDialog *d = a->d;

	if (d->final.code != 0) {
		v->reply = &d->final;
		utf8_snprintf(r->error, sizeof r->error, "the server refused the message after it was sent: %s",
					  text_of(v->reply));
	} else if (d->data.code != 0 && d->data.code != 354) {
		v->reply = &d->data;
		utf8_snprintf(r->error, sizeof r->error, "the server refused DATA: %s", text_of(v->reply));
	} else if (d->n_rcpt > 0 && !any_rcpt_class(d, 2) && d->data.code == 0) {
		/* libcurl stops when every RCPT failed; the 4xx ones may succeed later */
		v->status = any_rcpt_class(d, 4) ? DS_TRANSIENT : DS_PERMANENT;
		v->reply = &d->rcpt[d->n_rcpt - 1];
		utf8_snprintf(r->error, sizeof r->error, "every recipient was refused (last: %s)", text_of(v->reply));
		return true;
	} else if (d->mail.code / 100 == 4 || d->mail.code / 100 == 5) {
		v->reply = &d->mail;
		utf8_snprintf(r->error, sizeof r->error, "the server refused the sender (MAIL FROM): %s",
					  text_of(v->reply));
	} else
		return false;
	v->status = class_status(v->reply->code);
	return true;
}

/* verdict_setup decides failures of connecting, TLS and AUTH. */
static void
verdict_setup(const struct SmtpAttempt *a, struct Verdict *v, struct DeliveryResult *r)
{
	const struct SmtpDialog *d = a->d;
	const char *cerr = a->curl_error ? a->curl_error : "";

	v->status = DS_TRANSIENT;
	if (a->curl_code == CURLE_LOGIN_DENIED) {
		v->reply = d->auth.code ? &d->auth : NULL;
		if (d->auth.code / 100 == 4) {
			utf8_snprintf(r->error, sizeof r->error, "temporary authentication failure: %s",
						  text_of(v->reply));
			return;
		}
		v->status = DS_PERMANENT;
		utf8_snprintf(r->error, sizeof r->error,
					  "authentication failed; check the profile's username and password or "
					  "oauth_token (configuration): %s",
					  d->auth.code ? text_of(v->reply) : cerr);
	} else if (a->curl_code == CURLE_USE_SSL_FAILED) {
		v->reply = d->starttls.code ? &d->starttls : NULL;
		if (d->starttls.code / 100 == 4) {
			utf8_snprintf(r->error, sizeof r->error, "the server cannot start TLS now: %s",
						  text_of(v->reply));
			return;
		}
		v->status = DS_PERMANENT;
		utf8_snprintf(r->error, sizeof r->error,
					  "security=starttls requires STARTTLS but the server %s (configuration: fix "
					  "the server, or use security=tls or starttls_optional): %s",
					  d->starttls.code ? "refused it" : "does not offer it", cerr);
	} else if (transport_curl_cert_error(a->curl_code)) {
		v->status = DS_PERMANENT;
		utf8_snprintf(r->error, sizeof r->error,
					  "TLS certificate verification failed (configuration: check profile.smtp.host "
					  "against the certificate, and profile.smtp.ca_file): %s",
					  cerr);
	} else if (d->last.code / 100 == 4 || d->last.code / 100 == 5) {
		v->reply = &d->last;
		v->status = class_status(d->last.code);
		utf8_snprintf(r->error, sizeof r->error, "the server refused the session %s: %s",
					  smtp_stage_name(d->last_stage), text_of(v->reply));
	} else if ((transport_curl_config_error(a->curl_code) || a->curl_code == CURLE_LOGIN_DENIED)) {
		v->status = DS_PERMANENT;
		utf8_snprintf(r->error, sizeof r->error, "the SMTP request is invalid (configuration): %s", cerr);
	} else
		utf8_snprintf(r->error, sizeof r->error, "%s %s: %s",
					  a->curl_code == CURLE_OPERATION_TIMEDOUT ? "timed out" : "connection failed",
					  smtp_stage_name(d->stage),
					  cerr[0] ? cerr : curl_easy_strerror((CURLcode) a->curl_code));
}

/* verdict_of decides the attempt's status when libcurl reported an error. */
static void
verdict_of(const struct SmtpAttempt *a, struct Verdict *v, struct DeliveryResult *r)
{
	const struct SmtpDialog *d = a->d;

	memset(v, 0, sizeof(*v));
	if (d->body_complete && d->final.code == 0) {
		v->status = DS_TRANSIENT;
		v->unknown = true;
		utf8_snprintf(r->error, sizeof r->error,
					  "the connection was lost after the message was sent and before the server "
					  "replied; it may have been delivered: %s",
					  a->curl_error && a->curl_error[0] ? a->curl_error
														: curl_easy_strerror((CURLcode) a->curl_code));
		return;
	}
	if (a->curl_code != CURLE_LOGIN_DENIED && a->curl_code != CURLE_USE_SSL_FAILED &&
		verdict_replies(a, v, r))
		return;
	verdict_setup(a, v, r);
}

/* rcpt_status is one recipient's outcome under the attempt's overall status. */
static enum RcptStatus
rcpt_status(const struct SmtpReply *rep, enum DeliveryStatus overall, bool delivered)
{
	int cls = rep ? rep->code / 100 : 0;

	if (delivered)
		return cls == 2 ? RS_SENT : cls == 5 ? RS_FAILED : RS_RETRYING;
	/* nothing was delivered: a recipient refused for good stays failed, the rest follow */
	if (cls == 5 || overall == DS_PERMANENT)
		return RS_FAILED;
	return RS_RETRYING;
}

/* fill_rcpts writes one RcptResult per envelope recipient, pairing RCPT replies in order. */
static bool
fill_rcpts(const struct SmtpAttempt *a, struct DeliveryResult *r, bool delivered)
{
	int i;

	r->rcpt = calloc((size_t) (a->n_env > 0 ? a->n_env : 1), sizeof(*r->rcpt));
	if (r->rcpt == NULL)
		return false;
	r->n_rcpt = a->n_env;
	for (i = 0; i < a->n_env; i++) {
		const struct SmtpReply *rep = i < a->d->n_rcpt ? &a->d->rcpt[i] : NULL;

		r->rcpt[i].id = a->env[i]->id;
		r->rcpt[i].status = rcpt_status(rep, r->status, delivered);
		r->rcpt[i].code = rep ? rep->code : 0;
		if (rep && rep->text && (r->rcpt[i].reply = strdup(rep->text)) == NULL)
			return false;
	}
	return true;
}

/* fill_delivered classifies a transfer libcurl completed (the final reply was 250). */
static bool
fill_delivered(const struct SmtpAttempt *a, struct DeliveryResult *r)
{
	int i, sent = 0, retry = 0, failed = 0;

	r->status = DS_SENT;
	if (!fill_rcpts(a, r, true) || !set_reply(r, &a->d->final))
		return false;
	for (i = 0; i < r->n_rcpt; i++) {
		sent += r->rcpt[i].status == RS_SENT;
		retry += r->rcpt[i].status == RS_RETRYING;
		failed += r->rcpt[i].status == RS_FAILED;
	}
	if (sent == r->n_rcpt)
		return true;
	r->status = retry > 0 ? DS_TRANSIENT : DS_PARTIAL;
	utf8_snprintf(r->error, sizeof r->error, "%d of %d recipients were refused (%d temporarily)",
				  retry + failed, r->n_rcpt, retry);
	return true;
}

bool
smtp_result_fill(const struct SmtpAttempt *a, struct DeliveryResult *r)
{
	struct Verdict v;

	r->error[0] = '\0';
	if (a->d->oom)
		return false;
	if (a->curl_code == CURLE_OK)
		return fill_delivered(a, r);
	verdict_of(a, &v, r);
	r->status = v.status;
	r->unknown_outcome = v.unknown;
	/* the reply that decided, else the last one seen; none when the final one never came */
	return fill_rcpts(a, r, false) && set_reply(r, v.reply ? v.reply : v.unknown ? NULL : &a->d->last);
}

bool
smtp_result_retry_fresh(const struct SmtpAttempt *a, bool reused)
{
	const struct SmtpDialog *d = a->d;

	if (!reused || a->curl_code == CURLE_OK || d->data.code == 354 || d->body_started)
		return false;
	if (a->curl_code == CURLE_OPERATION_TIMEDOUT)
		return false; /* the time budget is spent */
	return d->last.code == 0 || d->last.code == 421;
}
