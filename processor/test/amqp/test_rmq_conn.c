/*
 * test_rmq_conn.c - the broker's close codes classified: what passes (a locked resource, a forced
 * close, the broker's own trouble) is retried, what the settings or the broker's set-up cause
 * (a refused login or permission, a missing exchange, a virtual host not allowed) is a
 * configuration error.
 */
#include <amqp.h>
#include <amqp_framing.h>

#include "rmq_conn.h"
#include "unit.h"

static void
test_close_codes_are_classified(void)
{
	static const struct {
		int code;
		enum RmqIo want;
	} cases[] = {
		{AMQP_RESOURCE_LOCKED, QIO_REFUSED}, {AMQP_CONNECTION_FORCED, QIO_REFUSED},
		{AMQP_INTERNAL_ERROR, QIO_REFUSED},  {AMQP_RESOURCE_ERROR, QIO_REFUSED},
		{AMQP_ACCESS_REFUSED, QIO_SETUP},    {AMQP_NOT_FOUND, QIO_SETUP},
		{AMQP_NOT_ALLOWED, QIO_SETUP},       {AMQP_PRECONDITION_FAILED, QIO_SETUP},
		{AMQP_COMMAND_INVALID, QIO_SETUP},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK(rmq_close_io(cases[i].code) == cases[i].want);
}

int
main(void)
{
	RUN(test_close_codes_are_classified);
	return UNIT_DONE();
}
