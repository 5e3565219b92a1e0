/*
 * message.h - one email as returned by pgrelay_notifier.fetch(), parsed once into C structs.
 *
 * The JSON document is specified in docs/interface.md. Parsing validates what the transports rely
 * on (types, required keys, header names); everything else is the notifier's job.
 */
#ifndef PGRELAY_MESSAGE_H
#define PGRELAY_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"
#include "outcome.h"
#include "secrets.h"

struct Address {
	char *address; /* addr-spec, e.g. ann@example.org */
	char *name;    /* display name (UTF-8) or NULL */
};

enum RcptKind {
	RCPT_TO, /* listed in To: and in the envelope */
	RCPT_CC, /* listed in Cc: and in the envelope */
	RCPT_BCC /* envelope only, never in a header */
};

struct Recipient {
	long long id; /* the notifier's recipient id, echoed back in set_status */
	enum RcptKind kind;
	struct Address addr;
	enum RcptStatus status;
};

struct Attachment {
	char *filename;      /* UTF-8 file name */
	char *content_type;  /* e.g. application/pdf */
	char *content_id;    /* non-NULL: an inline part referenced as cid:content_id */
	unsigned char *data; /* decoded bytes */
	size_t len;
};

struct Header {
	char *name;
	char *value;
};

enum TransportKind { TRANSPORT_SMTP, TRANSPORT_GRAPH };

/* The defaults of the global cloud, filled in when the document leaves them out. */
#define DEFAULT_LOGIN_URL "https://login.microsoftonline.com"
#define DEFAULT_GRAPH_URL "https://graph.microsoft.com"
/* Exchange Online's resource: SMTP AUTH XOAUTH2 needs a token for it, not for Graph. */
#define SMTP_OAUTH_SCOPE "https://outlook.office365.com/.default"

enum SmtpSecurity {
	SEC_STARTTLS,          /* plain connect, STARTTLS required (default) */
	SEC_STARTTLS_OPTIONAL, /* STARTTLS when the server offers it */
	SEC_TLS,               /* implicit TLS from the first byte (smtps://) */
	SEC_NONE               /* no TLS at all */
};

struct SmtpProfile {
	char *host;
	int port;
	enum SmtpSecurity security;
	char *username;    /* NULL: no AUTH */
	char *password;    /* secret reference until profile_resolve_secrets(), then the value */
	char *oauth_token; /* secret reference / value; when set, AUTH XOAUTH2 */
	char *ca_file;     /* NULL: the system CA store */
	char *helo_name;   /* NULL: libcurl's default */
	/*
	 * An OAuth2 app (client credentials, Microsoft 365) instead of a password or a static token:
	 * the Processor gets and refreshes the XOAUTH2 token itself. All NULL when not used.
	 */
	char *tenant_id;
	char *client_id;
	char *client_secret; /* secret reference until resolved */
	char *login_url;     /* the token endpoint's base URL */
	char *scope;         /* the token's scope */
};

struct GraphProfile {
	char *tenant_id;
	char *client_id;
	char *client_secret; /* secret reference until resolved */
	char *sender;        /* mailbox the message is sent as */
	char *login_url;     /* e.g. https://login.microsoftonline.com */
	char *graph_url;     /* e.g. https://graph.microsoft.com */
	char *scope;         /* the token's scope: {graph_url}/.default unless the profile names one */
	char *ca_file;       /* NULL: the system CA store */
	bool save_to_sent_items;
};

struct Profile {
	char *name;
	enum TransportKind transport;
	bool debug; /* store a redacted protocol trace per attempt */
	long connect_timeout_ms;
	long timeout_ms;           /* whole attempt */
	int rate_limit_per_minute; /* 0: none */
	long max_message_bytes;    /* 0: none */
	struct SmtpProfile smtp;
	struct GraphProfile graph;
};

struct Message {
	long long notification_id;
	char *status; /* queued, retrying, cancelled, sent, ... */
	char *channel;
	char *message_id; /* <local@domain>, stable across attempts */
	struct Address from;
	struct Address *reply_to;
	int n_reply_to;
	struct Recipient *rcpt;
	int n_rcpt;
	char *subject;
	char *body_text; /* NULL or UTF-8 */
	char *body_html; /* NULL or UTF-8 */
	struct Header *headers;
	int n_headers;
	struct Attachment *att;
	int n_att;
	struct Profile profile;
};

/*
 * message_parse fills m from the JSON text of fetch(). Returns false with a reason in err (and m
 * freed) when the document breaks the contract; that is a permanent failure of the event.
 */
bool message_parse(const char *json, struct Message *m, char *err, size_t errlen) MUSTCHECK;
void message_free(struct Message *m);

/* profile_transport_name is the transport the profile names ("smtp", "graph"). */
const char *profile_transport_name(const struct Profile *p);

/* message_envelope_count is the number of recipients whose status is pending or retrying. */
int message_envelope_count(const struct Message *m);

/*
 * profile_resolve_secrets replaces every secret reference of p (smtp.password, smtp.oauth_token,
 * smtp.client_secret, graph.client_secret) by its value, in place, as p's own (the owner
 * profile/<p->name>); the old strings are wiped and freed. On failure p keeps what was already
 * resolved and err names the field and the reference, never a value.
 */
bool profile_resolve_secrets(struct Profile *p, const char *secrets_dir, const char *env_bindings, char *err,
							 size_t errlen) MUSTCHECK;

#endif
