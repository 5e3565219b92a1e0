/* extension/pg_relay/src/storage.sql: the queue's index space given back once its rows are gone */

-- pgrelay._queue_compact()
CREATE OR REPLACE FUNCTION pgrelay._queue_compact(min_size bigint DEFAULT 10485760) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET lock_timeout = '50ms' AS $$
/*
 * Internal (each Processor's report, every 10 s, through _processor_report): rebuild the queue's
 * indexes when they are much larger than the table they index. Every finished event leaves its
 * index entries until vacuum removes them; vacuumed after every 1,000 dead rows, the indexes reuse
 * their pages and keep the size of the largest backlog. But while another session holds an old
 * snapshot, vacuum can remove nothing and the indexes grow by every event finished meanwhile
 * (62 MB for 500,000 events). Once the snapshot ends, vacuum empties the heap's pages and gives
 * them back (it truncates the file), and empties the index pages, which a B-tree never gives back:
 * REINDEX does. The same holds after any large backlog.
 *
 * Only when cheap and worth it: the indexes of the queue and of its TOAST table together at least
 * min_size (10 MB) and ten times the size of those tables, which hold at most 1 MB. A rebuild
 * reads the heap, so it is then a few milliseconds (tens where each new index file must be synced
 * to slow storage); under a held snapshot the heap keeps the dead rows and grows as fast as the
 * indexes, so this never rebuilds what vacuum could not clean. A heap that vacuum cannot shrink
 * (a row waiting for a far run_at near its end) keeps its indexes too, until it can.
 *
 * REINDEX TABLE holds a SHARE lock on the queue and an ACCESS EXCLUSIVE lock on each index while
 * it builds them: every statement on the queue waits for it (the planner locks every index of the
 * table). And it waits for every transaction holding a lock on the queue, while the statements
 * behind it wait too; an event in flight, whose claim holds a lock on queue_pkey, would even wait
 * for the REINDEX to finish its event. So it is tried only at a moment when no other session and
 * no prepared transaction holds any lock on the queue (pg_locks), waits at most lock_timeout
 * (50 ms) for each of its locks, and gives up until the next report otherwise: a queue that is
 * never idle is not rebuilt. Never on a standby; one session at a time (advisory lock
 * 1885827586, 0). Returns whether it rebuilt the indexes; false too when a lock could not be had
 * within its 50 ms.
 */
DECLARE
    q oid := 'pgrelay.queue'::regclass;
    toast oid := (SELECT c.reltoastrelid FROM pg_class c WHERE c.oid = 'pgrelay.queue'::regclass);
    heap bigint;
    indexes bigint;
BEGIN
    IF min_size IS NULL OR min_size < 0 THEN
        RAISE EXCEPTION 'min_size must be 0 or more, not %', min_size USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_is_in_recovery()
       OR EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = q
                    AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
                    AND l.pid IS DISTINCT FROM pg_backend_pid())
       OR NOT pg_try_advisory_xact_lock(1885827586, 0) THEN
        RETURN false;
    END IF;
    BEGIN
        -- the sizes lock the relations too (ACCESS SHARE), under the same lock_timeout
        heap := pg_relation_size(q) + COALESCE(pg_relation_size(NULLIF(toast, 0)), 0);
        indexes := pg_indexes_size(q) + COALESCE(pg_indexes_size(NULLIF(toast, 0)), 0);
        IF heap > 1048576 OR indexes < GREATEST(min_size, 10 * heap) THEN
            RETURN false;
        END IF;
        REINDEX TABLE pgrelay.queue;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END;
    RETURN true;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_compact(bigint) IS
    'Internal: rebuild the queue''s indexes once they are ten times the size of the rows left (after a held snapshot or a large backlog)';
