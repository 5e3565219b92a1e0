/*
 * secrets.h - resolve the secret references of a profile (docs/interface.md, "Secrets").
 *
 * A reference is a literal value, env:NAME, file:NAME (inside the Processor's --secrets-dir) or
 * value:TEXT. Only the Processor resolves them, just before delivery. Error strings name the
 * reference (env:NAME, file:NAME) but never contain a secret value.
 */
#ifndef PGRELAY_SECRETS_H
#define PGRELAY_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "message.h"

/* The largest secret file we read; anything bigger is a mistake (a certificate bundle, a log). */
#define SECRETS_MAX_FILE 65536

/*
 * secrets_resolve resolves one reference into a malloc'd value in *out. secrets_dir may be NULL
 * (then file: references are refused). Returns false with a reason in err.
 */
bool secrets_resolve(const char *ref, const char *secrets_dir, char **out, char *err,
					 size_t errlen) MUSTCHECK;

/*
 * secrets_resolve_field resolves the reference *field in place (NULL stays NULL), wiping and
 * freeing the reference it replaces; label names the field in err.
 */
bool secrets_resolve_field(char **field, const char *label, const char *secrets_dir, char *err,
						   size_t errlen) MUSTCHECK;

/*
 * secrets_resolve_profile replaces every secret reference of p (smtp.password, smtp.oauth_token,
 * smtp.client_secret, graph.client_secret) by its value, in place; the old strings are wiped and
 * freed. On failure p keeps what was already resolved and err names the field and the reference,
 * never a value.
 */
bool secrets_resolve_profile(struct Profile *p, const char *secrets_dir, char *err, size_t errlen) MUSTCHECK;

#endif
