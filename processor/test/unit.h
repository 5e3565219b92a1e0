/*
 * unit.h - the smallest table-driven unit-test harness that does the job.
 *
 * Each test program calls CHECK()/CHECK_STR() inside test functions registered with RUN(); the
 * program prints TAP-like "ok"/"not ok" lines and a final "# N passed, M failed" line, and exits
 * non-zero on any failure.
 */
#ifndef PGRELAY_UNIT_H
#define PGRELAY_UNIT_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int unit_passed, unit_failed, unit_case_failed;

#define CHECK(cond)                                                                    \
	do {                                                                               \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			unit_case_failed = 1;                                                      \
		}                                                                              \
	} while (0)

#define CHECK_STR(got, want)                                                                               \
	do {                                                                                                   \
		const char *g_ = (got), *w_ = (want);                                                              \
		if (g_ == NULL || w_ == NULL ? g_ != w_ : strcmp(g_, w_) != 0) {                                   \
			fprintf(stderr, "  %s:%d: %s\n    got:  \"%s\"\n    want: \"%s\"\n", __FILE__, __LINE__, #got, \
					g_ ? g_ : "(null)", w_ ? w_ : "(null)");                                               \
			unit_case_failed = 1;                                                                          \
		}                                                                                                  \
	} while (0)

#define RUN(fn)                           \
	do {                                  \
		unit_case_failed = 0;             \
		fn();                             \
		if (unit_case_failed) {           \
			unit_failed++;                \
			printf("not ok - %s\n", #fn); \
		} else {                          \
			unit_passed++;                \
			printf("ok - %s\n", #fn);     \
		}                                 \
	} while (0)

/* unit_capture runs fn with stderr going to a temporary file and returns what it wrote (static). */
static inline const char *
unit_capture(void (*fn)(void))
{
	static char text[8192];
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	if (tmp == NULL || saved < 0)
		return "(no temporary file)";
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(text, 1, sizeof text - 1, tmp);
	text[n] = '\0';
	fclose(tmp);
	return text;
}

#define UNIT_DONE() (printf("# %d passed, %d failed\n", unit_passed, unit_failed), unit_failed ? 1 : 0)

#endif
