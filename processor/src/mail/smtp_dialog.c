/*
 * smtp_dialog.c - attribute SMTP replies to commands; keep a redacted transcript.
 *
 * Redaction rules for the transcript (docs/interface.md, "trace"): the AUTH command keeps only
 * its mechanism, every SASL line after it and every 334 challenge becomes [redacted], any
 * registered secret is cut out of every line, and the message shows its header fields and then
 * "[body N bytes]".
 */
#include "smtp_dialog.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "https.h"
#include "utf8.h"

static void
reply_clear(struct SmtpReply *r)
{
	free(r->text);
	r->text = NULL;
	r->code = 0;
}

/* reply_copy stores a copy of src in dst; a failed copy keeps the code and sets d->oom. */
static void
reply_copy(struct SmtpDialog *d, struct SmtpReply *dst, const struct SmtpReply *src)
{
	reply_clear(dst);
	dst->code = src->code;
	if (src->text != NULL && (dst->text = strdup(src->text)) == NULL)
		d->oom = true;
}

void
smtp_dialog_init(struct SmtpDialog *d, struct Buf *trace)
{
	memset(d, 0, sizeof(*d));
	d->pending = (struct Buf) BUF_INIT;
	d->trace = trace;
}

void
smtp_dialog_reset(struct SmtpDialog *d)
{
	int i;

	buf_reset(&d->pending);
	d->pending_code = 0;
	reply_clear(&d->last);
	reply_clear(&d->auth);
	reply_clear(&d->starttls);
	reply_clear(&d->mail);
	for (i = 0; i < d->n_rcpt; i++)
		reply_clear(&d->rcpt[i]);
	d->n_rcpt = 0;
	reply_clear(&d->data);
	reply_clear(&d->final);
	d->stage = STG_CONNECT;
	d->last_stage = STG_CONNECT;
	d->in_sasl = false;
	d->starttls_offered = false;
	d->body_started = false;
	d->body_complete = false;
	d->oom = false;
}

void
smtp_dialog_free(struct SmtpDialog *d)
{
	if (d == NULL)
		return;
	smtp_dialog_reset(d);
	free(d->rcpt);
	buf_free(&d->pending);
	d->rcpt = NULL;
	d->cap_rcpt = 0;
}

void
smtp_dialog_add_secret(struct SmtpDialog *d, const char *secret)
{
	int i;

	if (secret == NULL || secret[0] == '\0')
		return;
	for (i = 0; i < SMTP_DIALOG_SECRETS; i++)
		if (d->secrets[i] == NULL) {
			d->secrets[i] = secret;
			return;
		}
}

/* trace_line appends "<prefix>text\r\n" to the transcript with the secrets cut out. */
static void
trace_line(struct SmtpDialog *d, const char *prefix, const char *text, size_t len)
{
	struct Buf line = BUF_INIT;

	if (d->trace == NULL || d->trace->len >= SMTP_TRACE_MAX)
		return;
	/* The server's lines are bytes of its choosing: the transcript keeps valid UTF-8 only. */
	if (buf_puts(&line, prefix) && utf8_clean(&line, text, len, SMTP_LINE_MAX) &&
		buf_redact(&line, d->secrets, SMTP_DIALOG_SECRETS)) {
		if (d->trace->len + line.len >= SMTP_TRACE_MAX)
			(void) buf_puts(d->trace, "* [trace truncated]\r\n");
		else
			(void) (buf_append(d->trace, line.data, line.len) && buf_puts(d->trace, "\r\n"));
	}
	buf_free(&line);
}

/* chomp returns len without a trailing CRLF / LF. */
static size_t
chomp(const char *s, size_t len)
{
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
		len--;
	return len;
}

/* verb_is: the command line starts with the verb, case-insensitively, followed by end or blank. */
static bool
verb_is(const char *line, size_t len, const char *verb)
{
	size_t n = strlen(verb);

	return len >= n && strncasecmp(line, verb, n) == 0 && (len == n || line[n] == ' ');
}

/* stage_of maps a command to the stage that awaits its reply. */
static enum SmtpStage
stage_of(const char *line, size_t len)
{
	if (verb_is(line, len, "EHLO") || verb_is(line, len, "HELO"))
		return STG_EHLO;
	if (verb_is(line, len, "STARTTLS"))
		return STG_STARTTLS;
	if (verb_is(line, len, "AUTH"))
		return STG_AUTH;
	if (verb_is(line, len, "MAIL"))
		return STG_MAIL;
	if (verb_is(line, len, "RCPT"))
		return STG_RCPT;
	if (verb_is(line, len, "DATA"))
		return STG_DATA;
	return STG_OTHER;
}

void
smtp_dialog_command(struct SmtpDialog *d, const char *line, size_t len)
{
	len = chomp(line, len);
	if (d->in_sasl) {
		/* a SASL response: credentials, whatever the mechanism */
		trace_line(d, "C: ", "[redacted]", 10);
		return;
	}
	d->stage = stage_of(line, len);
	if (d->stage == STG_AUTH) {
		/* keep "AUTH <MECH>", hide an initial response */
		size_t mech_end = 5;

		while (mech_end < len && line[mech_end] != ' ')
			mech_end++;
		trace_line(d, "C: ", line, mech_end);
		if (mech_end < len)
			trace_line(d, "C: ", "[redacted]", 10);
		return;
	}
	trace_line(d, "C: ", line, len);
}

