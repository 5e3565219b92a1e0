/*
 * secrets.h - resolve the secret references of an email profile or a webhook channel
 * (docs/security.md, "Secrets bound to their owner").
 *
 * A reference is a literal value, value:TEXT, env:NAME or file:NAME. Only the Processor resolves
 * them, just before delivery, and only for the owner they were given to by the Processor's
 * operator: file:NAME is read from the owner's own directory of --secrets-dir
 * (DIR/profile/<name>/NAME, DIR/webhook/<channel>/NAME), and env:NAME only when --secret-env binds
 * the variable NAME to that owner. So an admin, who writes references in SQL, can name only
 * secrets that were set up for the profile or channel it writes them into. Error strings name the
 * reference and the owner but never contain a secret value.
 */
#ifndef PGRELAY_SECRETS_H
#define PGRELAY_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "compiler.h"

/* The largest secret file we read; anything bigger is a mistake (a certificate bundle, a log). */
#define SECRETS_MAX_FILE 65536
/* The longest --secret-env list, its terminating NUL included (a worker keeps a copy). */
#define SECRETS_ENV_MAX 4096

/* What a reference belongs to. */
enum SecretOwnerKind {
	SO_PROFILE, /* an email profile of pgrelay_notifier */
	SO_WEBHOOK, /* a webhook channel of pgrelay */
	SO_CHANNEL  /* a destination channel of pgrelay (pgrelay.destinations) */
};

/* The owner of the references being resolved, and where the operator keeps its secrets. */
struct SecretOwner {
	enum SecretOwnerKind kind;
	const char *name;         /* the profile's or the channel's name */
	const char *secrets_dir;  /* --secrets-dir; NULL or "" when none */
	const char *env_bindings; /* --secret-env; NULL or "" when none */
};

/* secrets_owner_kind_name is "profile" or "webhook": the first part of an owner's directory. */
const char *secrets_owner_kind_name(enum SecretOwnerKind kind);

/*
 * secrets_owner_dir writes the owner's directory (DIR/profile/NAME or DIR/webhook/NAME) into out.
 * In NAME every byte other than a letter, a digit or one of "_.-", and a leading ".", is written
 * %XX (a channel "orders/eu" has the directory webhook/orders%2Feu), so a name can never leave
 * the owner's directory. False (with err) when there is no secrets dir or the path is too long.
 */
bool secrets_owner_dir(const struct SecretOwner *o, char *out, size_t outlen, char *err,
					   size_t errlen) MUSTCHECK;

/*
 * secrets_resolve resolves one reference of owner o into a malloc'd value in *out. Returns false
 * with a reason in err.
 */
bool secrets_resolve(const char *ref, const struct SecretOwner *o, char **out, char *err,
					 size_t errlen) MUSTCHECK;

/*
 * secrets_resolve_field resolves the reference *field in place (NULL stays NULL), wiping and
 * freeing the reference it replaces; label names the field in err.
 */
bool secrets_resolve_field(char **field, const char *label, const struct SecretOwner *o, char *err,
						   size_t errlen) MUSTCHECK;

/*
 * SECRETS_SQLSTATE is the SQLSTATE pgrelay.log records for an attempt that failed because a secret
 * could not be read (class F0, configuration file error: pgrelay.error_kind() says configuration).
 */
#define SECRETS_SQLSTATE "F0000"

/*
 * secrets_hint says what to do about a reference that could not be resolved, from the reason
 * secrets_resolve gave (err names the reference, the file or the variable; the hint the step).
 */
const char *secrets_hint(const char *err);

/*
 * secrets_check_env_bindings validates a --secret-env list: entries VAR=profile/NAME or
 * VAR=webhook/CHANNEL, separated by commas or white space. VAR is a shell variable name and never
 * one of the Processor's own connection settings (PG*, but PGRELAY_* is allowed). False with the
 * reason in err.
 */
bool secrets_check_env_bindings(const char *list, char *err, size_t errlen) MUSTCHECK;

/*
 * secrets_stray_files counts the regular files directly in dir: secrets of the layout before
 * owners (DIR/NAME) that no reference can reach any more. -1 when dir cannot be read.
 */
int secrets_stray_files(const char *dir);

#endif
