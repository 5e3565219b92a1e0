/*
 * mime.c - assemble the RFC 5322 header and the MIME tree of a message, by hand.
 *
 * Why not libcurl's MIME API (curl_mime_*): we prefer it where it does the job, but here it
 * does not. It writes header values and file names as given (no RFC 2047 words, no RFC 2231
 * filename*=), so every header would have to be encoded by us anyway; the message only exists
 * inside a transfer, so it cannot be size-checked against max_message_bytes before connecting,
 * shown in a trace, or unit-tested as bytes; and nesting multipart/related inside
 * multipart/alternative needs hand-written Content-Type headers on sub-mimes. What remains,
 * base64 and quoted-printable, is a few dozen lines (mime_encode.c, base64.c). So the message is
 * built here as one buffer and uploaded with CURLOPT_READFUNCTION.
 *
 * The tree:   [multipart/mixed: content, attachments...]        when there are attachments
 *   content = multipart/alternative: text/plain, html          when both bodies exist
 *   html    = multipart/related: text/html, inline parts...    when parts have a content_id
 * Inline parts of a message without HTML cannot be referenced, so they go with the attachments.
 *
 * Custom header values are written as unstructured text: folded at blanks, or RFC 2047 words
 * when they are not ASCII (a structured field with non-ASCII would need SMTPUTF8 instead).
 *
 * Boundaries are "=_pgrelay_<seed>_<n>". They cannot occur in any part body: "=_" is never
 * produced by quoted-printable (after '=' come two hex digits or CRLF) nor by base64 ('=' only
 * pads the end).
 */
#include "mime.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base64.h"
#include "mime_encode.h"

/* Build is the state of one mime_build() call. */
struct Build {
	const struct Message *m;
	const struct MimeOptions *o;
	struct Buf *out;
	int n_boundaries; /* multiparts opened so far: each gets its own boundary */
};

/* has_inline: parts with a content_id that the HTML body can reference. */
static bool
has_inline(const struct Message *m)
{
	int i;

	if (m->body_html == NULL)
		return false;
	for (i = 0; i < m->n_att; i++)
		if (m->att[i].content_id != NULL)
			return true;
	return false;
}

/* is_attachment: a part of the multipart/mixed level (see the tree above). */
static bool
is_attachment(const struct Message *m, const struct Attachment *a)
{
	return a->content_id == NULL || m->body_html == NULL;
}

static bool
has_attachments(const struct Message *m)
{
	int i;

	for (i = 0; i < m->n_att; i++)
		if (is_attachment(m, &m->att[i]))
			return true;
	return false;
}

/* write_address_list writes one To/Cc/Reply-To field from the matching recipients. */
static bool
write_rcpt_header(struct Build *b, const char *name, enum RcptKind kind)
{
	struct Fold f;
	bool first = true;
	int i;

	for (i = 0; i < b->m->n_rcpt; i++) {
		const struct Recipient *r = &b->m->rcpt[i];

		if (r->kind != kind)
			continue;
		if (first && !mime_fold_begin(&f, b->out, name))
			return false;
		if (!first && !mime_fold_atom(&f, ",", 1, false))
			return false;
		if (!mime_fold_mailbox(&f, r->addr.name, r->addr.address))
			return false;
		first = false;
	}
	return first || mime_fold_end(&f);
}

static bool
write_reply_to(struct Build *b)
{
	struct Fold f;
	int i;

	if (b->m->n_reply_to == 0)
		return true;
	if (!mime_fold_begin(&f, b->out, "Reply-To"))
		return false;
	for (i = 0; i < b->m->n_reply_to; i++)
		if ((i > 0 && !mime_fold_atom(&f, ",", 1, false)) ||
			!mime_fold_mailbox(&f, b->m->reply_to[i].name, b->m->reply_to[i].address))
			return false;
	return mime_fold_end(&f);
}

/* count_kind counts the to/cc recipients, to know whether To: needs a placeholder. */
static int
count_visible(const struct Message *m)
{
	int i, n = 0;

	for (i = 0; i < m->n_rcpt; i++)
		n += m->rcpt[i].kind != RCPT_BCC;
	return n;
}

/* write_unstructured writes "Name: text", encoded and folded as needed. */
static bool
write_unstructured(struct Build *b, const char *name, const char *text)
{
	struct Fold f;

	return mime_fold_begin(&f, b->out, name) && mime_fold_unstructured(&f, text) && mime_fold_end(&f);
}

/* write_top_header writes the message header fields, in the usual order, never Bcc. */
static bool
write_top_header(struct Build *b)
{
	const struct Message *m = b->m;
	struct Fold f;
	int i;

	if (!buf_puts(b->out, "Date: ") || !mime_date(b->out, b->o->date) || !buf_puts(b->out, "\r\n"))
		return false;
	if (!mime_fold_begin(&f, b->out, "From") || !mime_fold_mailbox(&f, m->from.name, m->from.address) ||
		!mime_fold_end(&f))
		return false;
	if (count_visible(m) == 0 && !buf_puts(b->out, "To: undisclosed-recipients:;\r\n"))
		return false;
	if (!write_rcpt_header(b, "To", RCPT_TO) || !write_rcpt_header(b, "Cc", RCPT_CC) || !write_reply_to(b))
		return false;
	if (m->subject != NULL && !write_unstructured(b, "Subject", m->subject))
		return false;
	if (!buf_printf(b->out, "Message-ID: %s\r\nMIME-Version: 1.0\r\n", m->message_id))
		return false;
	for (i = 0; i < m->n_headers; i++)
		if (!write_unstructured(b, m->headers[i].name, m->headers[i].value))
			return false;
	return true;
}

