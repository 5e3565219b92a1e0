/*
 * fuzz_address.c - libFuzzer target: the addresses and display names of a message.
 *
 * The input is split at 0x01 bytes into fields, taken in pairs (address, display name) for From,
 * then the recipients (to, cc, bcc in turn) and Reply-To; each field is made valid UTF-8 (the
 * database holds nothing else) but keeps every control character. When the first byte is odd, the
 * addresses are made ones the notifier would take (their local part's atext, @example.org), so
 * that the display names around them reach the strict parser of check_mime.py. The document goes through
 * message_parse(), which must refuse an address or a name that could break out of a header or an
 * SMTP command; an accepted message must pass fuzz_check_mime(), its display names decoding back.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "message.h"
#include "mime.h"

char *fuzz_expect_json(const struct Message *m);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FIELDS 64

/* tame makes an address the notifier takes: the dot-atom of its characters, at example.org. */
static char *
tame(char *a)
{
	char *out = malloc(strlen(a) + 16), *o = out;
	const char *s;

	if (out == NULL)
		abort();
	for (s = a; *s && o - out < 60; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
			strchr("+_-", *s) || (*s == '.' && o > out && o[-1] != '.'))
			*o++ = *s;
	while (o > out && o[-1] == '.')
		o--;
	if (o == out)
		*o++ = 'x';
	strcpy(o, "@example.org");
	free(a);
	return out;
}

static json_t *
mailbox(char **f, int n, int i)
{
	const char *addr = i < n ? f[i] : "ann@example.org", *name = i + 1 < n ? f[i + 1] : NULL;

	return json_pack("{s:s, s:s?}", "address", addr, "name", name && name[0] ? name : NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *fields[MAX_FIELDS], *text, err[512];
	json_t *doc, *rcpts, *rt;
	struct Message m;
	size_t start = 0, i;
	int n = 0, k;

	for (i = 0; i <= size && n < MAX_FIELDS; i++)
		if (i == size || data[i] == 0x01) {
			fields[n] = fuzz_utf8_text(data + start, i - start, "");
			if (size > 0 && (data[0] & 1) && n % 2 == 0)
				fields[n] = tame(fields[n]);
			n++;
			start = i + 1;
		}
	rcpts = json_array();
	rt = json_array();
	for (k = 2; k < n; k += 2) {
		static const char *const kinds[] = {"to", "cc", "bcc"};
		json_t *mb = mailbox(fields, n, k);

		if (k / 2 % 4 == 3) {
			json_array_append_new(rt, mb);
			continue;
		}
		json_object_set_new(mb, "id", json_integer(k / 2));
		json_object_set_new(mb, "kind", json_string(kinds[k / 2 % 3]));
		json_object_set_new(mb, "status", json_string("pending"));
		json_array_append_new(rcpts, mb);
	}
	if (json_array_size(rcpts) == 0)
		json_array_append_new(rcpts, json_pack("{s:i, s:s, s:s, s:s}", "id", 1, "kind", "to", "address",
											   "ann@example.org", "status", "pending"));
	doc = json_pack("{s:i, s:I, s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}}",
					"interface_version", 3, "notification_id", (json_int_t) 1234, "status", "queued",
					"message_id", "<1234.abc@example.com>", "from", mailbox(fields, n, 0), "recipients",
					rcpts, "reply_to", rt, "subject", "Hello", "body_text", "Body", "profile", "name", "p",
					"transport", "smtp", "smtp", "host", "127.0.0.1", "security", "none");
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (text != NULL && message_parse(text, &m, err, sizeof err)) {
		struct MimeOptions o = {1796083200, 42};
		struct Buf out = BUF_INIT;
		char berr[256];

		FUZZ_ASSERT(mime_build(&m, &o, &out, berr, sizeof berr), "mime_build: %s", berr);
		fuzz_check_mime(&out, &m);
		if (getenv("FUZZ_DUMP_DIR")) {
			char *expect = fuzz_expect_json(&m);

			fuzz_dump("address", data, size, &out, expect);
			free(expect);
		}
		buf_free(&out);
		message_free(&m);
	} else if (text != NULL)
		FUZZ_ASSERT(fuzz_utf8_valid(err, strlen(err)) && err[0], "a refusal without a readable reason");
	free(text);
	for (k = 0; k < n; k++)
		free(fields[k]);
	return 0;
}
