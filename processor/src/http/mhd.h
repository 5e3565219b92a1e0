/*
 * mhd.h - what the two libmicrohttpd servers (the metrics endpoint, the console) share: how they
 * log the library's messages and say why a daemon did not start.
 */
#ifndef PGRELAY_MHD_H
#define PGRELAY_MHD_H

#include <stdarg.h>
#include <stddef.h>

/*
 * mhd_message_line writes one of libmicrohttpd's messages, as its external logger gets it
 * (printf-style), into buf as one line: the line breaks it ends with removed.
 */
void mhd_message_line(char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * mhd_failure says why a daemon did not start, from libmicrohttpd's last message ("" for none).
 * Its bind failure names the port it was given, which is always 0 here (the address
 * comes as a sockaddr), so only the reason after the last ": " ("Address already in use") is
 * kept: the caller names the address and port.
 */
const char *mhd_failure(const char *message);

#endif
