/*
 * transport.c - what all transports share: the life cycle of a DeliveryResult.
 */
#include "transport.h"

#include <stdlib.h>
#include <string.h>

/* delivery_result_init makes r an empty result (no reply, no recipients, no trace). */
void
delivery_result_init(struct DeliveryResult *r)
{
	memset(r, 0, sizeof(*r));
	r->status = DS_TRANSIENT;
	r->retry_after_s = -1;
	r->trace = (struct Buf) BUF_INIT;
}

/* delivery_result_free releases what r owns and leaves it as delivery_result_init does. */
void
delivery_result_free(struct DeliveryResult *r)
{
	int i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n_rcpt; i++)
		free(r->rcpt[i].reply);
	free(r->rcpt);
	free(r->reply);
	free(r->provider_message_id);
	buf_free(&r->trace);
	delivery_result_init(r);
}
