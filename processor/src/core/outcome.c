/*
 * outcome.c - names and mappings of the result vocabulary (outcome.h): tables, no I/O.
 */
#include "outcome.h"

#include <stddef.h>
#include <string.h>

static const char *const outcome_names[] = {"skipped",  "ok",      "partial", "cancelled",
											"retry",    "timeout", "failed",  "deferred",
											"replayed", "snoozed", "lost"};
static const char *const result_names[] = {"ok", "partial", "transient", "permanent", "cancelled"};
static const char *const rcpt_names[] = {"pending", "sent", "failed", "retrying"};
static const char *const config_error_names[] = {
	"", "missing_handler", "not_security_definer", "missing_grant", "in_handler", "secret", "destination"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(NELEM(config_error_names) == CE_COUNT, "one name per enum ConfigError");

const char *
outcome_name(enum Outcome o)
{
	return outcome_names[o];
}

enum Outcome
outcome_parse(const char *s)
{
	size_t i;

	for (i = 0; s && i < NELEM(outcome_names); i++)
		if (strcmp(s, outcome_names[i]) == 0)
			return (enum Outcome) i;
	return OC_LOST;
}

const char *
config_error_name(enum ConfigError e)
{
	return config_error_names[e];
}

enum ConfigError
config_error_parse(const char *s)
{
	size_t i;

	for (i = 1; s && i < NELEM(config_error_names); i++)
		if (strcmp(s, config_error_names[i]) == 0)
			return (enum ConfigError) i;
	return CE_NONE;
}

bool
outcome_failed(enum Outcome o)
{
	return o == OC_RETRY || o == OC_TIMEOUT || o == OC_FAILED;
}

const char *
attempt_result_name(enum AttemptResult r)
{
	return result_names[r];
}

enum AttemptResult
delivery_result(enum DeliveryStatus s)
{
	switch (s) {
	case DS_SENT:
		return AR_OK;
	case DS_PARTIAL:
		return AR_PARTIAL;
	case DS_TRANSIENT:
		return AR_TRANSIENT;
	case DS_PERMANENT:
		break;
	}
	return AR_PERMANENT;
}

enum Outcome
attempt_result_outcome(enum AttemptResult r)
{
	switch (r) {
	case AR_OK:
		return OC_OK;
	case AR_PARTIAL:
		return OC_PARTIAL;
	case AR_TRANSIENT:
		return OC_RETRY;
	case AR_CANCELLED:
		return OC_CANCELLED;
	case AR_PERMANENT:
		break;
	}
	return OC_FAILED;
}

const char *
outcome_status_name(enum Outcome o)
{
	switch (o) {
	case OC_OK:
		return "sent";
	case OC_PARTIAL:
		return "partially_sent";
	case OC_RETRY:
	case OC_TIMEOUT:
		return "retrying";
	case OC_FAILED:
		return "failed";
	case OC_SKIPPED:
	case OC_CANCELLED:
	case OC_DEFERRED:
	case OC_REPLAYED:
	case OC_SNOOZED:
	case OC_LOST:
		break;
	}
	return NULL;
}

bool
notification_settled(const char *s, enum AttemptResult *result)
{
	if (strcmp(s, "cancelled") == 0)
		*result = AR_CANCELLED;
	else if (strcmp(s, "sent") == 0 || strcmp(s, "partially_sent") == 0)
		*result = AR_OK;
	else
		return false;
	return true;
}

const char *
rcpt_status_name(enum RcptStatus s)
{
	return rcpt_names[s];
}

bool
rcpt_status_parse(const char *s, enum RcptStatus *out)
{
	size_t i;

	for (i = 0; i < NELEM(rcpt_names); i++)
		if (strcmp(s, rcpt_names[i]) == 0) {
			*out = (enum RcptStatus) i;
			return true;
		}
	return false;
}

enum RcptStatus
rcpt_status_reported(enum RcptStatus s, enum Outcome o)
{
	bool final = o == OC_FAILED || o == OC_PARTIAL;

	if (s == RS_SENT || s == RS_FAILED)
		return s;
	return final ? RS_FAILED : RS_RETRYING;
}
