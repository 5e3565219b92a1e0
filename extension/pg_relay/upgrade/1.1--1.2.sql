/* extension/pg_relay/upgrade/1.1--1.2.sql: schema changes from 1.1 to 1.2 (the code follows from src/) */
