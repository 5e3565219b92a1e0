/* extension/pg_relay/upgrade/1.2--1.3.sql: schema changes from 1.2 to 1.3 (the code follows from src/) */
