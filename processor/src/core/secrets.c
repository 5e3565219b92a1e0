/*
 * secrets.c - turn env:NAME / file:NAME / value:TEXT references into secret values, each for the
 * owner (an email profile, a webhook channel) the operator gave it to.
 *
 * Why both are bound to an owner: references are written in SQL by admin roles, who must not be
 * able to point a profile or a webhook they control at a secret set up for another one (or at
 * the Processor's own database password) and have the Processor send it to a server of theirs.
 * Why file: names are strict besides: a NAME such as "../etc/shadow" or ".hidden" must not leave
 * the owner's directory.
 */
#include "secrets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utf8.h"

/* SHOWN(s) is "%.*s"'s pair of arguments for at most 200 bytes of s, never half a character. */
#define SHOWN(s) (int) utf8_prefix((s), 200), (s)

/* dup_value copies a resolved value, failing with a clear reason when it is empty. */
static bool
dup_value(const char *v, size_t len, const char *what, char **out, char *err, size_t errlen)
{
	if (len == 0) {
		snprintf(err, errlen, "secret %s is empty", what);
		return false;
	}
	*out = strndup(v, len);
	if (*out == NULL) {
		snprintf(err, errlen, "out of memory resolving secret %s", what);
		return false;
	}
	return true;
}

/* secrets_owner_kind_name: the owner kinds as the docs, the directories and --secret-env name them. */
const char *
secrets_owner_kind_name(enum SecretOwnerKind kind)
{
	return kind == SO_PROFILE ? "profile" : kind == SO_WEBHOOK ? "webhook" : "channel";
}

/* OWNER(o) is "%s/%.*s"'s arguments naming the owner in errors: "profile/default". */
#define OWNER(o) secrets_owner_kind_name((o)->kind), (int) utf8_prefix((o)->name, 150), (o)->name

/* plain_byte: a byte an owner's name keeps as is in its directory name. */
static bool
plain_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		   c == '-' || c == '.';
}

bool
secrets_owner_dir(const struct SecretOwner *o, char *out, size_t outlen, char *err, size_t errlen)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *) o->name;
	size_t n;

	if (o->secrets_dir == NULL || o->secrets_dir[0] == '\0') {
		snprintf(err, errlen, "no secrets directory is configured (--secrets-dir)");
		return false;
	}
	if (s == NULL || *s == '\0') {
		snprintf(err, errlen, "the %s has no name", secrets_owner_kind_name(o->kind));
		return false;
	}
	n = (size_t) snprintf(out, outlen, "%s/%s/", o->secrets_dir, secrets_owner_kind_name(o->kind));
	for (; n < outlen && *s && n + 4 < outlen; s++) {
		if (plain_byte(*s) && !(*s == '.' && s == (const unsigned char *) o->name))
			out[n++] = (char) *s;
		else {
			out[n++] = '%';
			out[n++] = hex[*s >> 4];
			out[n++] = hex[*s & 15];
		}
	}
	if (*s != '\0' || n >= outlen) {
		snprintf(err, errlen, "the secrets directory of %s/%.*s is too long a path", OWNER(o));
		return false;
	}
	out[n] = '\0';
	return true;
}

/* A --secret-env entry VAR=KIND/NAME, as pointers into the list. */
struct Binding {
	const char *var, *kind, *name;
	size_t var_len, kind_len, name_len;
};

/* is_separator: what separates two --secret-env entries. */
static bool
is_separator(char c)
{
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * next_binding reads the entry at *p into b and moves *p past it. Returns 1 for an entry, 0 at
 * the end of the list, -1 for an entry that is not VAR=KIND/NAME (b->var then points at it).
 */
static int
next_binding(const char **p, struct Binding *b)
{
	const char *s = *p, *end, *eq, *slash;

	while (*s && is_separator(*s))
		s++;
	if (*s == '\0')
		return 0;
	for (end = s; *end && !is_separator(*end); end++)
		;
	*p = end;
	memset(b, 0, sizeof(*b));
	b->var = s;
	b->var_len = (size_t) (end - s);
	eq = memchr(s, '=', (size_t) (end - s));
	slash = eq ? memchr(eq, '/', (size_t) (end - eq)) : NULL;
	if (eq == NULL || slash == NULL || slash + 1 == end || memchr(eq + 1, '=', (size_t) (end - eq - 1)))
		return -1;
	b->var_len = (size_t) (eq - s);
	b->kind = eq + 1;
	b->kind_len = (size_t) (slash - eq - 1);
	b->name = slash + 1;
	b->name_len = (size_t) (end - slash - 1);
	return 1;
}

/* var_name_ok: a shell variable name ([A-Za-z_][A-Za-z0-9_]*). */
static bool
var_name_ok(const char *v, size_t len)
{
	size_t i;

	if (len == 0 || (v[0] >= '0' && v[0] <= '9'))
		return false;
	for (i = 0; i < len; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= '0' && v[i] <= '9') ||
			  v[i] == '_'))
			return false;
	return true;
}

