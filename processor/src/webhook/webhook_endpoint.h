/*
 * webhook_endpoint.h - the endpoint of a webhook channel, as pgrelay._webhook_claim() serves it
 * (docs/interface.md): parsed and checked, then its secret references resolved.
 *
 * Parsing is the gate for what goes into the request line and header lines: a document an admin
 * could not have registered (a CR or LF in a header, a URL that is not http(s), a method other
 * than POST, PUT or PATCH) is refused here, whatever the database says.
 */
#ifndef PGRELAY_WEBHOOK_ENDPOINT_H
#define PGRELAY_WEBHOOK_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"

/* One extra header of the channel; its value may be a secret reference until resolved. */
struct WebhookHeader {
	char *name;
	char *value;
	bool referenced; /* the value was given as a secret reference (env:, file:, value:) */
};

struct WebhookEndpoint {
	char *channel;
	char *url;    /* https://, or http:// when allow_http */
	char *method; /* POST, PUT or PATCH */
	bool allow_http;
	char *ca_file; /* NULL: the system's CA store */
	bool debug;    /* keep a redacted trace of each attempt in pgrelay.log */
	struct WebhookHeader *headers;
	int n_headers;
	char *signing_secret; /* NULL: unsigned; a secret reference until resolved */
	long timeout_ms;      /* the channel's timeout */
};

/*
 * webhook_endpoint_parse reads the endpoint document into e (zeroed first). Returns false with the
 * reason in err when the document is not one the Processor may use (e then holds nothing to
 * free beyond what webhook_endpoint_free releases).
 */
bool webhook_endpoint_parse(const char *json, struct WebhookEndpoint *e, char *err, size_t errlen) MUSTCHECK;

/*
 * webhook_endpoint_resolve replaces every secret reference (header values, the signing secret) by
 * its value, as secrets of the owner webhook/<channel> (secrets.c: env: bound by env_bindings,
 * file: in the channel's directory of secrets_dir, value:, or the literal). Returns false with the
 * reason in err (naming the header and the reference, never a value).
 */
bool webhook_endpoint_resolve(struct WebhookEndpoint *e, const char *secrets_dir, const char *env_bindings,
							  char *err, size_t errlen) MUSTCHECK;

/* webhook_endpoint_free wipes the secrets and frees what e holds; e is zeroed. */
void webhook_endpoint_free(struct WebhookEndpoint *e);

#endif
