/*
 * kind.c - the table of the kinds of event (kind.h).
 */
#include "kind.h"

#include <string.h>

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
	{"redis", W_DESTINATION, true, STMT_COUNT, STMT_DESTINATION_CLAIM, STMT_COUNT, redis_kind_open,
	 redis_kind_close, redis_kind_read, redis_kind_deliver, NULL, STMT_DESTINATION_CLAIM_MANY,
	 redis_kind_read_row, redis_kind_deliver_many},
	{"kafka", W_DESTINATION, true, STMT_COUNT, STMT_DESTINATION_CLAIM, STMT_COUNT, kafka_kind_open,
	 kafka_kind_close, kafka_kind_read, kafka_kind_deliver, NULL, STMT_DESTINATION_CLAIM_MANY,
	 kafka_kind_read_row, kafka_kind_deliver_many},
	{"rabbitmq", W_DESTINATION, true, STMT_COUNT, STMT_DESTINATION_CLAIM, STMT_COUNT, rmq_kind_open,
	 rmq_kind_close, rmq_kind_read, rmq_kind_deliver, NULL, STMT_DESTINATION_CLAIM_MANY, rmq_kind_read_row,
	 rmq_kind_deliver_many},
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
