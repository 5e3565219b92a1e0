/*
 * mhd.c - what the two libmicrohttpd servers (the metrics endpoint, the console) share: how they
 * log the library's messages and say why a daemon did not start.
 */
#include "mhd.h"

#include <stdio.h>
#include <string.h>

void
mhd_message_line(char *buf, size_t len, const char *fmt, va_list ap)
{
	size_t n;

	vsnprintf(buf, len, fmt, ap);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
}

const char *
mhd_failure(const char *message)
{
	const char *reason;

	if (message[0] == '\0')
		return "libmicrohttpd failed";
	reason = strrchr(message, ':');
	if (strncmp(message, "Failed to bind", 14) == 0 && reason != NULL && reason[1] == ' ')
		return reason + 2;
	return message;
}
