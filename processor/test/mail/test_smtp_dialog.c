/*
 * test_smtp_dialog.c - scripted SMTP dialogues through smtp_dialog.c and smtp_result.c.
 *
 * Each row is what libcurl would report for one transaction: the commands it sent ("C:"),
 * the reply lines it received ("S:"), the upload ("B" = body handed out, "E" = all of it), and
 * the CURLcode it returned. The row says which outcome the classifier must reach.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "smtp_dialog.h"
#include "smtp_result.h"
#include "status_doc.h"
#include "unit.h"
#include "utf8.h"

#define MAX_EVENTS 24

/* The common openings of a transaction, spliced in by name. */
#define OPEN \
	"S:220 mx ESMTP", "C:EHLO relay", "S:250-mx", "S:250 STARTTLS", "C:MAIL FROM:<a@x.org>", "S:250 OK"
#define RCPT3(c1, c2, c3) \
	"C:RCPT TO:<1@x.org>", "S:" c1, "C:RCPT TO:<2@x.org>", "S:" c2, "C:RCPT TO:<3@x.org>", "S:" c3
#define DATA_BODY "C:DATA", "S:354 go ahead", "B", "E"

struct Row {
	const char *name;
	const char *events[MAX_EVENTS];
	int curl_code;
	enum DeliveryStatus want;
	bool unknown;
	const char *rcpt_want; /* one letter per envelope recipient: s(ent) f(ailed) r(etrying) */
	int reply_code;
	const char *error_has;
};

