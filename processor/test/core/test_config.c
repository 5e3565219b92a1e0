/*
 * test_config.c - the settings table: durations, flags, config files, precedence, reload.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "unit.h"

static void
test_durations(void)
{
	static const struct {
		const char *text;
		bool ok;
		long ms;
	} cases[] = {
		{"1s", true, 1000},
		{"250ms", true, 250},
		{"2min", true, 120000},
		{"1h", true, 3600000},
		{"1.5s", true, 1500},
		{"3", true, 3000},
		{" 5 s ", true, 5000},
		{"10m", true, 600000},
		{"", false, 0},
		{"s", false, 0},
		{"-1s", false, 0},
		{"1 parsec", false, 0},
		{"1sx", false, 0},
		{"1e20s", false, 0},
		/* hexadecimal, exponents, infinities and a bare dot are not durations (strtod takes them) */
		{"0x10", false, 0},
		{"1e3", false, 0},
		{"1e3ms", false, 0},
		{"inf", false, 0},
		{"nan", false, 0},
		{"1.", false, 0},
		{".5s", false, 0},
		{"0.5s", true, 500},
		{"9999999999999999s", false, 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long ms = -1;
		bool ok = config_parse_duration(cases[i].text, &ms);

		if (ok != cases[i].ok || (ok && ms != cases[i].ms)) {
			fprintf(stderr, "  duration \"%s\": ok=%d ms=%ld\n", cases[i].text, ok, ms);
			unit_case_failed = 1;
		}
	}
}