/* multipart_begin writes the Content-Type of a multipart and returns its boundary number. */
static bool
multipart_begin(struct Build *b, const char *subtype, const char *type_param, int *id)
{
	*id = ++b->n_boundaries;
	if (!buf_printf(b->out, "Content-Type: multipart/%s;", subtype))
		return false;
	if (type_param != NULL && !buf_printf(b->out, " type=\"%s\";", type_param))
		return false;
	return buf_printf(b->out, "\r\n boundary=\"=_pgrelay_%016llx_%d\"\r\n\r\n", b->o->boundary_seed, *id);
}

/* multipart_next starts a body part; the CRLF in front belongs to the delimiter (RFC 2046). */
static bool
multipart_next(struct Build *b, int id, bool first)
{
	return buf_printf(b->out, "%s--=_pgrelay_%016llx_%d\r\n", first ? "" : "\r\n", b->o->boundary_seed, id);
}

static bool
multipart_end(struct Build *b, int id)
{
	return buf_printf(b->out, "\r\n--=_pgrelay_%016llx_%d--\r\n", b->o->boundary_seed, id);
}

/* write_text writes a text/<subtype> entity in UTF-8, quoted-printable (7-bit safe). */
static bool
write_text(struct Build *b, const char *subtype, const char *text)
{
	return buf_printf(b->out,
					  "Content-Type: text/%s; charset=utf-8\r\n"
					  "Content-Transfer-Encoding: quoted-printable\r\n\r\n",
					  subtype) &&
		   mime_qp(b->out, text, strlen(text));
}

/* write_attachment writes one file as a base64 entity, inline (with Content-ID) or attached. */
static bool
write_attachment(struct Build *b, const struct Attachment *a)
{
	struct Fold f;

	if (!mime_fold_begin(&f, b->out, "Content-Type") ||
		!mime_fold_atom(&f, a->content_type, strlen(a->content_type), true) ||
		!mime_param(&f, "name", a->filename) || !mime_fold_end(&f))
		return false;
	if (!mime_fold_begin(&f, b->out, "Content-Disposition") ||
		!mime_fold_atom(&f, a->content_id ? "inline" : "attachment", a->content_id ? 6 : 10, true) ||
		!mime_param(&f, "filename", a->filename) || !mime_fold_end(&f))
		return false;
	if (a->content_id != NULL && !buf_printf(b->out, "Content-ID: <%s>\r\n", a->content_id))
		return false;
	return buf_puts(b->out, "Content-Transfer-Encoding: base64\r\n\r\n") &&
		   base64_encode(b->out, a->data, a->len, 76);
}

/* write_html writes the HTML body, wrapped in multipart/related when it has inline parts. */
static bool
write_html(struct Build *b)
{
	const struct Message *m = b->m;
	int i, id;

	if (!has_inline(m))
		return write_text(b, "html", m->body_html);
	if (!multipart_begin(b, "related", "text/html", &id) || !multipart_next(b, id, true) ||
		!write_text(b, "html", m->body_html))
		return false;
	for (i = 0; i < m->n_att; i++)
		if (!is_attachment(m, &m->att[i]) &&
			(!multipart_next(b, id, false) || !write_attachment(b, &m->att[i])))
			return false;
	return multipart_end(b, id);
}

/* write_content writes the readable part: text, HTML, or both as multipart/alternative. */
static bool
write_content(struct Build *b)
{
	const struct Message *m = b->m;
	int id;

	if (m->body_html == NULL)
		return write_text(b, "plain", m->body_text ? m->body_text : "");
	if (m->body_text == NULL)
		return write_html(b);
	/* The preferred alternative comes last (RFC 2046 5.1.4): plain text, then HTML. */
	return multipart_begin(b, "alternative", NULL, &id) && multipart_next(b, id, true) &&
		   write_text(b, "plain", m->body_text) && multipart_next(b, id, false) && write_html(b) &&
		   multipart_end(b, id);
}

/* write_body writes the top entity: the content alone, or multipart/mixed with attachments. */
static bool
write_body(struct Build *b)
{
	const struct Message *m = b->m;
	int i, id;

	if (!has_attachments(m))
		return write_content(b);
	if (!multipart_begin(b, "mixed", NULL, &id) ||
		!buf_puts(b->out, "This is a multi-part message in MIME format.\r\n") ||
		!multipart_next(b, id, false) || !write_content(b))
		return false;
	for (i = 0; i < m->n_att; i++)
		if (is_attachment(m, &m->att[i]) &&
			(!multipart_next(b, id, false) || !write_attachment(b, &m->att[i])))
			return false;
	return multipart_end(b, id);
}

/*
 * end_with_crlf: a message ends with the CRLF of its last line. libcurl would add one before
 * the final "." anyway; without it the server would store other bytes than we built.
 */
static bool
end_with_crlf(struct Buf *out)
{
	if (out->len >= 2 && memcmp(out->data + out->len - 2, "\r\n", 2) == 0)
		return true;
	return buf_puts(out, "\r\n");
}

bool
mime_build(const struct Message *m, const struct MimeOptions *o, struct Buf *out, char *err, size_t errlen)
{
	struct Build b = {m, o, out, 0};

	if (!write_top_header(&b) || !write_body(&b) || !end_with_crlf(out) || out->oom) {
		snprintf(err, errlen, "out of memory building the message");
		return false;
	}
	return true;
}

unsigned long long
mime_boundary_seed(void)
{
	unsigned long long seed = 0;

	/* getrandom() cannot fail for 8 bytes once the pool is initialised; time is the fallback. */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t) sizeof(seed))
		seed = (unsigned long long) time(NULL) ^ ((unsigned long long) getpid() << 32);
	return seed;
}
