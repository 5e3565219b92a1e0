/*
 * secrets.c - turn env:NAME / file:NAME / value:TEXT references into secret values.
 *
 * Why file: is strict: the secrets dir is the one place an operator puts secrets, and a NAME such
 * as "../etc/shadow" or ".hidden" must not let a profile (written by an admin role in the
 * database) read any other file the Processor can read.
 */
#include "secrets.h"

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

/* resolve_env reads the environment variable name. */
static bool
resolve_env(const char *ref, const char *name, char **out, char *err, size_t errlen)
{
	const char *v;

	if (name[0] == '\0') {
		snprintf(err, errlen, "secret reference env: has no variable name");
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
 * resolve_file reads dir/name. Symbolic links are followed on purpose: Kubernetes and Docker
 * mount secrets as links into a hidden directory of the secrets dir.
 */
static bool
resolve_file(const char *ref, const char *name, const char *dir, char **out, char *err, size_t errlen)
{
	char path[4096], *buf;
	ssize_t n;
	int fd;
	bool ok;

	if (dir == NULL || dir[0] == '\0') {
		snprintf(err, errlen, "secret %.*s: no secrets directory is configured (--secrets-dir)", SHOWN(ref));
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
		snprintf(err, errlen, "secret %.*s: cannot open %.*s: %s", SHOWN(ref), SHOWN(path), strerror(errno));
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
secrets_resolve(const char *ref, const char *secrets_dir, char **out, char *err, size_t errlen)
{
	*out = NULL;
	if (strncmp(ref, "env:", 4) == 0)
		return resolve_env(ref, ref + 4, out, err, errlen);
	if (strncmp(ref, "file:", 5) == 0)
		return resolve_file(ref, ref + 5, secrets_dir, out, err, errlen);
	if (strncmp(ref, "value:", 6) == 0)
		return dup_value(ref + 6, strlen(ref + 6), "value:", out, err, errlen);
	return dup_value(ref, strlen(ref), "(literal)", out, err, errlen);
}

bool
secrets_resolve_field(char **field, const char *label, const char *secrets_dir, char *err, size_t errlen)
{
	char inner[512], *value;

	if (*field == NULL)
		return true;
	if (!secrets_resolve(*field, secrets_dir, &value, inner, sizeof(inner))) {
		snprintf(err, errlen, "%s: %s", label, inner);
		return false;
	}
	explicit_bzero(*field, strlen(*field));
	free(*field);
	*field = value;
	return true;
}

bool
secrets_resolve_profile(struct Profile *p, const char *secrets_dir, char *err, size_t errlen)
{
	return secrets_resolve_field(&p->smtp.password, "profile.smtp.password", secrets_dir, err, errlen) &&
		   secrets_resolve_field(&p->smtp.oauth_token, "profile.smtp.oauth_token", secrets_dir, err,
								 errlen) &&
		   secrets_resolve_field(&p->smtp.client_secret, "profile.smtp.client_secret", secrets_dir, err,
								 errlen) &&
		   secrets_resolve_field(&p->graph.client_secret, "profile.graph.client_secret", secrets_dir, err,
								 errlen);
}