static void
test_ints(void)
{
	static const struct {
		const char *text;
		long min, max;
		bool ok;
		long v;
	} cases[] = {
		{"4", 1, 64, true, 4},
		{"64", 1, 64, true, 64},
		{"1", 1, 64, true, 1},
		{"007", 1, 64, true, 7},
		{"65", 1, 64, false, 0},
		{"0", 1, 64, false, 0},
		/* white space, signs and what follows the digits: strtol would skip or take them */
		{" 4", 1, 64, false, 0},
		{"4 ", 1, 64, false, 0},
		{"\t4", 1, 64, false, 0},
		{"4\n", 1, 64, false, 0},
		{"+4", 1, 64, false, 0},
		{"-0", 0, 64, false, 0},
		{"-4", 1, 64, false, 0},
		{"4x", 1, 64, false, 0},
		{"0x10", 1, 64, false, 0},
		{"4.0", 1, 64, false, 0},
		{"1e3", 1, 100000, false, 0},
		{"", 1, 64, false, 0},
		{"-", -5, 5, false, 0},
		/* a '-' where the range allows negative values */
		{"-5", -5, 5, true, -5},
		{"-6", -5, 5, false, 0},
		{"- 5", -5, 5, false, 0},
		{"--5", -5, 5, false, 0},
		/* overflow is an error, not LONG_MAX */
		{"9223372036854775807", 1, 9223372036854775807L, true, 9223372036854775807L},
		{"9223372036854775808", 1, 9223372036854775807L, false, 0},
		{"99999999999999999999", 1, 64, false, 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long v = -1;
		bool ok = config_parse_int(cases[i].text, cases[i].min, cases[i].max, &v);

		if (ok != cases[i].ok || (ok && v != cases[i].v)) {
			fprintf(stderr, "  int \"%s\" [%ld, %ld]: ok=%d v=%ld\n", cases[i].text, cases[i].min,
					cases[i].max, ok, v);
			unit_case_failed = 1;
		}
	}
}

/* load runs config_load on a NULL-terminated argument list. */
static int
load(struct Config *cf, char *err, size_t errlen, struct Buf *out, const char **args)
{
	char *argv[32];
	int argc = 0;

	argv[argc++] = (char *) "pg_relay";
	while (*args)
		argv[argc++] = (char *) *args++;
	argv[argc] = NULL;
	return config_load(cf, argc, argv, out, err, errlen);
}

static void
test_defaults(void)
{
	struct Config cf;

	config_defaults(&cf);
	CHECK(cf.mode == MODE_SINGLE);
	CHECK(cf.workers == 4);
	CHECK(cf.poll_interval_ms == 1000);
	CHECK(!cf.once);
	CHECK(cf.log_format == LF_TEXT && cf.log_level == LL_INFO);
	CHECK(cf.dbname == NULL && cf.secrets_dir == NULL);
	config_free(&cf);
}

static void
test_flags(void)
{
	const char *args[] = {"-d",     "dbname=x",          "--workers=8", "-i", "250ms",
						  "--once", "--log-format=json", "-vv",         NULL};
	struct Config cf;
	struct Buf out = BUF_INIT;
	char err[256] = "";

	CHECK(load(&cf, err, sizeof err, &out, args) == 0);
	CHECK_STR(cf.dbname, "dbname=x");
	CHECK(cf.workers == 8 && cf.poll_interval_ms == 250 && cf.once && cf.log_format == LF_JSON);
	CHECK(cf.log_level == LL_TRACE); /* info + two -v */
	config_free(&cf);
	buf_free(&out);
}

static void
test_bad_values(void)
{
	static const struct {
		const char *arg;
		const char *want;
	} cases[] = {
		{"--workers=65", "invalid value \"65\" for --workers: expected an integer from 1 to 64"},
		{"--workers= 4", "invalid value \" 4\" for --workers: expected an integer from 1 to 64"},
		{"--workers=+4", "invalid value \"+4\" for --workers: expected an integer from 1 to 64"},
		{"--batch-size=1000 ",
		 "invalid value \"1000 \" for --batch-size: expected an integer from 1 to 100000"},
		{"--events-per-commit=99999999999999999999",
		 "invalid value \"99999999999999999999\" for --events-per-commit: expected an integer from 1 to "
		 "1000"},
		{"--mode=x", "invalid value \"x\" for --mode: expected one of single, multi-node, leader"},
		{"--poll-interval=0",
		 "invalid value \"0\" for --poll-interval: expected a duration from 10ms to 3600s"},
		{"--once=maybe", "invalid value \"maybe\" for --once: expected on or off"},
		{"--nope", "unknown option \"--nope\""},
		{"--workers", "option \"--workers\" needs a value"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *args[] = {cases[i].arg, NULL};
		struct Config cf;
		struct Buf out = BUF_INIT;
		char err[256] = "";

		CHECK(load(&cf, err, sizeof err, &out, args) == 2);
		CHECK_STR(err, cases[i].want);
		config_free(&cf);
		buf_free(&out);
	}
}

static void
test_file_and_precedence(void)
{
	char path[] = "/tmp/pgrelay-conf-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	const char *args[] = {"-c", path, "--workers=2", NULL};
	struct Config cf;
	struct Buf out = BUF_INIT;
	char err[256] = "";

	fputs("# a comment\n\nworkers = 6\npoll_interval = 2s\nsecrets-dir = '/tmp'\n", f);
	fclose(f);
	CHECK(load(&cf, err, sizeof err, &out, args) == 0);
	CHECK(cf.workers == 2);             /* the flag wins */
	CHECK(cf.poll_interval_ms == 2000); /* the file beats the default */
	CHECK_STR(cf.secrets_dir, "/tmp");
	CHECK_STR(cf.config_file, path);
	config_free(&cf);

	f = fopen(path, "w");
	fputs("workers = 3\nbogus = 1\n", f);
	fclose(f);
	CHECK(load(&cf, err, sizeof err, &out, args) == 2);
	CHECK(strstr(err, "line 2: unknown setting \"bogus\"") != NULL);
	config_free(&cf);
	unlink(path);
	buf_free(&out);
}

/* write_file replaces the file at path with text (len bytes). */
static void
write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL && fwrite(text, 1, len, f) == len);
	if (f)
		fclose(f);
}

