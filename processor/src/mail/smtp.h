/*
 * smtp.h - the SMTP transport (struct Transport smtp_transport, declared in transport.h).
 *
 * Blocking, over libcurl's easy interface: each worker owns one TransportSession, which keeps
 * one easy handle, and so one cached SMTP connection, across deliveries of the same profile.
 *
 * The caller must have called curl_global_init(CURL_GLOBAL_ALL) once before the first session_new
 * (transport_global_init does it; libcurl 7.84+ makes that thread-safe),
 * must ignore SIGPIPE (handles use CURLOPT_NOSIGNAL), must delivery_result_init() r before
 * deliver() and delivery_result_free() it afterwards, and must have resolved the profile's
 * secrets (profile_resolve_secrets). The transport never logs and never exits.
 */
#ifndef PGRELAY_SMTP_H
#define PGRELAY_SMTP_H

#include "transport.h"

/* Idle connections older than this are not reused: servers drop idle sessions after ~1-5 min. */
#define SMTP_MAX_IDLE_S 60L

#endif