/* store_reply files a complete reply under the stage it answered. */
static void
store_reply(struct SmtpDialog *d, const struct SmtpReply *r)
{
	switch (d->stage) {
	case STG_AUTH:
		/* 334 asks for more credentials; anything else ends the exchange */
		d->in_sasl = r->code == 334;
		if (!d->in_sasl)
			reply_copy(d, &d->auth, r);
		break;
	case STG_STARTTLS:
		reply_copy(d, &d->starttls, r);
		break;
	case STG_MAIL:
		reply_copy(d, &d->mail, r);
		break;
	case STG_RCPT:
		if (d->n_rcpt == d->cap_rcpt) {
			int cap = d->cap_rcpt ? d->cap_rcpt * 2 : 8;
			struct SmtpReply *p = realloc(d->rcpt, (size_t) cap * sizeof(*p));

			if (p == NULL) {
				d->oom = true;
				return;
			}
			d->rcpt = p;
			d->cap_rcpt = cap;
		}
		memset(&d->rcpt[d->n_rcpt], 0, sizeof(d->rcpt[0]));
		reply_copy(d, &d->rcpt[d->n_rcpt++], r);
		break;
	case STG_DATA:
		reply_copy(d, &d->data, r);
		break;
	case STG_BODY:
		reply_copy(d, &d->final, r);
		break;
	case STG_CONNECT:
	case STG_EHLO:
	case STG_OTHER:
		break;
	}
}

/* reply_code parses the three digits of a reply line, or returns 0. */
static int
reply_code(const char *line, size_t len)
{
	if (len < 3 || !isdigit((unsigned char) line[0]) || !isdigit((unsigned char) line[1]) ||
		!isdigit((unsigned char) line[2]))
		return 0;
	return (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
}

/* note_ehlo_keyword remembers whether the EHLO reply offers STARTTLS. */
static void
note_ehlo_keyword(struct SmtpDialog *d, const char *line, size_t len)
{
	if (len >= 12 && strncasecmp(line + 4, "STARTTLS", 8) == 0 && (len == 12 || line[12] == ' '))
		d->starttls_offered = true;
}

void
smtp_dialog_reply_line(struct SmtpDialog *d, const char *line, size_t len)
{
	int code;
	bool last;

	len = chomp(line, len);
	code = reply_code(line, len);
	if (code == 0)
		return; /* not an SMTP reply line: nothing to attribute */
	/* "250-..." continues a multi-line reply, "250 ..." (or a bare "250") ends it */
	last = len == 3 || line[3] != '-';
	if (d->stage == STG_AUTH && code == 334)
		trace_line(d, "S: ", "334 [redacted]", 14);
	else
		trace_line(d, "S: ", line, len);
	if (d->stage == STG_EHLO) {
		if (d->pending.len == 0)
			d->starttls_offered = false; /* a new EHLO reply (after STARTTLS) starts afresh */
		note_ehlo_keyword(d, line, len);
	}
	/*
	 * A reply is kept as valid UTF-8 and at most SMTP_REPLY_MAX bytes, whatever the server sends:
	 * it is stored in the database and in JSON, which refuse invalid UTF-8, and a hostile server
	 * must not be able to keep an outcome from being recorded.
	 */
	if (d->pending.len < SMTP_REPLY_MAX &&
		((d->pending.len > 0 && !buf_putc(&d->pending, '\n')) ||
		 !utf8_clean(&d->pending, line, len, SMTP_REPLY_MAX - d->pending.len)))
		d->oom = true;
	d->pending_code = code;
	if (!last)
		return;
	reply_clear(&d->last);
	d->last.code = code;
	d->last.text = buf_steal(&d->pending);
	d->last_stage = d->stage;
	if (d->last.text == NULL)
		d->oom = true;
	store_reply(d, &d->last);
}

void
smtp_dialog_info(struct SmtpDialog *d, const char *line, size_t len)
{
	len = chomp(line, len);
	if (https_info_kept(line, len))
		trace_line(d, "* ", line, len);
}

void
smtp_dialog_note(struct SmtpDialog *d, const char *text)
{
	trace_line(d, "* ", text, strlen(text));
}

void
smtp_dialog_body_begin(struct SmtpDialog *d, const char *msg, size_t len)
{
	const char *p = msg, *end = msg + len;

	if (d->body_started)
		return;
	/* Note that the stage stays DATA: a reply now refuses the message, it is not the final one. */
	d->body_started = true;
	/* the header fields, line by line, up to the empty line that ends them */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t) (end - p));
		size_t n = chomp(p, nl ? (size_t) (nl - p + 1) : (size_t) (end - p));

		if (n == 0)
			break;
		trace_line(d, "C: ", p, n);
		if (nl == NULL)
			break;
		p = nl + 1;
	}
}

void
smtp_dialog_body_end(struct SmtpDialog *d, size_t len)
{
	char text[64];

	if (d->body_complete)
		return;
	d->body_complete = true;
	d->stage = STG_BODY;
	snprintf(text, sizeof(text), "[body %zu bytes]", len);
	trace_line(d, "C: ", text, strlen(text));
	trace_line(d, "C: ", ".", 1);
}

const char *
smtp_stage_name(enum SmtpStage st)
{
	switch (st) {
	case STG_CONNECT:
		return "while connecting";
	case STG_EHLO:
		return "at EHLO";
	case STG_STARTTLS:
		return "at STARTTLS";
	case STG_AUTH:
		return "at AUTH";
	case STG_MAIL:
		return "at MAIL FROM";
	case STG_RCPT:
		return "at RCPT TO";
	case STG_DATA:
		return "at DATA";
	case STG_BODY:
		return "after the message was sent";
	case STG_OTHER:
		break;
	}
	return "during the SMTP dialogue";
}
