/* extension/pg_relay/src/overview.sql: what the extension is, for the reader of the install script */

/*
 * pg_relay: the durable event queue (schema pgrelay).
 *
 * Producers call pgrelay.notify() in their own transaction; the external Processor polls
 * queue_probe(), fetches queue_pending_ids() and finishes each event with process_one() (SQL
 * actions) or, inside one held transaction (notify and webhook actions), with its claim
 * (_queue_claim, _webhook_claim) and one finish, _finish_held (a Processor of 1.3 finishes with
 * _write_log and _queue_mark_done). docs/sql-api.md documents every object below.
 *
 * Security model: functions that touch the tables are SECURITY DEFINER with a pinned search_path,
 * so the three roles need no table privileges. process_one() is the exception: it is SECURITY
 * INVOKER because it runs the channel's handler, and a handler must run with the privileges of the
 * Processor's role, never with the extension owner's.
 */
