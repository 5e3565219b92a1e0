/* extension/pg_relay/upgrade/1.3--1.4.sql: schema changes from 1.3 to 1.4 (the code follows from src/) */
