-- Helpers shared by the tests that follow (they run in this order, in one database).
\set SHOW_CONTEXT never
-- regress_error runs a statement and returns its error message, ids masked as N (ids vary by run)
CREATE FUNCTION regress_error(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN regexp_replace(SQLERRM, '[0-9]{6,}', 'N', 'g');
END
$$;
