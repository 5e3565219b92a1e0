/*
 * smtp_result.h - turn what one SMTP attempt produced (libcurl's code plus the dialogue) into a
 * DeliveryResult: per-recipient outcomes, the final reply, transient or permanent.
 */
#ifndef PGRELAY_SMTP_RESULT_H
#define PGRELAY_SMTP_RESULT_H

#include <stdbool.h>

#include "compiler.h"
#include "message.h"
#include "smtp_dialog.h"
#include "transport.h"

/* SmtpAttempt is everything the classifier looks at. */
struct SmtpAttempt {
	int curl_code;          /* CURLcode of curl_easy_perform */
	const char *curl_error; /* CURLOPT_ERRORBUFFER text (may be empty) */
	const struct SmtpDialog *d;
	const struct Recipient *const *env; /* the envelope, in RCPT order */
	int n_env;
	enum SmtpSecurity security;
};

/*
 * smtp_result_fill classifies the attempt into r (status, unknown_outcome, reply, error,
 * per-recipient results). Returns false only on allocation failure.
 */
bool smtp_result_fill(const struct SmtpAttempt *a, struct DeliveryResult *r) MUSTCHECK;

/*
 * smtp_result_retry_fresh says whether a failed attempt on a reused connection should be
 * repeated at once on a new one: it failed before the server accepted DATA (354), with no reply
 * or a 421, which is what a server that dropped an idle connection looks like. Nothing can have
 * been delivered, so repeating is safe.
 */
bool smtp_result_retry_fresh(const struct SmtpAttempt *a, bool reused);

#endif