static void
test_file_edge_cases(void)
{
	char path[] = "/tmp/pgrelay-conf-XXXXXX", arg[64], *big;
	int fd = mkstemp(path);
	const char *abbrev1[] = {arg, NULL}, *abbrev2[] = {"--confi", path, NULL}, *plain[] = {"-c", path, NULL};
	const char *dir[] = {"--config=/tmp", NULL}, *nosecrets[] = {"--secrets-dir=/nonexistent/pgrelay", NULL};
	const char *filesecrets[] = {"--secrets-dir", path, NULL};
	const char *brokensecrets[] = {"--secrets-dir=/nonexistent\nfake\x1b[1m", NULL};
	const char *brokenconfig[] = {"--config=/nonexistent\nfake", NULL};
	const char *brokenflag[] = {"--bogus\nfake", NULL}, *brokenarg[] = {"\xef\xbb\xbfworkers", NULL};
	struct Config cf;
	struct Buf out = BUF_INIT;
	char err[512] = "";
	size_t n;

	close(fd);
	/* abbreviations of --config read the file too (getopt takes them for --config) */
	write_file(path, "workers = 7\n", 12);
	snprintf(arg, sizeof arg, "--conf=%s", path);
	CHECK(load(&cf, err, sizeof err, &out, abbrev1) == 0 && cf.workers == 7);
	config_free(&cf);
	CHECK(load(&cf, err, sizeof err, &out, abbrev2) == 0 && cf.workers == 7);
	config_free(&cf);
	/* a byte order mark is skipped; an unknown key shows its invisible bytes */
	write_file(path, "\xef\xbb\xbfworkers = 5\n", 15);
	CHECK(load(&cf, err, sizeof err, &out, plain) == 0 && cf.workers == 5);
	config_free(&cf);
	write_file(path,
			   "workers = 5\n\xe2\x80\x8b"
			   "dbname = x\n",
			   26);
	CHECK(load(&cf, err, sizeof err, &out, plain) == 2);
	CHECK(strstr(err, "line 2: unknown setting \"\\xe2\\x80\\x8bdbname\"") != NULL);
	config_free(&cf);
	/* a line longer than the limit is an error with its own number, never split into settings */
	big = malloc(70000);
	n = (size_t) snprintf(big, 70000, "workers = 2\ndbname = '");
	memset(big + n, 'x', 69000);
	memcpy(big + n + 69000, "workers = 7'\n", 14);
	write_file(path, big, n + 69014);
	free(big);
	CHECK(load(&cf, err, sizeof err, &out, plain) == 2);
	CHECK(strstr(err, "line 2: the line is longer than 65536 bytes") != NULL);
	config_free(&cf);
	/* a NUL byte in a line */
	write_file(path, "workers = 3\0 9\n", 16);
	CHECK(load(&cf, err, sizeof err, &out, plain) == 2 &&
		  strstr(err, "line 1: the line contains a NUL byte"));
	config_free(&cf);
	/* a directory is not a config file; --secrets-dir must be a directory that exists */
	CHECK(load(&cf, err, sizeof err, &out, dir) == 2 && strstr(err, "\"/tmp\" is not a regular file"));
	config_free(&cf);
	CHECK(load(&cf, err, sizeof err, &out, nosecrets) == 2 && strstr(err, "No such file or directory"));
	config_free(&cf);
	CHECK(load(&cf, err, sizeof err, &out, filesecrets) == 2 && strstr(err, "is not a directory"));
	config_free(&cf);
	/* paths are shown like values: a line break in one does not break the one error line */
	CHECK(load(&cf, err, sizeof err, &out, brokensecrets) == 2 && strchr(err, '\n') == NULL &&
		  strstr(err, "\"/nonexistent\\x0afake\\x1b[1m\": No such file or directory"));
	config_free(&cf);
	CHECK(load(&cf, err, sizeof err, &out, brokenconfig) == 2 && strchr(err, '\n') == NULL &&
		  strstr(err, "could not open config file \"/nonexistent\\x0afake\""));
	config_free(&cf);
	/* and so are unknown options and stray arguments */
	CHECK(load(&cf, err, sizeof err, &out, brokenflag) == 2 &&
		  strstr(err, "unknown option \"--bogus\\x0afake\""));
	config_free(&cf);
	CHECK(load(&cf, err, sizeof err, &out, brokenarg) == 2 &&
		  strstr(err, "unexpected argument \"\\xef\\xbb\\xbfworkers\""));
	config_free(&cf);
	unlink(path);
	buf_free(&out);
}

