/*
 * fuzz_status_doc.c - libFuzzer target: an SMTP dialogue of the server's choosing, classified by
 * smtp_result.c, reported by status_doc.c.
 *
 * The input scripts one transaction as libcurl would see it: the server's reply lines (any bytes),
 * the commands, how far the body got, libcurl's result code, the envelope size, a secret and
 * whether the profile traces. Whatever the server says, the attempt's error and replies are valid
 * UTF-8 (they are stored as text), the set_status() document and the log detail are JSON a strict
 * parser takes whole, with every key and one result per envelope recipient, and the trace holds no
 * secret.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "smtp_dialog.h"
#include "smtp_result.h"
#include "status_doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int curl_codes[] = {CURLE_OK,
								 CURLE_COULDNT_CONNECT,
								 CURLE_OPERATION_TIMEDOUT,
								 CURLE_LOGIN_DENIED,
								 CURLE_USE_SSL_FAILED,
								 CURLE_PEER_FAILED_VERIFICATION,
								 CURLE_SEND_ERROR,
								 CURLE_RECV_ERROR,
								 CURLE_WEIRD_SERVER_REPLY,
								 CURLE_SSL_CONNECT_ERROR,
								 CURLE_URL_MALFORMAT,
								 CURLE_GOT_NOTHING};
static const char *const commands[] = {"EHLO relay",        "STARTTLS", "AUTH PLAIN", "MAIL FROM:<a@x.org>",
									   "RCPT TO:<1@x.org>", "DATA",     "QUIT",       "RSET"};
static const char *const keys[] = {"attempt",     "outcome",         "transport",       "started_at",
								   "finished_at", "reply_code",      "reply",           "provider_message_id",
								   "error",       "unknown_outcome", "next_attempt_at", "recipients"};

static void
check_text(const char *what, const char *s)
{
	if (s != NULL)
		FUZZ_ASSERT(fuzz_utf8_valid(s, strlen(s)), "%s is not valid UTF-8", what);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char msg[] = "Subject: hi\r\nTo: <1@x.org>\r\n\r\nsecret body\r\n";
	struct Recipient rcpt[8];
	const struct Recipient *env[8];
	struct SmtpDialog d;
	struct DeliveryResult r;
	struct Buf trace = BUF_INIT;
	struct StatusDoc sd;
	char secret[17] = "";
	json_error_t jerr;
	json_t *doc;
	char *text, *detail;
	size_t i = 0, k;
	int n_env, curl_code;
	bool tracing;

	if (size < 4)
		return 0;
	n_env = data[0] % 8;
	curl_code = curl_codes[data[1] % (sizeof curl_codes / sizeof curl_codes[0])];
	tracing = data[2] & 1;
	/* a secret of 4 to 16 printable characters, as a password would be */
	for (k = 0; k < 4 + (size_t) (data[3] % 13) && 4 + k < size; k++)
		secret[k] = (char) ('!' + data[4 + k] % 94);
	i = 4 + k;
	for (k = 0; k < (size_t) n_env; k++) {
		rcpt[k] = (struct Recipient){(long long) k + 1, RCPT_TO, {"1@x.org", NULL}, RS_PENDING};
		env[k] = &rcpt[k];
	}
	smtp_dialog_init(&d, tracing ? &trace : NULL);
	smtp_dialog_add_secret(&d, strlen(secret) >= 4 ? secret : NULL);
	/* events: a tag byte, then for replies the line up to the next 0x00 */
	while (i < size) {
		uint8_t tag = data[i++];
		size_t end = i;

		switch (tag % 6) {
		case 0:
		case 1:
		case 2:
			while (end < size && data[end] != 0)
				end++;
			smtp_dialog_reply_line(&d, (const char *) data + i, end - i);
			i = end + 1;
			break;
		case 3:
			smtp_dialog_command(&d, commands[tag / 6 % 8], strlen(commands[tag / 6 % 8]));
			break;
		case 4:
			if (tag & 0x40)
				smtp_dialog_command(&d, secret, strlen(secret)); /* a credential line in SASL */
			else
				smtp_dialog_body_begin(&d, msg, sizeof msg - 1);
			break;
		case 5:
			smtp_dialog_body_end(&d, sizeof msg - 1);
			break;
		}
	}
	delivery_result_init(&r);
	{
		struct SmtpAttempt a = {curl_code, (data[2] & 2) ? "curl says no" : "", &d, env, n_env, SEC_STARTTLS};

		FUZZ_ASSERT(smtp_result_fill(&a, &r) || d.oom,
					"smtp_result_fill failed without running out of memory");
	}
	check_text("the error", r.error);
	check_text("the reply", r.reply);
	for (k = 0; k < (size_t) r.n_rcpt; k++)
		check_text("a recipient's reply", r.rcpt[k].reply);
	FUZZ_ASSERT(r.n_rcpt == n_env, "%d results for %d envelope recipients", r.n_rcpt, n_env);
	if (tracing) {
		check_text("the trace", trace.data);
		FUZZ_ASSERT(strlen(secret) < 4 || trace.data == NULL || strstr(trace.data, secret) == NULL,
					"the secret %s is in the trace", secret);
		r.trace = trace;
		trace = (struct Buf) BUF_INIT;
	}
	sd = (struct StatusDoc){2,
							r.status == DS_SENT        ? OC_OK
							: r.status == DS_PARTIAL   ? OC_PARTIAL
							: r.status == DS_TRANSIENT ? OC_RETRY
													   : OC_FAILED,
							"smtp",
							"2026-11-29T19:20:50.123Z",
							"2026-11-29T19:20:51.456Z",
							r.status == DS_TRANSIENT ? "2026-11-29T19:21:51.456Z" : NULL,
							tracing};
	text = status_doc_json(&sd, &r);
	FUZZ_ASSERT(text != NULL, "no status document");
	doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	FUZZ_ASSERT(doc != NULL && json_is_object(doc), "the status document does not parse: %s", jerr.text);
	for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
		FUZZ_ASSERT(json_object_get(doc, keys[k]) != NULL, "the status document has no %s: %s", keys[k],
					text);
	FUZZ_ASSERT(!tracing || json_is_string(json_object_get(doc, "trace")), "no trace in a traced attempt");
	FUZZ_ASSERT(json_array_size(json_object_get(doc, "recipients")) == (size_t) n_env,
				"%zu recipients in the document for %d", json_array_size(json_object_get(doc, "recipients")),
				n_env);
	FUZZ_ASSERT(r.status == DS_SENT || json_is_string(json_object_get(doc, "error")),
				"a failed attempt without its error: %s", text);
	json_decref(doc);
	free(text);
	detail = status_doc_log_detail("smtp", NULL, &r);
	FUZZ_ASSERT(detail != NULL, "no log detail");
	doc = json_loads(detail, JSON_REJECT_DUPLICATES, &jerr);
	FUZZ_ASSERT(doc != NULL, "the log detail does not parse: %s", jerr.text);
	json_decref(doc);
	free(detail);
	delivery_result_free(&r);
	buf_free(&trace);
	smtp_dialog_free(&d);
	return 0;
}