static const struct Row rows[] = {
	{"all accepted",
	 {OPEN, RCPT3("250 ok", "250 ok", "250 ok"), DATA_BODY, "S:250 queued"},
	 CURLE_OK,
	 DS_SENT,
	 false,
	 "sss",
	 250,
	 ""},
	{"one 550",
	 {OPEN, RCPT3("250 ok", "550 5.1.1 no such user", "250 ok"), DATA_BODY, "S:250 queued"},
	 CURLE_OK,
	 DS_PARTIAL,
	 false,
	 "sfs",
	 250,
	 "1 of 3 recipients were refused"},
	{"one 450",
	 {OPEN, RCPT3("250 ok", "450 busy", "550 no"), DATA_BODY, "S:250 queued"},
	 CURLE_OK,
	 DS_TRANSIENT,
	 false,
	 "srf",
	 250,
	 "(1 temporarily)"},
	{"all 550",
	 {OPEN, RCPT3("550 a", "550 b", "553 c")},
	 CURLE_SEND_ERROR,
	 DS_PERMANENT,
	 false,
	 "fff",
	 553,
	 "every recipient was refused"},
	{"all refused, one 4xx",
	 {OPEN, RCPT3("550 a", "451 later", "550 c")},
	 CURLE_SEND_ERROR,
	 DS_TRANSIENT,
	 false,
	 "frf",
	 550,
	 "every recipient was refused"},
	{"MAIL 552",
	 {"S:220 mx", "C:EHLO relay", "S:250 mx", "C:MAIL FROM:<a@x.org> SIZE=9", "S:552 too big"},
	 CURLE_SEND_ERROR,
	 DS_PERMANENT,
	 false,
	 "fff",
	 552,
	 "refused the sender (MAIL FROM)"},
	{"MAIL 421",
	 {"C:MAIL FROM:<a@x.org>", "S:421 closing"},
	 CURLE_SEND_ERROR,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 421,
	 "refused the sender"},
	{"DATA 451",
	 {OPEN, RCPT3("250 ok", "250 ok", "550 x"), "C:DATA", "S:451 try later"},
	 CURLE_SEND_ERROR,
	 DS_TRANSIENT,
	 false,
	 "rrf",
	 451,
	 "refused DATA"},
	{"DATA 554",
	 {OPEN, RCPT3("250 ok", "250 ok", "250 ok"), "C:DATA", "S:554 no"},
	 CURLE_SEND_ERROR,
	 DS_PERMANENT,
	 false,
	 "fff",
	 554,
	 "refused DATA"},
	{"end of data 451",
	 {OPEN, RCPT3("250 ok", "250 ok", "250 ok"), DATA_BODY, "S:451 later"},
	 CURLE_WEIRD_SERVER_REPLY,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 451,
	 "after it was sent"},
	{"end of data 554",
	 {OPEN, RCPT3("250 ok", "550 x", "250 ok"), DATA_BODY, "S:554 spam"},
	 CURLE_WEIRD_SERVER_REPLY,
	 DS_PERMANENT,
	 false,
	 "fff",
	 554,
	 "after it was sent"},
	{"lost after body",
	 {OPEN, RCPT3("250 ok", "250 ok", "250 ok"), DATA_BODY},
	 CURLE_RECV_ERROR,
	 DS_TRANSIENT,
	 true,
	 "rrr",
	 0,
	 "may have been delivered"},
	{"timeout after body",
	 {OPEN, RCPT3("250 ok", "250 ok", "550 x"), DATA_BODY},
	 CURLE_OPERATION_TIMEDOUT,
	 DS_TRANSIENT,
	 true,
	 "rrf",
	 0,
	 "may have been delivered"},
	{"lost during body",
	 {OPEN, RCPT3("250 ok", "250 ok", "250 ok"), "C:DATA", "S:354 go", "B"},
	 CURLE_SEND_ERROR,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 354,
	 "connection failed"},
	{"timeout at greeting",
	 {NULL},
	 CURLE_OPERATION_TIMEDOUT,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 0,
	 "timed out while connecting"},
	{"refused", {NULL}, CURLE_COULDNT_CONNECT, DS_TRANSIENT, false, "rrr", 0, "connection failed"},
	{"TLS handshake",
	 {"S:220 mx", "C:EHLO r", "S:250 STARTTLS", "C:STARTTLS", "S:220 go"},
	 CURLE_SSL_CONNECT_ERROR,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 220,
	 "at STARTTLS"},
	{"certificate",
	 {"S:220 mx", "C:EHLO r", "S:250 STARTTLS", "C:STARTTLS", "S:220 go"},
	 CURLE_PEER_FAILED_VERIFICATION,
	 DS_PERMANENT,
	 false,
	 "fff",
	 220,
	 "certificate verification failed (configuration"},
	{"no STARTTLS",
	 {"S:220 mx", "C:EHLO r", "S:250-mx", "S:250 AUTH PLAIN"},
	 CURLE_USE_SSL_FAILED,
	 DS_PERMANENT,
	 false,
	 "fff",
	 250,
	 "does not offer it"},
	{"STARTTLS 454",
	 {"S:220 mx", "C:EHLO r", "S:250 STARTTLS", "C:STARTTLS", "S:454 later"},
	 CURLE_USE_SSL_FAILED,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 454,
	 "cannot start TLS now"},
	{"AUTH 535",
	 {"S:220 mx", "C:EHLO r", "S:250 AUTH PLAIN", "C:AUTH PLAIN", "S:334 ",
	  "C:AHVzZXIAcHc=", "S:535 5.7.8 bad credentials"},
	 CURLE_LOGIN_DENIED,
	 DS_PERMANENT,
	 false,
	 "fff",
	 535,
	 "authentication failed"},
	{"AUTH 454",
	 {"S:220 mx", "C:EHLO r", "S:250 AUTH PLAIN", "C:AUTH PLAIN AHVzZXIAcHc=", "S:454 4.7.0 temporary"},
	 CURLE_LOGIN_DENIED,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 454,
	 "temporary authentication failure"},
	{"greeting 554",
	 {"S:554 go away"},
	 CURLE_WEIRD_SERVER_REPLY,
	 DS_PERMANENT,
	 false,
	 "fff",
	 554,
	 "refused the session"},
	{"greeting 421",
	 {"S:421 busy"},
	 CURLE_WEIRD_SERVER_REPLY,
	 DS_TRANSIENT,
	 false,
	 "rrr",
	 421,
	 "refused the session"},
	{"bad URL", {NULL}, CURLE_URL_MALFORMAT, DS_PERMANENT, false, "fff", 0, "configuration"},
};

/* play feeds the events of a row to d. */
static void
play(struct SmtpDialog *d, const char *const *ev)
{
	static const char msg[] = "Subject: hi\r\nTo: <1@x.org>\r\n\r\nsecret body\r\n";
	int i;

	for (i = 0; i < MAX_EVENTS && ev[i] != NULL; i++) {
		if (strncmp(ev[i], "C:", 2) == 0)
			smtp_dialog_command(d, ev[i] + 2, strlen(ev[i] + 2));
		else if (strncmp(ev[i], "S:", 2) == 0) {
			char line[256];

			/* libcurl hands the line over with its CRLF */
			snprintf(line, sizeof(line), "%s\r\n", ev[i] + 2);
			smtp_dialog_reply_line(d, line, strlen(line));
		} else if (strcmp(ev[i], "B") == 0)
			smtp_dialog_body_begin(d, msg, sizeof(msg) - 1);
		else if (strcmp(ev[i], "E") == 0)
			smtp_dialog_body_end(d, sizeof(msg) - 1);
	}
}

