/*
 * web_server.h - the web console's HTTP server (libmicrohttpd, one thread of its own): the
 * protection the HTTP side adds and nothing more. Loopback by default; anywhere else only with
 * TLS and a password file. Every action is a POST with a CSRF token and an Origin of this server;
 * every answer carries a strict Content-Security-Policy.
 */
#ifndef PGRELAY_WEB_SERVER_H
#define PGRELAY_WEB_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

struct WebServerOptions {
	const char *listen;    /* ADDR:PORT, [IPv6]:PORT */
	const char *tls_cert;  /* PEM certificate (chain) file; NULL: plain HTTP */
	const char *tls_key;   /* its PEM private key file */
	const char *auth_file; /* password file (web_auth.h); NULL: no authentication */
};

/*
 * web_server_check says whether o may be served: a listen address that is not loopback needs
 * TLS and an auth file. *loopback tells which it is. False with the reason in err.
 */
bool web_server_check(const struct WebServerOptions *o, bool *loopback, char *err, size_t errlen) MUSTCHECK;

/* web_server_start listens and serves; url is what it serves at (http[s]://HOST:PORT/). */
bool web_server_start(const struct WebServerOptions *o, char *url, size_t urllen, char *err,
					  size_t errlen) MUSTCHECK;
void web_server_stop(void);

#endif
