/* extension/pg_relay_notifier/upgrade/1.1--1.3.sql: schema changes from 1.1 to 1.3 (the code follows from src/) */