static void
test_classification(void)
{
	struct Recipient r[3] = {{11, RCPT_TO, {"1@x.org", NULL}, RS_PENDING},
							 {12, RCPT_CC, {"2@x.org", NULL}, RS_RETRYING},
							 {13, RCPT_BCC, {"3@x.org", NULL}, RS_PENDING}};
	const struct Recipient *env[3] = {&r[0], &r[1], &r[2]};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct Row *row = &rows[i];
		struct SmtpDialog d;
		struct DeliveryResult res;
		struct SmtpAttempt a = {row->curl_code, "curl says no", &d, env, 3, SEC_STARTTLS};
		bool ok = true;
		int k;

		smtp_dialog_init(&d, NULL);
		delivery_result_init(&res);
		play(&d, row->events);
		CHECK(smtp_result_fill(&a, &res));
		ok = res.status == row->want && res.unknown_outcome == row->unknown &&
			 res.reply_code == row->reply_code && strstr(res.error, row->error_has) != NULL &&
			 res.n_rcpt == 3;
		for (k = 0; ok && k < 3; k++)
			ok = res.rcpt[k].id == env[k]->id &&
				 "sfr"[res.rcpt[k].status == RS_SENT     ? 0
					   : res.rcpt[k].status == RS_FAILED ? 1
														 : 2] == row->rcpt_want[k];
		if (!ok)
			fprintf(stderr,
					"  row \"%s\": status %d unknown %d reply %d rcpt %d/%d/%d "
					"error \"%s\"\n",
					row->name, res.status, res.unknown_outcome, res.reply_code, res.rcpt[0].status,
					res.rcpt[1].status, res.rcpt[2].status, res.error);
		CHECK(ok);
		delivery_result_free(&res);
		smtp_dialog_free(&d);
	}
}

/* Multi-line replies are joined; RCPT replies keep their text. */
static void
test_reply_text(void)
{
	static const char *const ev[] = {"S:220 mx",
									 "C:EHLO r",
									 "S:250-mx",
									 "S:250-SIZE 10",
									 "S:250 STARTTLS",
									 "C:MAIL FROM:<a@x.org>",
									 "S:250 ok",
									 "C:RCPT TO:<1@x.org>",
									 "S:550-5.1.1 first line",
									 "S:550 5.1.1 second line",
									 NULL};
	struct SmtpDialog d;

	smtp_dialog_init(&d, NULL);
	play(&d, ev);
	CHECK(d.starttls_offered);
	CHECK(d.n_rcpt == 1 && d.rcpt[0].code == 550);
	CHECK_STR(d.rcpt[0].text, "550-5.1.1 first line\n550 5.1.1 second line");
	CHECK(d.last.code == 550 && d.last_stage == STG_RCPT);
	smtp_dialog_reset(&d);
	CHECK(d.n_rcpt == 0 && d.last.code == 0 && d.stage == STG_CONNECT);
	smtp_dialog_free(&d);
}

static void
test_retry_fresh(void)
{
	static const struct {
		const char *events[4];
		int code;
		bool reused, want;
	} cases[] = {
		{{NULL}, CURLE_SEND_ERROR, true, true}, /* dead socket */
		{{"C:MAIL FROM:<a@x.org>", "S:421 idle", NULL}, CURLE_SEND_ERROR, true, true},
		{{"C:MAIL FROM:<a@x.org>", "S:421 idle", NULL}, CURLE_SEND_ERROR, false, false},
		{{"C:MAIL FROM:<a@x.org>", "S:451 later", NULL}, CURLE_SEND_ERROR, true, false},
		{{NULL}, CURLE_OPERATION_TIMEDOUT, true, false},
		{{"C:DATA", "S:354 go", "B", NULL}, CURLE_SEND_ERROR, true, false},
		{{NULL}, CURLE_OK, true, false},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct SmtpDialog d;
		struct SmtpAttempt a = {cases[i].code, "", &d, NULL, 0, SEC_NONE};

		smtp_dialog_init(&d, NULL);
		play(&d, cases[i].events);
		CHECK(smtp_result_retry_fresh(&a, cases[i].reused) == cases[i].want);
		smtp_dialog_free(&d);
	}
}

