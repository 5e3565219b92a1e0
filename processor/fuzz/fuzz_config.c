/*
 * fuzz_config.c - libFuzzer target: the config file and the command line.
 *
 * The input is a config file (read through --config), and also, split at line breaks, a command
 * line. Whatever it holds, config_load() ends in one of its three results; an error is one line
 * of printable ASCII (bytes of the input are shown as \xNN), and a configuration it accepts
 * describes itself (the values of the "started" line) in words that load again to the same
 * configuration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[] = "/tmp/pgrelay-fuzz-config-XXXXXX";
static char again[] = "/tmp/pgrelay-fuzz-again-XXXXXX";

static void
write_file(const char *p, const void *data, size_t size)
{
	FILE *f = fopen(p, "wb");

	FUZZ_ASSERT(f != NULL, "cannot write %s", p);
	fwrite(data, 1, size, f);
	fclose(f);
}

static void
check_error(const char *err)
{
	const unsigned char *s;

	FUZZ_ASSERT(err[0] != '\0', "an error without a message");
	for (s = (const unsigned char *) err; *s; s++)
		FUZZ_ASSERT(*s >= 0x20 && *s < 0x7f, "byte 0x%02x in the error line: %s", *s, err);
}

/* describe renders cf as a config file, every setting but the connection string. */
static void
describe(const struct Config *cf, struct Buf *out)
{
	struct ConfigFields fields;
	int i;

	config_describe(cf, &fields);
	for (i = 0; i < fields.n; i++) {
		const struct LogField *f = &fields.f[i];

		if (strcmp(f->key, "dbname") == 0)
			continue;
		if (f->type == LT_INT)
			FUZZ_ASSERT(buf_printf(out, "%s = %lld\n", f->key, f->v.i), "oom");
		else
			FUZZ_ASSERT(buf_printf(out, "%s = '%s'\n", f->key, f->v.s ? f->v.s : ""), "oom");
	}
}

static void
round_trip(const struct Config *cf)
{
	struct Buf first = BUF_INIT, second = BUF_INIT, out = BUF_INIT;
	char arg[64], err[512];
	char *argv[] = {"pg_relay", arg, NULL};
	struct Config cf2;
	int rc;

	describe(cf, &first);
	write_file(again, first.data, first.len);
	snprintf(arg, sizeof arg, "--config=%s", again);
	rc = config_load(&cf2, 2, argv, &out, err, sizeof err);
	FUZZ_ASSERT(rc == 0, "the described configuration does not load again: %s\n%s", err, first.data);
	describe(&cf2, &second);
	FUZZ_ASSERT(strcmp(first.data, second.data) == 0, "loads again as something else:\n%s---\n%s", first.data,
				second.data);
	config_free(&cf2);
	buf_free(&first);
	buf_free(&second);
	buf_free(&out);
}

static void
load(int argc, char **argv)
{
	struct Config cf;
	struct Buf out = BUF_INIT;
	char err[512] = "";
	int rc = config_load(&cf, argc, argv, &out, err, sizeof err);

	FUZZ_ASSERT(rc == 0 || rc == 1 || rc == 2, "config_load returned %d", rc);
	if (rc == 2)
		check_error(err);
	if (rc == 0)
		round_trip(&cf);
	config_free(&cf);
	buf_free(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	char arg[64], *copy, *argv[34], *p;
	int argc = 1;

	if (!ready) {
		FUZZ_ASSERT(mkstemp(path) >= 0 && mkstemp(again) >= 0, "no temporary files");
		ready = true;
	}
	/* the input as a config file */
	write_file(path, data, size);
	snprintf(arg, sizeof arg, "--config=%s", path);
	argv[0] = "pg_relay";
	argv[1] = arg;
	argv[2] = NULL;
	load(2, argv);
	/* the input as a command line, one argument a line */
	copy = malloc(size + 1);
	FUZZ_ASSERT(copy != NULL, "oom");
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (p = strtok(copy, "\n"); p != NULL && argc < 32; p = strtok(NULL, "\n"))
		argv[argc++] = p;
	argv[argc] = NULL;
	load(argc, argv);
	free(copy);
	return 0;
}
