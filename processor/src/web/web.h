/*
 * web.h - what the modules of the web console (pg_relay web) share: one request as the pages see
 * it, and what the database lets the console's role read and do (docs/console.md).
 */
#ifndef PGRELAY_WEB_H
#define PGRELAY_WEB_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/*
 * What the connected role may read and do, asked of the database at every request (one round
 * trip): the console never decides this itself, it only leaves out what would be refused.
 */
struct WebCaps {
	bool ok;             /* the question could be asked (pg_relay installed, schema usable) */
	char role[64];       /* current_user */
	char database[64];   /* current_database() */
	char version[32];    /* pg_relay's version */
	bool admin;          /* member of pgrelay_admin */
	bool monitor;        /* member of pgrelay_monitor */
	bool read_log;       /* SELECT on pgrelay.log: payloads and each attempt's detail */
	bool read_attempts;  /* SELECT on pgrelay.attempts: outcomes without payloads */
	bool read_channels;  /* SELECT on pgrelay.channels: the channels' settings */
	bool read_queue;     /* SELECT on pgrelay.queue */
	bool read_failed;    /* SELECT on pgrelay.failed */
	bool read_views;     /* SELECT on pgrelay.queue_depth (the monitor's views) */
	bool read_mail;      /* SELECT on the notifier's notifications, recipients and attempts */
	bool read_traces;    /* SELECT on pgrelay_notifier.attempt_traces */
	bool read_schedules; /* SELECT on pgrelay.schedules */
	bool read_topics;    /* SELECT on pgrelay.topic_subscribers: subscriptions and their backlog */
	bool read_topiclist; /* SELECT on pgrelay.topics: descriptions, topics without a subscriber */
	bool read_pubs;      /* EXECUTE publication_status(bigint): a publication's deliveries */
	bool act_failed;     /* EXECUTE retry_failed(bigint): retry and discard */
	bool act_pause;      /* EXECUTE pause(text): pause and resume */
	bool act_schedule;   /* EXECUTE schedule(...): pause and resume a schedule */
	bool act_cancel;     /* EXECUTE cancel(bigint): withdraw an event that has not run */
	bool standby;        /* the server is in recovery */
	double now;          /* the database's clock, seconds since 1970 */
};

/* Where a request came from and what it asks, as the pages see it. */
struct WebReq {
	void *conn;           /* the struct MHD_Connection */
	const char *method;   /* GET, HEAD or POST */
	const char *path;     /* the URL's path, without the query */
	const char *user;     /* the HTTP user (auth file), NULL without one */
	const char *session;  /* the session cookie's value (sign-in token), NULL with an auth file */
	char nonce[65];       /* the sign-out form's nonce, with an auth file (web_signin.h) */
	char csrf[65];        /* this user's CSRF token, for the forms of the page */
	char *form_names[24]; /* the POST form's fields, decoded */
	char *form_values[24];
	int nform;
	struct WebCaps caps;
	struct Buf out;     /* the body */
	unsigned status;    /* the HTTP status (200 unless a page says otherwise) */
	char location[512]; /* a redirect's target, "" for none */
	const char *header; /* one more header of the answer (a sign-out's), NULL for none */
	char header_value[192];
};

/* web_arg is a query argument (GET) or form field (POST), NULL when absent or empty. */
const char *web_arg(struct WebReq *r, const char *name);

#endif