/* The transcript: AUTH reduced to its mechanism, SASL lines and secrets gone, body cut. */
static void
test_trace_redaction(void)
{
	static const char *const ev[] = {"S:220 mx",
									 "C:EHLO r",
									 "S:250 AUTH LOGIN PLAIN",
									 "C:AUTH LOGIN",
									 "S:334 VXNlcm5hbWU6",
									 "C:dXNlcg==",
									 "S:334 UGFzc3dvcmQ6",
									 "C:cHctU2VjcmV0",
									 "S:235 ok",
									 "C:MAIL FROM:<a@x.org>",
									 "S:250 ok pw-Secret echoed",
									 "C:RCPT TO:<1@x.org>",
									 "S:250 ok",
									 "C:DATA",
									 "S:354 go",
									 "B",
									 "E",
									 "S:250 queued",
									 NULL};
	static const char want[] =
		"S: 220 mx\r\nC: EHLO r\r\nS: 250 AUTH LOGIN PLAIN\r\nC: AUTH LOGIN\r\n"
		"S: 334 [redacted]\r\nC: [redacted]\r\nS: 334 [redacted]\r\nC: [redacted]\r\n"
		"S: 235 ok\r\nC: MAIL FROM:<a@x.org>\r\nS: 250 ok [redacted] echoed\r\n"
		"C: RCPT TO:<1@x.org>\r\nS: 250 ok\r\nC: DATA\r\nS: 354 go\r\nC: Subject: hi\r\n"
		"C: To: <1@x.org>\r\nC: [body 43 bytes]\r\nC: .\r\nS: 250 queued\r\n";
	struct Buf trace = BUF_INIT;
	struct SmtpDialog d;

	smtp_dialog_init(&d, &trace);
	smtp_dialog_add_secret(&d, "pw-Secret");
	play(&d, ev);
	CHECK_STR(trace.data, want);
	smtp_dialog_free(&d);
	buf_free(&trace);

	/* an initial response on the AUTH line itself */
	{
		static const char *const ev2[] = {"C:AUTH PLAIN AHVzZXIAcHc=", "S:235 ok", NULL};

		smtp_dialog_init(&d, &trace);
		play(&d, ev2);
		CHECK_STR(trace.data, "C: AUTH PLAIN\r\nC: [redacted]\r\nS: 235 ok\r\n");
		smtp_dialog_free(&d);
		buf_free(&trace);
	}
}

static void
test_scrub(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {{"abc", "abc"},
				 {"xSECy", "x[redacted]y"},
				 {"SECSEC", "[redacted][redacted]"},
				 {"tokTOKtok", "[redacted]tok"},
				 {"", ""}};
	const char *secrets[3] = {"SEC", NULL, "tokTOK"};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct Buf b = BUF_INIT;

		CHECK(buf_puts(&b, cases[i].in) && buf_redact(&b, secrets, 3));
		CHECK_STR(b.data, cases[i].want);
		buf_free(&b);
	}
}

/* valid: s is valid UTF-8 to its last byte. */
static bool
valid(const char *s)
{
	while (*s) {
		size_t n = utf8_len((const unsigned char *) s);

		if (n == 0)
			return false;
		s += n;
	}
	return true;
}

/*
 * A server's refusal of 2,000 bytes of multi-byte text is cut to fit the error: never inside a
 * character, so the reason can be stored, and the set_status document keeps it.
 */
static void
test_long_reply_cut_at_a_character(void)
{
	static const char *const opening[] = {"S:220 mx", "C:EHLO relay",
										  "S:250 mx", "C:MAIL FROM:<a@x.org>",
										  "S:250 ok", "C:RCPT TO:<1@x.org>",
										  "S:250 ok", "C:DATA",
										  "S:354 go", "B",
										  "E",        NULL};
	struct Recipient r = {11, RCPT_TO, {"1@x.org", NULL}, RS_PENDING};
	const struct Recipient *env[1] = {&r};
	struct Buf reply = BUF_INIT;
	int shift;

	for (shift = 0; shift < 4; shift++) {
		struct SmtpDialog d;
		struct DeliveryResult res;
		struct SmtpAttempt a = {CURLE_WEIRD_SERVER_REPLY, "", &d, env, 1, SEC_STARTTLS};
		struct StatusDoc sd = {1,    OC_RETRY, "smtp", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z",
							   NULL, false};
		char *doc;
		int k;

		buf_reset(&reply);
		CHECK(buf_puts(&reply, "451 ") && buf_append(&reply, "xyz", (size_t) shift));
		for (k = 0; k < 660; k++)
			CHECK(buf_puts(&reply, "\xe2\x82\xac")); /* U+20AC, three bytes */
		CHECK(buf_puts(&reply, "\r\n"));
		smtp_dialog_init(&d, NULL);
		delivery_result_init(&res);
		play(&d, opening);
		smtp_dialog_reply_line(&d, reply.data, reply.len);
		CHECK(smtp_result_fill(&a, &res));
		CHECK(res.status == DS_TRANSIENT && strlen(res.error) > 900 && valid(res.error));
		doc = status_doc_json(&sd, &res);
		CHECK(doc != NULL &&
			  strstr(doc, "\"error\":\"the server refused the message after it was sent: 451 ") != NULL);
		free(doc);
		delivery_result_free(&res);
		smtp_dialog_free(&d);
	}
	buf_free(&reply);
}

int
main(void)
{
	RUN(test_classification);
	RUN(test_reply_text);
	RUN(test_retry_fresh);
	RUN(test_trace_redaction);
	RUN(test_scrub);
	RUN(test_long_reply_cut_at_a_character);
	return UNIT_DONE();
}