static void
test_help_version_sample(void)
{
	const char *help[] = {"--help", NULL}, *ver[] = {"-V", NULL}, *sample[] = {"--sample-config", NULL};
	struct Config cf;
	struct Buf out = BUF_INIT;
	char err[256];

	CHECK(load(&cf, err, sizeof err, &out, help) == 1);
	CHECK(strstr(out.data, "--poll-interval=DURATION") != NULL);
	config_free(&cf);
	buf_reset(&out);
	CHECK(load(&cf, err, sizeof err, &out, ver) == 1);
	CHECK(strncmp(out.data, "pg_relay ", 9) == 0 && strstr(out.data, "libpq ") != NULL);
	config_free(&cf);
	buf_reset(&out);
	CHECK(load(&cf, err, sizeof err, &out, sample) == 1);
	CHECK(strstr(out.data, "#workers = 4\n") != NULL);
	config_free(&cf);
	buf_free(&out);
}

/* find_field returns the field of the settings named key, or NULL. */
static const struct LogField *
find_field(const struct ConfigFields *d, const char *key)
{
	int i;

	for (i = 0; i < d->n; i++)
		if (strcmp(d->f[i].key, key) == 0)
			return &d->f[i];
	return NULL;
}

static void
test_describe_hides_password(void)
{
	static struct ConfigFields d;
	const struct LogField *f;
	struct Config cf;

	config_defaults(&cf);
	cf.dbname = strdup("host=db.example.com password=s3cret dbname=app");
	config_describe(&cf, &d);
	CHECK(d.n == CONFIG_NPARAMS);
	f = find_field(&d, "dbname");
	CHECK(f != NULL && f->type == LT_STR && strstr(f->v.s, "s3cret") == NULL);
	CHECK(f != NULL && strstr(f->v.s, "host=db.example.com") != NULL && strstr(f->v.s, "dbname=app") != NULL);
	/* integers stay numbers (JSON lines), everything else is the text the config file takes */
	f = find_field(&d, "workers");
	CHECK(f != NULL && f->type == LT_INT && f->v.i == 4);
	f = find_field(&d, "poll-interval");
	CHECK(f != NULL && f->type == LT_STR && strcmp(f->v.s, "1s") == 0);
	f = find_field(&d, "once");
	CHECK(f != NULL && f->type == LT_STR && strcmp(f->v.s, "off") == 0);
	config_free(&cf);
}

static void
test_reload_applies_only_reloadable(void)
{
	struct Config cf, fresh;
	struct Buf changed = BUF_INIT;

	config_defaults(&cf);
	config_defaults(&fresh);
	fresh.workers = 9;
	fresh.poll_interval_ms = 300;
	fresh.log_level = LL_DEBUG;
	CHECK(config_apply_reload(&cf, &fresh, &changed));
	CHECK(cf.poll_interval_ms == 300 && cf.log_level == LL_DEBUG);
	CHECK(cf.workers == 4);
	CHECK_STR(changed.data, "workers");
	config_free(&cf);
	config_free(&fresh);
	buf_free(&changed);
}

int
main(void)
{
	RUN(test_durations);
	RUN(test_ints);
	RUN(test_defaults);
	RUN(test_flags);
	RUN(test_bad_values);
	RUN(test_file_and_precedence);
	RUN(test_file_edge_cases);
	RUN(test_help_version_sample);
	RUN(test_describe_hides_password);
	RUN(test_reload_applies_only_reloadable);
	return UNIT_DONE();
}
