/*
 * smtp_dialog.h - follow one SMTP transaction as libcurl runs it: which command is waiting for a
 * reply, what each reply was, how far the message got; and the redacted debug transcript.
 *
 * libcurl reports only one CURLcode per transfer. With CURLOPT_MAIL_RCPT_ALLLOWFAILS it does not
 * say which recipients were refused, and the final reply text after DATA is not available at
 * all. So smtp.c feeds this module every command libcurl sends (debug callback, HEADER_OUT) and
 * every reply line it receives (header callback); each complete reply is attributed to the
 * command in flight. Pure state: no libcurl here, so it is unit-tested with scripted dialogues.
 */
#ifndef PGRELAY_SMTP_DIALOG_H
#define PGRELAY_SMTP_DIALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

enum SmtpStage {
	STG_CONNECT,  /* waiting for the greeting (or the TLS handshake) */
	STG_EHLO,     /* EHLO or HELO sent */
	STG_STARTTLS, /* STARTTLS sent */
	STG_AUTH,     /* AUTH and the SASL exchange that follows it */
	STG_MAIL,     /* MAIL FROM sent */
	STG_RCPT,     /* RCPT TO sent (one reply per recipient) */
	STG_DATA,     /* DATA sent, 354 expected */
	STG_BODY,     /* message being sent; after its end the final reply is expected */
	STG_OTHER     /* QUIT, RSET, NOOP, ... */
};

struct SmtpReply {
	int code;   /* 0: no reply */
	char *text; /* every line of the reply, joined with "\n", or NULL */
};

#define SMTP_DIALOG_SECRETS 5
#define SMTP_TRACE_MAX (256 * 1024)
/* A reply (all its lines) and a transcript line are kept to these many bytes of valid UTF-8. */
#define SMTP_REPLY_MAX 4096
#define SMTP_LINE_MAX 2048

struct SmtpDialog {
	enum SmtpStage stage; /* the command whose reply is awaited */
	bool in_sasl;         /* AUTH answered 334: the next command lines are credentials */
	struct Buf pending;   /* lines of a multi-line reply received so far */
	int pending_code;
	struct SmtpReply last;     /* the last complete reply of any stage */
	enum SmtpStage last_stage; /* ... and the stage it answered */
	struct SmtpReply auth;     /* final reply to AUTH (235, 535, ...) */
	struct SmtpReply starttls; /* reply to STARTTLS */
	struct SmtpReply mail;     /* reply to MAIL FROM */
	struct SmtpReply *rcpt;    /* replies to RCPT TO, in order */
	int n_rcpt;
	int cap_rcpt;
	struct SmtpReply data;                    /* reply to DATA (354 on success) */
	struct SmtpReply final;                   /* reply after the end of the message */
	bool starttls_offered;                    /* the last EHLO reply listed STARTTLS */
	bool body_started;                        /* the read callback handed out the first message bytes */
	bool body_complete;                       /* ... and the last ones */
	bool oom;                                 /* a reply could not be stored */
	struct Buf *trace;                        /* transcript sink, or NULL when not tracing */
	const char *secrets[SMTP_DIALOG_SECRETS]; /* scrubbed from the transcript */
};

/* smtp_dialog_init prepares d for one transaction; trace (may be NULL) receives the transcript. */
void smtp_dialog_init(struct SmtpDialog *d, struct Buf *trace);
/* smtp_dialog_reset forgets the replies of the previous transaction, keeping trace and secrets. */
void smtp_dialog_reset(struct SmtpDialog *d);
void smtp_dialog_free(struct SmtpDialog *d);

/* smtp_dialog_add_secret registers a string (password, token) never to appear in the trace. */
void smtp_dialog_add_secret(struct SmtpDialog *d, const char *secret);

/* smtp_dialog_command records a command line sent by libcurl (CRLF optional). */
void smtp_dialog_command(struct SmtpDialog *d, const char *line, size_t len);
/* smtp_dialog_reply_line records one server reply line (CRLF optional). */
void smtp_dialog_reply_line(struct SmtpDialog *d, const char *line, size_t len);
/* smtp_dialog_info records an informational libcurl line worth keeping in the trace (https_info_kept). */
void smtp_dialog_info(struct SmtpDialog *d, const char *line, size_t len);
/* smtp_dialog_note appends a "* text" line of our own to the trace. */
void smtp_dialog_note(struct SmtpDialog *d, const char *text);

/* smtp_dialog_body_begin: the upload started; the trace shows msg's header, not its body. */
void smtp_dialog_body_begin(struct SmtpDialog *d, const char *msg, size_t len);
/* smtp_dialog_body_end: every byte of the message was handed to libcurl. */
void smtp_dialog_body_end(struct SmtpDialog *d, size_t len);

/* smtp_stage_name describes a stage for error messages ("at RCPT TO"). */
const char *smtp_stage_name(enum SmtpStage st);

#endif
