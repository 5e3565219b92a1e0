/* extension/pg_relay_notifier/src/overview.sql: what the extension is, for the reader of the install script */

/*
 * pg_relay_notifier: email notifications queued through pg_relay (schema pgrelay_notifier).
 *
 * Admins describe how mail leaves (profiles: SMTP or Microsoft Graph) and which pg_relay channel
 * uses which profile (create_channel, which registers a notify channel with pgrelay.register).
 * Producers call send(): it validates the whole message, stores it here and queues its id with
 * pgrelay.notify() in the caller's transaction. The Processor reads the message with fetch() and
 * records each attempt with set_status(), inside its held transaction (docs/interface.md).
 * docs/notifier.md documents every object below.
 *
 * Boundaries: this extension calls pgrelay.notify, pgrelay.register, pgrelay.unregister and
 * pgrelay._next_id, and reads pgrelay.channels to give clear errors; it never reads or writes the
 * event tables of pg_relay.
 *
 * Security model: every function that touches a table is SECURITY DEFINER with a pinned
 * search_path, so the three pg_relay roles need no table privileges. Secrets live in their own
 * table that nobody but the extension owner can read; only fetch() hands them out, to the
 * Processor's role, still as references (env:NAME, file:NAME) when given that way.
 */
