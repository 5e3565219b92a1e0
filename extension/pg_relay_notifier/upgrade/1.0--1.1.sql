/* extension/pg_relay_notifier/upgrade/1.0--1.1.sql: schema changes from 1.0 to 1.1 (the code follows from src/) */
