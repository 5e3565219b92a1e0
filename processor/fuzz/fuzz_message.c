/*
 * fuzz_message.c - libFuzzer target: the document of pgrelay_notifier.fetch() as raw JSON.
 *
 * message_parse() must refuse what it cannot use with a reason that can be stored (valid UTF-8),
 * and every message it accepts must become MIME bytes that pass the strict checks of
 * fuzz_check_mime(): the parser is the gate in front of SMTP and the MIME builder.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "message.h"
#include "mime.h"

char *fuzz_expect_json(const struct Message *m);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *json = malloc(size + 1), err[512];
	struct Message m;

	if (json == NULL)
		return 0;
	memcpy(json, data, size);
	json[size] = '\0';
	if (message_parse(json, &m, err, sizeof err)) {
		struct MimeOptions o = {1796083200, 0x0123456789abcdefULL};
		struct Buf out = BUF_INIT;
		char berr[256];

		FUZZ_ASSERT(mime_build(&m, &o, &out, berr, sizeof berr), "mime_build: %s", berr);
		fuzz_check_mime(&out, &m);
		if (getenv("FUZZ_DUMP_DIR")) {
			char *expect = fuzz_expect_json(&m);

			fuzz_dump("message", data, size, &out, expect);
			free(expect);
		}
		buf_free(&out);
		message_free(&m);
	} else {
		FUZZ_ASSERT(err[0] != '\0', "a document refused without a reason");
		FUZZ_ASSERT(fuzz_utf8_valid(err, strlen(err)), "the reason is not valid UTF-8: %s", err);
	}
	free(json);
	return 0;
}