/*
 * own_setting: a variable libpq reads (PGPASSWORD, PGPASSFILE, PGSERVICEFILE, ...) is the
 * Processor's own connection, never a secret it may hand to a profile or a webhook.
 */
static bool
own_setting(const char *v, size_t len)
{
	return len >= 2 && strncmp(v, "PG", 2) == 0 && !(len >= 8 && strncmp(v, "PGRELAY_", 8) == 0);
}

/* kind_of: the owner kind an entry names, or -1. */
static int
kind_of(const struct Binding *b)
{
	if (b->kind_len == 7 && strncmp(b->kind, "profile", 7) == 0)
		return SO_PROFILE;
	if (b->kind_len == 7 && strncmp(b->kind, "webhook", 7) == 0)
		return SO_WEBHOOK;
	if (b->kind_len == 7 && strncmp(b->kind, "channel", 7) == 0)
		return SO_CHANNEL;
	return -1;
}

bool
secrets_check_env_bindings(const char *list, char *err, size_t errlen)
{
	const char *p = list ? list : "";
	struct Binding b;
	int r;

	while ((r = next_binding(&p, &b)) != 0) {
		int shown = (int) utf8_prefix(b.var, b.var_len < 100 ? b.var_len : 100);

		if (r < 0) {
			snprintf(
				err, errlen,
				"\"%.*s\" is not VARIABLE=profile/NAME, VARIABLE=webhook/CHANNEL or VARIABLE=channel/CHANNEL",
				shown, b.var);
			return false;
		}
		if (!var_name_ok(b.var, b.var_len)) {
			snprintf(err, errlen, "\"%.*s\" is not an environment variable name", shown, b.var);
			return false;
		}
		if (own_setting(b.var, b.var_len)) {
			snprintf(err, errlen,
					 "%.*s is one of the Processor's own connection settings (PG*): it cannot be bound to a "
					 "profile, a webhook or a channel",
					 shown, b.var);
			return false;
		}
		if (kind_of(&b) < 0) {
			snprintf(err, errlen, "%.*s: \"%.*s\" is neither profile, webhook nor channel", shown, b.var,
					 (int) utf8_prefix(b.kind, b.kind_len < 40 ? b.kind_len : 40), b.kind);
			return false;
		}
	}
	return true;
}

/* bound: --secret-env binds the variable name to owner o. */
static bool
bound(const char *name, const struct SecretOwner *o)
{
	const char *p = o->env_bindings ? o->env_bindings : "";
	size_t len = strlen(name);
	struct Binding b;
	int r;

	while ((r = next_binding(&p, &b)) != 0)
		if (r > 0 && b.var_len == len && strncmp(b.var, name, len) == 0 && kind_of(&b) == (int) o->kind &&
			b.name_len == strlen(o->name) && strncmp(b.name, o->name, b.name_len) == 0)
			return true;
	return false;
}

/* resolve_env reads the environment variable name, if the operator bound it to the owner. */
static bool
resolve_env(const char *ref, const char *name, const struct SecretOwner *o, char **out, char *err,
			size_t errlen)
{
	const char *v;

	if (name[0] == '\0') {
		snprintf(err, errlen, "secret reference env: has no variable name");
		return false;
	}
	if (own_setting(name, strlen(name))) {
		snprintf(err, errlen,
				 "secret %.*s: the Processor's own connection settings are never secrets of %s/%.*s",
				 SHOWN(ref), OWNER(o));
		return false;
	}
	if (!bound(name, o)) {
		snprintf(err, errlen,
				 "secret %.*s is not bound to %s/%.*s (the Processor's secret-env setting lists which "
				 "variables each profile and channel may use)",
				 SHOWN(ref), OWNER(o));
		return false;
	}
	v = getenv(name);
	if (v == NULL) {
		snprintf(err, errlen, "secret %.*s: the environment variable is not set", SHOWN(ref));
		return false;
	}
	return dup_value(v, strlen(v), ref, out, err, errlen);
}

