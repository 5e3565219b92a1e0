/*
 * graph_json.h - the JSON request body of Microsoft Graph's sendMail for one struct Message
 * (built with jansson), and the rules a message must meet to go through Graph.
 */
#ifndef PGRELAY_GRAPH_JSON_H
#define PGRELAY_GRAPH_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"
#include "message.h"

/*
 * Graph refuses a request body over 4 MB (413). A bigger message fails for good before any
 * request: attachments in base64 grow by a third, so about 3 MB of files fit.
 */
#define GRAPH_MAX_REQUEST_BYTES (4L * 1024 * 1024)

struct GraphBody {
	char *json; /* the request body, compact UTF-8 JSON (malloc'd) */
	size_t len;
	char *shown; /* the same for a trace: the body text and attachment bytes replaced by their sizes */
};

/*
 * graph_json_build makes the sendMail body of m: {"message": {...}, "saveToSentItems": ...}.
 * The recipients are the envelope's (pending or retrying) with their display names; "from" is
 * set only when the From address is not the profile's sender; the Message-ID goes in
 * internetMessageId; extra header fields in internetMessageHeaders. Returns false with the reason
 * in err when the message cannot go through Graph (a header field Graph does not take, no
 * recipient, more than GRAPH_MAX_REQUEST_BYTES) or when out of memory (*oom set).
 */
bool graph_json_build(const struct Message *m, struct GraphBody *b, bool *oom, char *err,
					  size_t errlen) MUSTCHECK;
void graph_body_free(struct GraphBody *b);

/*
 * graph_header_ok: Graph's internetMessageHeaders take custom fields only, whose names start with
 * "X-" (any case). Any other extra field makes the message fail for good rather than be sent
 * without it (the notifier refuses such a message already at send()).
 */
bool graph_header_ok(const char *name);

#endif
