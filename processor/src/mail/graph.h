/*
 * graph.h - the Microsoft Graph transport (struct Transport graph_transport, declared in
 * transport.h): POST {graph_url}/v1.0/users/{sender}/sendMail with a client-credentials token.
 *
 * Blocking, like every transport: each worker owns one TransportSession, which keeps one HTTPS
 * client and so one kept-alive connection (and TLS session) per server across deliveries. Tokens
 * come from the cache shared by all workers (oauth.h). The same contract as smtp.h: the caller
 * has set up libcurl (transport_global_init), ignores SIGPIPE, resolved the profile's secrets,
 * and owns the DeliveryResult; the transport never logs and never exits.
 */
#ifndef PGRELAY_GRAPH_H
#define PGRELAY_GRAPH_H

#include "transport.h"

#endif
