/*
 * test_secrets.c - secrets bound to their owner: secrets_resolve() and profile_resolve_secrets()
 * against a temporary secrets dir with a directory per owner, --secret-env bindings, the owner
 * directory names and the old flat layout's stray files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "message.h"
#include "secrets.h"
#include "unit.h"

static char dir[64];

/* The files of the test dir, relative to it; directories are made on the way. */
static const char *const files[][2] = {
	{"profile/default/pw", "s3cret\n"},
	{"profile/default/pw_crlf", "s3cret\r\n"},
	{"profile/default/two_newlines", "s3cret\n\n"},
	{"profile/default/no_newline", "s3cret"},
	{"profile/default/empty", ""},
	{"profile/default/.hidden", "hidden"},
	{"profile/other/pw", "other-s3cret"},
	{"webhook/orders%2Feu/token", "hook-s3cret"},
	{"stray", "flat-s3cret"},
};

static void
write_file(const char *rel, const char *content)
{
	char path[256], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0700);
		*slash = '/';
	}
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
	size_t i;

	snprintf(dir, sizeof(dir), "/tmp/pgrelay-secrets-XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		write_file(files[i][0], files[i][1]);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_file("profile/default/big", big);
	setenv("PGRELAY_TEST_PW", "envs3cret", 1);
	setenv("PGRELAY_TEST_EMPTY", "", 1);
	setenv("OTHER_PW", "other-envs3cret", 1);
	setenv("PGPASSWORD", "db-s3cret", 1);
	unsetenv("PGRELAY_TEST_UNSET");
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* The bindings of the table below: two variables for default, one for other, one for a webhook. */
static const char bindings[] =
	"PGRELAY_TEST_PW=profile/default, PGRELAY_TEST_EMPTY=profile/default\n"
	"PGRELAY_TEST_UNSET=profile/default,OTHER_PW=profile/other "
	"PGRELAY_TEST_PW=webhook/orders/eu PGPASSWORD=profile/default OTHER_PW=channel/stream";

static void
test_resolve_table(void)
{
	static const struct {
		const char *ref;
		enum SecretOwnerKind kind;
		const char *owner;
		bool use_dir;
		const char *want;    /* the value, or NULL when it must fail */
		const char *err_has; /* a part of the error when failing */
	} rows[] = {
		{"plain-literal", SO_PROFILE, "default", true, "plain-literal", NULL},
		{"value:env:not-a-ref", SO_PROFILE, "default", true, "env:not-a-ref", NULL},
		{"value:", SO_PROFILE, "default", true, NULL, "is empty"},
		{"", SO_PROFILE, "default", true, NULL, "is empty"},
		/* env: only the variables bound to the owner */
		{"env:PGRELAY_TEST_PW", SO_PROFILE, "default", true, "envs3cret", NULL},
		{"env:PGRELAY_TEST_PW", SO_WEBHOOK, "orders/eu", true, "envs3cret", NULL},
		{"env:OTHER_PW", SO_PROFILE, "other", true, "other-envs3cret", NULL},
		{"env:OTHER_PW", SO_PROFILE, "default", true, NULL, "env:OTHER_PW is not bound to profile/default"},
		{"env:PGRELAY_TEST_PW", SO_PROFILE, "other", true, NULL, "is not bound to profile/other"},
		{"env:PGRELAY_TEST_PW", SO_WEBHOOK, "default", true, NULL, "is not bound to webhook/default"},
		/* a destination channel's own, apart from a webhook's of the same name */
		{"env:OTHER_PW", SO_CHANNEL, "stream", true, "other-envs3cret", NULL},
		{"env:OTHER_PW", SO_WEBHOOK, "stream", true, NULL, "is not bound to webhook/stream"},
		{"env:PGRELAY_TEST_PW", SO_CHANNEL, "orders/eu", true, NULL, "is not bound to channel/orders"},
		{"file:pw", SO_CHANNEL, "default", true, NULL, "channel/default/pw"},
		{"env:PGRELAY_TEST_PW", SO_PROFILE, "defaul", true, NULL, "is not bound"},
		{"env:HOME", SO_PROFILE, "default", true, NULL, "is not bound"},
		{"env:PGPASSWORD", SO_PROFILE, "default", true, NULL, "own connection settings"},
		{"env:PGHOST", SO_WEBHOOK, "orders/eu", true, NULL, "own connection settings"},
		{"env:PGRELAY_TEST_UNSET", SO_PROFILE, "default", true, NULL,
		 "env:PGRELAY_TEST_UNSET: the environment"},
		{"env:PGRELAY_TEST_EMPTY", SO_PROFILE, "default", true, NULL, "is empty"},
		{"env:", SO_PROFILE, "default", true, NULL, "no variable name"},
		/* file: only from the owner's own directory */
		{"file:pw", SO_PROFILE, "default", true, "s3cret", NULL},
		{"file:pw", SO_PROFILE, "other", true, "other-s3cret", NULL},
		{"file:token", SO_WEBHOOK, "orders/eu", true, "hook-s3cret", NULL},
		{"file:token", SO_PROFILE, "default", true, NULL, "profile/default/token"},
		{"file:pw", SO_WEBHOOK, "default", true, NULL, "webhook/default/pw"},
		{"file:pw", SO_PROFILE, "nobody", true, NULL, "cannot open"},
		{"file:stray", SO_PROFILE, "default", true, NULL, "cannot open"},
		{"file:pw_crlf", SO_PROFILE, "default", true, "s3cret", NULL},
		{"file:two_newlines", SO_PROFILE, "default", true, "s3cret\n", NULL},
		{"file:no_newline", SO_PROFILE, "default", true, "s3cret", NULL},
		{"file:empty", SO_PROFILE, "default", true, NULL, "is empty"},
		{"file:missing", SO_PROFILE, "default", true, NULL, "cannot open"},
		{"file:.hidden", SO_PROFILE, "default", true, NULL, "start with '.'"},
		{"file:../other/pw", SO_PROFILE, "default", true, NULL, "contain '/'"},
		{"file:../../stray", SO_PROFILE, "default", true, NULL, "contain '/'"},
		{"file:", SO_PROFILE, "default", true, NULL, "may not be empty"},
		{"file:big", SO_PROFILE, "default", true, NULL, "larger than"},
		{"file:pw", SO_PROFILE, "default", false, NULL, "no secrets directory is configured"},
		/* an owner name cannot climb out of its directory */
		{"file:pw", SO_PROFILE, "../profile/default", true, NULL, "cannot open"},
		{"file:pw", SO_PROFILE, "", true, NULL, "has no name"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct SecretOwner o = {rows[i].kind, rows[i].owner, rows[i].use_dir ? dir : NULL, bindings};
		char *out = NULL, err[768] = "";
		bool ok = secrets_resolve(rows[i].ref, &o, &out, err, sizeof(err));

		if (rows[i].want != NULL) {
			if (!ok)
				fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			CHECK(ok);
			CHECK_STR(out, rows[i].want);
		} else {
			CHECK(!ok && out == NULL);
			if (strstr(err, rows[i].err_has) == NULL)
				fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			CHECK(strstr(err, rows[i].err_has) != NULL);
			/* an error never carries a value */
			CHECK(strstr(err, "s3cret") == NULL && strstr(err, "hidden\"") == NULL);
		}
		free(out);
	}
}

/* Each way a reference fails has a hint that says what to do about it. */
static void
test_hints(void)
{
	static const struct {
		const char *ref;
		bool use_dir;
		const char *hint_has;
	} rows[] = {
		{"file:missing", true, "create that file"},
		{"file:big", true, "at most 64 kB"},
		{"file:pw", false, "set secrets-dir"},
		{"env:PGRELAY_TEST_UNSET", true, "set the variable in the Processor's environment"},
		{"env:HOME", true, "secret-env setting: VARIABLE=profile/NAME"},
		{"env:PGPASSWORD", true, "a variable of the profile's or channel's own"},
		{"file:empty", true, "write the secret"},
		{"file:.hidden", true, "fix the secret reference"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct SecretOwner o = {SO_PROFILE, "default", rows[i].use_dir ? dir : NULL, bindings};
		char *out = NULL, err[768] = "";

		CHECK(!secrets_resolve(rows[i].ref, &o, &out, err, sizeof(err)));
		if (strstr(secrets_hint(err), rows[i].hint_has) == NULL)
			fprintf(stderr, "  row %zu: err \"%s\", hint \"%s\"\n", i, err, secrets_hint(err));
		CHECK(strstr(secrets_hint(err), rows[i].hint_has) != NULL);
	}
	CHECK(strstr(secrets_hint("header X-Key: the resolved value is empty or has a control character"),
				 "one line of text") != NULL);
}

static void
test_no_bindings_no_env(void)
{
	struct SecretOwner o = {SO_PROFILE, "default", dir, NULL};
	char *out = NULL, err[768];

	CHECK(!secrets_resolve("env:PGRELAY_TEST_PW", &o, &out, err, sizeof(err)));
	CHECK(strstr(err, "is not bound to profile/default") != NULL);
	o.env_bindings = "";
	CHECK(!secrets_resolve("env:PGRELAY_TEST_PW", &o, &out, err, sizeof(err)));
	CHECK(out == NULL);
}

static void
test_resolve_profile(void)
{
	struct Profile p;
	char err[768];

	memset(&p, 0, sizeof(p));
	p.name = "default";
	p.smtp.password = strdup("file:pw");
	p.smtp.oauth_token = NULL;
	p.graph.client_secret = strdup("env:PGRELAY_TEST_PW");
	CHECK(profile_resolve_secrets(&p, dir, bindings, err, sizeof(err)));
	CHECK_STR(p.smtp.password, "s3cret");
	CHECK(p.smtp.oauth_token == NULL);
	CHECK_STR(p.graph.client_secret, "envs3cret");
	free(p.smtp.password);
	free(p.graph.client_secret);

	/* another profile naming default's references gets nothing */
	memset(&p, 0, sizeof(p));
	p.name = "other";
	p.smtp.password = strdup("file:pw");
	p.graph.client_secret = strdup("env:PGRELAY_TEST_PW");
	CHECK(!profile_resolve_secrets(&p, dir, bindings, err, sizeof(err)));
	CHECK(
		strstr(err, "profile.graph.client_secret: secret env:PGRELAY_TEST_PW is not bound to profile/other"));
	CHECK_STR(p.smtp.password, "other-s3cret"); /* its own file: */
	free(p.smtp.password);
	free(p.graph.client_secret);

	/* a failure names the field and the reference, not a value */
	memset(&p, 0, sizeof(p));
	p.name = "default";
	p.smtp.password = strdup("literal-pw");
	p.smtp.oauth_token = strdup("env:PGRELAY_TEST_UNSET");
	CHECK(!profile_resolve_secrets(&p, dir, bindings, err, sizeof(err)));
	CHECK(strstr(err, "profile.smtp.oauth_token: secret env:PGRELAY_TEST_UNSET") != NULL);
	CHECK(strstr(err, "literal-pw") == NULL);
	CHECK_STR(p.smtp.password, "literal-pw");
	free(p.smtp.password);
	free(p.smtp.oauth_token);
}

static void
test_owner_dir(void)
{
	static const struct {
		enum SecretOwnerKind kind;
		const char *name, *want;
	} rows[] = {
		{SO_PROFILE, "default", "/s/profile/default"},
		{SO_PROFILE, "a.b-c_D9", "/s/profile/a.b-c_D9"},
		{SO_WEBHOOK, "orders/eu", "/s/webhook/orders%2Feu"},
		{SO_WEBHOOK, "a:b", "/s/webhook/a%3Ab"},
		{SO_WEBHOOK, "..", "/s/webhook/%2E."},
		{SO_WEBHOOK, ".x/../y", "/s/webhook/%2Ex%2F..%2Fy"},
		{SO_PROFILE, "a b%", "/s/profile/a%20b%25"},
		{SO_PROFILE, "\xc3\xbc", "/s/profile/%C3%BC"},
	};
	char out[256], err[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct SecretOwner o = {rows[i].kind, rows[i].name, "/s", NULL};

		CHECK(secrets_owner_dir(&o, out, sizeof out, err, sizeof err));
		CHECK_STR(out, rows[i].want);
	}
	{
		struct SecretOwner o = {SO_PROFILE, "abcdefgh", "/s", NULL};

		CHECK(!secrets_owner_dir(&o, out, 16, err, sizeof err)); /* "/s/profile/abcdefgh" does not fit */
		CHECK(strstr(err, "too long") != NULL);
		o.secrets_dir = "";
		CHECK(!secrets_owner_dir(&o, out, sizeof out, err, sizeof err));
		CHECK(strstr(err, "no secrets directory") != NULL);
	}
}

static void
test_check_env_bindings(void)
{
	static const struct {
		const char *list;
		const char *err_has; /* NULL: valid */
	} rows[] = {
		{"", NULL},
		{"  ,, ", NULL},
		{"SMTP_PASSWORD=profile/default", NULL},
		{"A=profile/x,B=webhook/orders/eu C=webhook/a:b\tD=profile/x", NULL},
		{"REDIS_PW=channel/orders", NULL},
		{"PGRELAY_SMTP=profile/default", NULL},
		{"_X1=profile/p", NULL},
		{"PGPASSWORD=profile/default", "own connection settings"},
		{"PGPASSFILE=webhook/x", "own connection settings"},
		{"PG=profile/default", "own connection settings"},
		{"SMTP_PASSWORD", "is not VARIABLE=profile/NAME"},
		{"SMTP_PASSWORD=default", "is not VARIABLE=profile/NAME"},
		{"SMTP_PASSWORD=profile/", "is not VARIABLE=profile/NAME"},
		{"X=profile/a=b", "is not VARIABLE=profile/NAME"},
		{"=profile/a", "not an environment variable name"},
		{"1X=profile/a", "not an environment variable name"},
		{"X-Y=profile/a", "not an environment variable name"},
		{"X=chanel/a", "is neither profile, webhook nor channel"},
		{"X=Profile/a", "is neither profile, webhook nor channel"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char err[512] = "";
		bool ok = secrets_check_env_bindings(rows[i].list, err, sizeof err);

		if (rows[i].err_has == NULL) {
			if (!ok)
				fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			CHECK(ok);
		} else {
			if (ok || strstr(err, rows[i].err_has) == NULL)
				fprintf(stderr, "  row %zu: err \"%s\"\n", i, err);
			CHECK(!ok && strstr(err, rows[i].err_has) != NULL);
		}
	}
}

static void
test_stray_files(void)
{
	CHECK(secrets_stray_files(dir) == 1); /* "stray"; profile/ and webhook/ are directories */
	CHECK(secrets_stray_files("/nonexistent-pgrelay-dir") == -1);
}

int
main(void)
{
	setup();
	RUN(test_resolve_table);
	RUN(test_hints);
	RUN(test_no_bindings_no_env);
	RUN(test_resolve_profile);
	RUN(test_owner_dir);
	RUN(test_check_env_bindings);
	RUN(test_stray_files);
	teardown();
	return UNIT_DONE();
}
