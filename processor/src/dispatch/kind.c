/*
 * kind.c - the table of the kinds of event (kind.h).
 */
#include "kind.h"

#include <string.h>

#include "dest_event.h"
#include "kafka_kind.h"
#include "notify.h"
#include "redis_kind.h"
#include "rmq_kind.h"
#include "webhook.h"

static const struct DestKind kinds[] = {
	{"sql", W_SQL, false, STMT_COUNT, STMT_COUNT, STMT_COUNT, NULL, NULL, NULL, NULL, NULL, STMT_COUNT, NULL,
	 NULL},
	/* the fetch names pg_relay_notifier's schema: only when it may be used (NOTIFIER_TRUSTED) */
	{"notify", W_NOTIFY, true, STMT_NOTIFIER_TRUSTED, STMT_CLAIM_FETCH, STMT_CLAIM, notify_open, notify_close,
	 notify_read, notify_deliver, notify_record, STMT_COUNT, NULL, NULL},
	{"webhook", W_WEBHOOK, true, STMT_COUNT, STMT_WEBHOOK_CLAIM, STMT_COUNT, webhook_open, webhook_close,
	 webhook_read, webhook_deliver, NULL, STMT_COUNT, NULL, NULL},
	/* the destination kinds: the steps of a destination event (dest_event.h), each its own target and send */
	{"redis", W_DESTINATION, true, STMT_COUNT, STMT_DESTINATION_CLAIM, STMT_COUNT, redis_kind_open,
	 dest_event_close, dest_event_read, dest_event_deliver, NULL, STMT_DESTINATION_CLAIM_MANY,
	 dest_event_read_row, dest_event_deliver_many},
	{"kafka", W_DESTINATION, true, STMT_COUNT, STMT_DESTINATION_CLAIM, STMT_COUNT, kafka_kind_open,
	 dest_event_close, dest_event_read, dest_event_deliver, NULL, STMT_DESTINATION_CLAIM_MANY,
	 dest_event_read_row, dest_event_deliver_many},
	{"rabbitmq", W_DESTINATION, true, STMT_COUNT, STMT_DESTINATION_CLAIM, STMT_COUNT, rmq_kind_open,
	 dest_event_close, dest_event_read, dest_event_deliver, NULL, STMT_DESTINATION_CLAIM_MANY,
	 dest_event_read_row, dest_event_deliver_many},
};

const struct DestKind *
dest_kind_find(const char *action_type)
{
	size_t i;

	for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(kinds[i].name, action_type) == 0)
			return &kinds[i];
	return NULL;
}
