/*
 * test_secrets.c - secrets_resolve() and secrets_resolve_profile() against a temporary dir.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secrets.h"
#include "unit.h"

static char dir[64];

static void
write_file(const char *name, const char *content)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		abort();
	fputs(content, f);
	fclose(f);
}

static void
setup(void)
{
	char big[SECRETS_MAX_FILE + 10];

	snprintf(dir, sizeof(dir), "/tmp/pgrelay-secrets-XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	write_file("pw", "s3cret\n");
	write_file("pw_crlf", "s3cret\r\n");
	write_file("two_newlines", "s3cret\n\n");
	write_file("no_newline", "s3cret");
	write_file("empty", "");
	write_file(".hidden", "hidden");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_file("big", big);
	setenv("PGRELAY_TEST_PW", "envs3cret", 1);
	setenv("PGRELAY_TEST_EMPTY", "", 1);
	unsetenv("PGRELAY_TEST_UNSET");
}

static void
teardown(void)
{
	static const char *const names[] = {"pw",    "pw_crlf", "two_newlines", "no_newline",
										"empty", ".hidden", "big"};
	char path[256];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void
test_resolve_table(void)
{
	static const struct {
		const char *ref;
		bool use_dir;
		const char *want;    /* the value, or NULL when it must fail */
		const char *err_has; /* a part of the error when failing */
	} rows[] = {
		{"plain-literal", true, "plain-literal", NULL},
		{"value:env:not-a-ref", true, "env:not-a-ref", NULL},
		{"value:", true, NULL, "is empty"},
		{"", true, NULL, "is empty"},
		{"env:PGRELAY_TEST_PW", true, "envs3cret", NULL},
		{"env:PGRELAY_TEST_UNSET", true, NULL, "env:PGRELAY_TEST_UNSET: the environment"},
		{"env:PGRELAY_TEST_EMPTY", true, NULL, "is empty"},
		{"env:", true, NULL, "no variable name"},
		{"file:pw", true, "s3cret", NULL},
		{"file:pw_crlf", true, "s3cret", NULL},
		{"file:two_newlines", true, "s3cret\n", NULL},
		{"file:no_newline", true, "s3cret", NULL},
		{"file:empty", true, NULL, "is empty"},
		{"file:missing", true, NULL, "cannot open"},
		{"file:.hidden", true, NULL, "start with '.'"},
		{"file:../etc/passwd", true, NULL, "contain '/'"},
		{"file:sub/pw", true, NULL, "contain '/'"},
		{"file:", true, NULL, "may not be empty"},
		{"file:big", true, NULL, "larger than"},
		{"file:pw", false, NULL, "no secrets directory is configured"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *out = NULL, err[512] = "";
		bool ok = secrets_resolve(rows[i].ref, rows[i].use_dir ? dir : NULL, &out, err, sizeof(err));

		if (rows[i].want != NULL) {
			CHECK(ok);
			CHECK_STR(out, rows[i].want);
		} else {
			CHECK(!ok && out == NULL);
			if (strstr(err, rows[i].err_has) == NULL)
				fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			CHECK(strstr(err, rows[i].err_has) != NULL);
			/* an error never carries the value */
			CHECK(strstr(err, "s3cret") == NULL && strstr(err, "hidden\"") == NULL);
		}
		free(out);
	}
}

static void
test_resolve_profile(void)
{
	struct Profile p;
	char err[512];

	memset(&p, 0, sizeof(p));
	p.smtp.password = strdup("file:pw");
	p.smtp.oauth_token = NULL;
	p.graph.client_secret = strdup("env:PGRELAY_TEST_PW");
	CHECK(secrets_resolve_profile(&p, dir, err, sizeof(err)));
	CHECK_STR(p.smtp.password, "s3cret");
	CHECK(p.smtp.oauth_token == NULL);
	CHECK_STR(p.graph.client_secret, "envs3cret");
	free(p.smtp.password);
	free(p.graph.client_secret);

	/* a failure names the field and the reference, not a value */
	memset(&p, 0, sizeof(p));
	p.smtp.password = strdup("literal-pw");
	p.smtp.oauth_token = strdup("env:PGRELAY_TEST_UNSET");
	CHECK(!secrets_resolve_profile(&p, dir, err, sizeof(err)));
	CHECK(strstr(err, "profile.smtp.oauth_token: secret env:PGRELAY_TEST_UNSET") != NULL);
	CHECK(strstr(err, "literal-pw") == NULL);
	CHECK_STR(p.smtp.password, "literal-pw");
	free(p.smtp.password);
	free(p.smtp.oauth_token);
}

int
main(void)
{
	setup();
	RUN(test_resolve_table);
	RUN(test_resolve_profile);
	teardown();
	return UNIT_DONE();
}