/* read_fd reads up to SECRETS_MAX_FILE bytes; returns the length or -1 (too big, I/O error). */
static ssize_t
read_fd(int fd, char *buf)
{
	size_t n = 0;

	for (;;) {
		ssize_t r = read(fd, buf + n, SECRETS_MAX_FILE + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return (ssize_t) n;
		n += (size_t) r;
		if (n > SECRETS_MAX_FILE)
			return -1;
	}
}

/*
 * resolve_file reads the owner's dir/name. Symbolic links are followed on purpose: Kubernetes and
 * Docker mount secrets as links into a hidden directory of the directory they mount.
 */
static bool
resolve_file(const char *ref, const char *name, const struct SecretOwner *o, char **out, char *err,
			 size_t errlen)
{
	char dir[4096], path[4096], why[300], *buf;
	ssize_t n;
	int fd;
	bool ok;

	if (!secrets_owner_dir(o, dir, sizeof dir, why, sizeof why)) {
		snprintf(err, errlen, "secret %.*s of %s/%.*s: %s", SHOWN(ref), OWNER(o), why);
		return false;
	}
	if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL) {
		snprintf(err, errlen,
				 "secret %.*s: the name may not be empty, contain '/' or start "
				 "with '.'",
				 SHOWN(ref));
		return false;
	}
	if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		snprintf(err, errlen, "secret %.*s: path too long", SHOWN(ref));
		return false;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "secret %.*s of %s/%.*s: cannot open %.*s: %s", SHOWN(ref), OWNER(o),
				 SHOWN(path), strerror(errno));
		return false;
	}
	buf = malloc(SECRETS_MAX_FILE + 1);
	n = buf ? read_fd(fd, buf) : -1;
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "secret %.*s: cannot read %.*s (error or larger than %d bytes)", SHOWN(ref),
				 SHOWN(path), SECRETS_MAX_FILE);
		free(buf);
		return false;
	}
	/* Drop one trailing newline (an editor's or `echo`'s), CRLF included. */
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	ok = dup_value(buf, (size_t) n, ref, out, err, errlen);
	explicit_bzero(buf, SECRETS_MAX_FILE + 1);
	free(buf);
	return ok;
}

bool
secrets_resolve(const char *ref, const struct SecretOwner *o, char **out, char *err, size_t errlen)
{
	*out = NULL;
	if (strncmp(ref, "env:", 4) == 0)
		return resolve_env(ref, ref + 4, o, out, err, errlen);
	if (strncmp(ref, "file:", 5) == 0)
		return resolve_file(ref, ref + 5, o, out, err, errlen);
	if (strncmp(ref, "value:", 6) == 0)
		return dup_value(ref + 6, strlen(ref + 6), "value:", out, err, errlen);
	return dup_value(ref, strlen(ref), "(literal)", out, err, errlen);
}

bool
secrets_resolve_field(char **field, const char *label, const struct SecretOwner *o, char *err, size_t errlen)
{
	char inner[768], *value;

	if (*field == NULL)
		return true;
	if (!secrets_resolve(*field, o, &value, inner, sizeof(inner))) {
		snprintf(err, errlen, "%s: %s", label, inner);
		return false;
	}
	explicit_bzero(*field, strlen(*field));
	free(*field);
	*field = value;
	return true;
}

const char *
secrets_hint(const char *err)
{
	/* the reasons of resolve_env, resolve_file, secrets_owner_dir and dup_value, in their words */
	static const struct {
		const char *says;
		const char *hint;
	} known[] = {
		{"no secrets directory is configured",
		 "set secrets-dir in the Processor's configuration (--secrets-dir) and put the secret in the "
		 "directory of its profile or webhook channel"},
		{"cannot open",
		 "create that file, readable by the user the Processor runs as (pg_relay under systemd)"},
		{"cannot read", "make that file readable by the user the Processor runs as, and at most 64 kB"},
		{"the environment variable is not set",
		 "set the variable in the Processor's environment (under systemd: /etc/pg_relay/environment), then "
		 "restart it"},
		{"is not bound to",
		 "bind the variable to its owner in the Processor's secret-env setting: VARIABLE=profile/NAME, "
		 "VARIABLE=webhook/CHANNEL or VARIABLE=channel/CHANNEL"},
		{"own connection settings",
		 "use a variable of the profile's or channel's own, bound with secret-env"},
		/* before "is empty", which it says too */
		{"the resolved value is empty or has a control character",
		 "a header's secret must be one line of text: fix the file or the variable it names"},
		{"is empty", "write the secret into the file or the variable the reference names"},
	};
	size_t i;

	for (i = 0; err != NULL && i < sizeof known / sizeof known[0]; i++)
		if (strstr(err, known[i].says) != NULL)
			return known[i].hint;
	return "fix the secret reference the error names (file:NAME is read from the directory of its profile or "
		   "webhook channel, env:NAME needs a secret-env binding)";
}

int
secrets_stray_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat st;
	char path[4096];
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((size_t) snprintf(path, sizeof path, "%s/%s", dir, de->d_name) < sizeof path &&
			stat(path, &st) == 0 && S_ISREG(st.st_mode))
			n++;
	}
	closedir(d);
	return n;
}
