/* extension/pg_relay/src/schedules.sql: recurring events: the cron evaluator, schedule/unschedule, firing */

/*
 * A schedule queues its payload on its channel at every time its cron expression names, in its
 * time zone (docs/sql-api.md, "Recurring events"):
 *
 *   evaluator   _cron_parse() reads the five fields into sets of values; _cron_next() finds the
 *               first matching wall-clock minute after a time field by field (month, day, hour,
 *               minute: each step jumps to the next value the field allows), then turns it into
 *               an instant of the time zone (_cron_instant: a wall time that happens twice is its
 *               first instant, one that does not exist is moved forward by the gap).
 *   state       schedule_entries holds each schedule and its next occurrence (next_run_at), which
 *               the probe reads; schedule_runs holds each occurrence fired, keyed by (schedule,
 *               occurrence): an occurrence with a row is never queued again.
 *   firing      _schedule_fire(at) queues the due occurrences. Only one node fires
 *               (_schedule_fires: the database in single mode, the leader, or the lowest live node
 *               in multi-node mode); the Processor runs it when its probe says schedule_due.
 */

-- pgrelay._cron_error()
CREATE OR REPLACE FUNCTION pgrelay._cron_error(cron text, field text, item text, reason text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Internal (_cron_field, _cron_parse): the one error of a cron expression that cannot be read.
    RAISE EXCEPTION 'invalid cron expression "%": %', pgrelay._show(cron),
                    CASE WHEN field IS NULL THEN reason
                         ELSE format('%s field "%s": %s', field, pgrelay._show(item), reason) END
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Five fields: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or JAN-DEC) '
                     'day-of-week (0-7 or SUN-SAT, 0 and 7 are Sunday), each *, a value, a range a-b, a list '
                     'a,b and steps */n or a-b/n; or @hourly, @daily, @weekly, @monthly, @yearly.';
END
$$;
COMMENT ON FUNCTION pgrelay._cron_error(text, text, text, text) IS
    'Internal: raises the error of a cron expression that cannot be read, naming the field and why';

-- pgrelay._cron_value()
CREATE OR REPLACE FUNCTION pgrelay._cron_value(cron text, field text, token text, lo integer, hi integer,
                                    names text[])
RETURNS integer
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_cron_field): one value of a field: a number between lo and hi, or a name of names
 * (case-insensitive; the first name is lo).
 */
DECLARE
    v integer;
BEGIN
    IF token ~ '^[0-9]{1,4}$' THEN
        v := token::integer;
    ELSIF names IS NOT NULL AND upper(token) = ANY (names) THEN
        RETURN array_position(names, upper(token)) - 1 + lo;
    ELSE
        PERFORM pgrelay._cron_error(cron, field, token,
                                    CASE WHEN token = '' THEN 'a value is missing'
                                         WHEN names IS NULL THEN format('"%s" is not a number', pgrelay._show(token))
                                         ELSE format('"%s" is not a number or a name (%s)', pgrelay._show(token),
                                                     array_to_string(names, ' ')) END);
    END IF;
    IF v < lo OR v > hi THEN
        PERFORM pgrelay._cron_error(cron, field, token, format('%s is out of range %s-%s', v, lo, hi));
    END IF;
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay._cron_value(text, text, text, integer, integer, text[]) IS
    'Internal: one value of a cron field, a number in range or a name';

-- pgrelay._cron_field()
CREATE OR REPLACE FUNCTION pgrelay._cron_field(cron text, field text, spec text, lo integer, hi integer,
                                    names text[] DEFAULT NULL)
RETURNS integer[]
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_cron_parse): the sorted set of values one field names: a list of items, each *, a
 * value, a range a-b, each optionally followed by a step /n (a value with a step, a/n, runs from a to
 * the maximum of the field).
 */
DECLARE
    item text;
    base text;
    step integer;
    a integer;
    b integer;
    vals integer[] := '{}';
BEGIN
    FOREACH item IN ARRAY string_to_array(spec, ',') LOOP
        IF item = '' THEN
            PERFORM pgrelay._cron_error(cron, field, spec, 'a list item is empty');
        END IF;
        step := 1;
        base := item;
        IF strpos(item, '/') > 0 THEN
            base := split_part(item, '/', 1);
            IF split_part(item, '/', 2) !~ '^[0-9]{1,4}$' OR split_part(item, '/', 3) <> ''
               OR split_part(item, '/', 2)::integer = 0 THEN
                PERFORM pgrelay._cron_error(cron, field, item, 'the step after / must be a positive number');
            END IF;
            step := split_part(item, '/', 2)::integer;
        END IF;
        IF base = '*' THEN
            a := lo;
            b := hi;
        ELSIF strpos(base, '-') > 0 THEN
            IF split_part(base, '-', 3) <> '' OR split_part(base, '-', 1) = '' OR split_part(base, '-', 2) = '' THEN
                PERFORM pgrelay._cron_error(cron, field, item, 'a range has two ends, a-b');
            END IF;
            a := pgrelay._cron_value(cron, field, split_part(base, '-', 1), lo, hi, names);
            b := pgrelay._cron_value(cron, field, split_part(base, '-', 2), lo, hi, names);
            -- MON-SUN: Sunday ends a range of weekdays as 7
            IF field = 'day-of-week' AND b = 0 AND a > 0 AND upper(split_part(base, '-', 2)) = 'SUN' THEN
                b := 7;
            END IF;
            IF a > b THEN
                PERFORM pgrelay._cron_error(cron, field, item,
                                            format('the range %s-%s ends before it starts', a, b));
            END IF;
        ELSE
            a := pgrelay._cron_value(cron, field, base, lo, hi, names);
            b := CASE WHEN step > 1 OR strpos(item, '/') > 0 THEN hi ELSE a END;
        END IF;
        vals := vals || ARRAY(SELECT generate_series(a, b, step));
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT v FROM unnest(vals) v ORDER BY v);
END
$$;
COMMENT ON FUNCTION pgrelay._cron_field(text, text, text, integer, integer, text[]) IS
    'Internal: the sorted values one cron field names (lists, ranges, steps, names)';

-- pgrelay._cron_parse()
CREATE OR REPLACE FUNCTION pgrelay._cron_parse(cron text,
                                    OUT minutes integer[], OUT hours integer[], OUT days integer[],
                                    OUT months integer[], OUT weekdays integer[], OUT either_day boolean)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: a cron expression as the sets of values of its five fields (weekday 7 is read as 0,
 * Sunday). either_day: both day fields are restricted (neither starts with *), so a day matches
 * when either does (the rule of Vixie cron); otherwise a day must match both.
 */
DECLARE
    f text[];
    spec text;
BEGIN
    IF cron IS NULL THEN
        RAISE EXCEPTION 'cron must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF length(cron) > 1000 THEN
        PERFORM pgrelay._cron_error(cron, NULL, NULL, 'longer than 1000 characters');
    END IF;
    spec := lower(btrim(cron, E' \t'));
    spec := CASE spec WHEN '@yearly' THEN '0 0 1 1 *' WHEN '@annually' THEN '0 0 1 1 *'
                      WHEN '@monthly' THEN '0 0 1 * *' WHEN '@weekly' THEN '0 0 * * 0'
                      WHEN '@daily' THEN '0 0 * * *' WHEN '@midnight' THEN '0 0 * * *'
                      WHEN '@hourly' THEN '0 * * * *' ELSE btrim(cron, E' \t') END;
    IF spec ~ '^@' THEN
        PERFORM pgrelay._cron_error(cron, NULL, NULL,
                                    'unknown macro (use @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually)');
    END IF;
    IF spec ~ '[^[:alnum:] \t*,/-]' THEN
        PERFORM pgrelay._cron_error(cron, NULL, NULL,
                                    'only digits, names, spaces and the characters * , - / belong in a cron expression');
    END IF;
    f := regexp_split_to_array(spec, '[ \t]+');
    IF spec = '' OR cardinality(f) <> 5 THEN
        PERFORM pgrelay._cron_error(cron, NULL, NULL,
                                    format('%s fields, not 5', CASE WHEN spec = '' THEN 0 ELSE cardinality(f) END));
    END IF;
    minutes := pgrelay._cron_field(cron, 'minute', f[1], 0, 59);
    hours := pgrelay._cron_field(cron, 'hour', f[2], 0, 23);
    days := pgrelay._cron_field(cron, 'day-of-month', f[3], 1, 31);
    months := pgrelay._cron_field(cron, 'month', f[4], 1, 12,
                                  '{JAN,FEB,MAR,APR,MAY,JUN,JUL,AUG,SEP,OCT,NOV,DEC}');
    weekdays := pgrelay._cron_field(cron, 'day-of-week', f[5], 0, 7, '{SUN,MON,TUE,WED,THU,FRI,SAT}');
    weekdays := ARRAY(SELECT DISTINCT CASE WHEN w = 7 THEN 0 ELSE w END AS d FROM unnest(weekdays) w ORDER BY d);
    either_day := left(f[3], 1) <> '*' AND left(f[5], 1) <> '*';
END
$$;
COMMENT ON FUNCTION pgrelay._cron_parse(text) IS
    'Internal: the five fields of a cron expression as sets of values, and the day rule';

-- pgrelay._cron_instant()
CREATE OR REPLACE FUNCTION pgrelay._cron_instant(wall timestamp, timezone text) RETURNS timestamptz
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- Internal (_cron_next): the instant a wall-clock time of the time zone names. A time that
    -- happens twice (the clocks go back) is its first instant, the one before the change; one that
    -- does not exist (the clocks go forward) is read with the offset in force before the gap, so
    -- that 02:30 in a gap from 02:00 to 03:00 is 03:30 (as PostgreSQL reads such a time). The
    -- candidates are the wall time at the offsets in force six hours around PostgreSQL's reading.
    SELECT COALESCE(
        (SELECT min(b)
         FROM (SELECT (wall - ((x AT TIME ZONE timezone) - (x AT TIME ZONE 'UTC'))) AT TIME ZONE 'UTC' AS b
               FROM unnest(ARRAY[p.a - interval '6 hours', p.a, p.a + interval '6 hours']) x) c
         WHERE (c.b AT TIME ZONE timezone) = wall),
        p.a)
    FROM (SELECT wall AT TIME ZONE timezone AS a) p
$$;
COMMENT ON FUNCTION pgrelay._cron_instant(timestamp, text) IS
    'Internal: the instant of a wall-clock time in a time zone: the first of a repeated time, a missing one moved forward by the gap';

-- pgrelay._cron_next()
CREATE OR REPLACE FUNCTION pgrelay._cron_next(cron text, timezone text, after timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal: the first occurrence of the cron expression in the time zone strictly after `after`,
 * or NULL when there is none in the next 10 years (a day that never comes, such as 30 February).
 *
 * Field by field on the wall clock, never minute by minute: a month that does not match jumps
 * to the first day of the next month that does, a day to the next day, an hour to the next hour
 * allowed, a minute to the next minute allowed. A matching wall time is then made an instant
 * (_cron_instant); one at or before `after` (the first instant of a repeated hour, while `after`
 * lies in the second) is passed over.
 */
DECLARE
    c record;
    w timestamp;
    horizon timestamp;
    t timestamptz;
    v integer;
    nxt integer;
    day_ok boolean;
BEGIN
    SELECT * INTO c FROM pgrelay._cron_parse(cron);
    w := date_trunc('minute', after AT TIME ZONE timezone) + interval '1 minute';
    horizon := w + interval '10 years';
    WHILE w < horizon LOOP
        v := extract(month FROM w)::integer;
        IF NOT v = ANY (c.months) THEN
            nxt := (SELECT min(m) FROM unnest(c.months) m WHERE m > v);
            w := CASE WHEN nxt IS NULL THEN make_timestamp(extract(year FROM w)::integer + 1, c.months[1], 1, 0, 0, 0)
                      ELSE make_timestamp(extract(year FROM w)::integer, nxt, 1, 0, 0, 0) END;
            CONTINUE;
        END IF;
        day_ok := CASE WHEN c.either_day
                       THEN extract(day FROM w)::integer = ANY (c.days) OR extract(dow FROM w)::integer = ANY (c.weekdays)
                       ELSE extract(day FROM w)::integer = ANY (c.days) AND extract(dow FROM w)::integer = ANY (c.weekdays)
                  END;
        IF NOT day_ok THEN
            w := date_trunc('day', w) + interval '1 day';
            CONTINUE;
        END IF;
        v := extract(hour FROM w)::integer;
        IF NOT v = ANY (c.hours) THEN
            nxt := (SELECT min(x) FROM unnest(c.hours) x WHERE x > v);
            w := CASE WHEN nxt IS NULL THEN date_trunc('day', w) + interval '1 day'
                      ELSE date_trunc('day', w) + make_interval(hours => nxt) END;
            CONTINUE;
        END IF;
        v := extract(minute FROM w)::integer;
        IF NOT v = ANY (c.minutes) THEN
            nxt := (SELECT min(x) FROM unnest(c.minutes) x WHERE x > v);
            w := CASE WHEN nxt IS NULL THEN date_trunc('hour', w) + interval '1 hour'
                      ELSE date_trunc('hour', w) + make_interval(mins => nxt) END;
            CONTINUE;
        END IF;
        t := pgrelay._cron_instant(w, timezone);
        IF t > after THEN
            RETURN t;
        END IF;
        w := w + interval '1 minute';
    END LOOP;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._cron_next(text, text, timestamptz) IS
    'Internal: the first occurrence of a cron expression in a time zone after a time (NULL: none within 10 years)';

-- pgrelay._check_timezone()
CREATE OR REPLACE FUNCTION pgrelay._check_timezone(timezone text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (schedule, cron_next_runs): the time zone, checked: a name PostgreSQL knows (of the
 * time zone database, such as Europe/Berlin, case-insensitive; or a POSIX rule), and not an
 * abbreviation: PostgreSQL reads CET or EST as a fixed offset all year, which a schedule in a place
 * with summer time never means (UTC and GMT are fixed offsets either way). Not pg_timezone_names:
 * it reads every file of the time zone database, a tenth of a second.
 */
BEGIN
    IF timezone IS NULL THEN
        RAISE EXCEPTION 'timezone must not be NULL' USING ERRCODE = 'null_value_not_allowed',
              HINT = 'Give a time zone name such as UTC or Europe/Berlin.';
    END IF;
    IF upper(timezone) NOT IN ('UTC', 'GMT')
       AND EXISTS (SELECT 1 FROM pg_timezone_abbrevs a WHERE upper(a.abbrev) = upper(timezone)) THEN
        RAISE EXCEPTION 'time zone "%" is an abbreviation, a fixed offset from UTC all year', pgrelay._show(timezone)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use the name of a place in the time zone database, such as Europe/Berlin or America/New_York, whose clocks change with summer time.';
    END IF;
    BEGIN
        IF timezone = '' OR length(timezone) > 100 OR pgrelay._has_control(timezone) THEN
            RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value';
        END IF;
        PERFORM pg_catalog.timezone(timezone, now());
    EXCEPTION WHEN invalid_parameter_value OR feature_not_supported THEN
        RAISE EXCEPTION 'unknown time zone "%"', pgrelay._show(timezone)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use a name of the time zone database, such as UTC, Europe/Berlin or America/New_York (see pg_timezone_names).';
    END;
    RETURN timezone;
END
$$;
COMMENT ON FUNCTION pgrelay._check_timezone(text) IS
    'Internal: a time zone PostgreSQL knows that is not a fixed-offset abbreviation, or its error';

-- pgrelay.cron_next_runs()
CREATE OR REPLACE FUNCTION pgrelay.cron_next_runs(cron text, timezone text DEFAULT 'UTC',
                                       after timestamptz DEFAULT NULL, count integer DEFAULT 5)
RETURNS SETOF timestamptz
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The next `count` occurrences (1 to 1000) of a cron expression in a time zone after a time
 * (default now): what a schedule with this expression would fire, to check an expression before
 * scheduling it. Fewer rows when the expression names no later time within 10 years.
 */
DECLARE
    tz text := pgrelay._check_timezone(timezone);
    t timestamptz := COALESCE(after, now());
BEGIN
    PERFORM pgrelay._cron_parse(cron);
    IF count IS NULL OR count < 1 OR count > 1000 THEN
        RAISE EXCEPTION 'count must be between 1 and 1000, not %', COALESCE(count::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT isfinite(t) THEN
        RAISE EXCEPTION 'after must be a finite time, not %', t USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR i IN 1 .. count LOOP
        t := pgrelay._cron_next(cron, tz, t);
        EXIT WHEN t IS NULL;
        RETURN NEXT t;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgrelay.cron_next_runs(text, text, timestamptz, integer) IS
    'The next occurrences of a cron expression in a time zone after a time: what a schedule with it would fire';

-- pgrelay.schedule()
CREATE OR REPLACE FUNCTION pgrelay.schedule(name text, channel text DEFAULT NULL, cron text DEFAULT NULL,
                                 payload text DEFAULT NULL, timezone text DEFAULT NULL,
                                 catch_up text DEFAULT NULL, active boolean DEFAULT NULL,
                                 topic text DEFAULT NULL, event_type text DEFAULT NULL)
RETURNS pgrelay.schedule_entries
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Creates a schedule, or updates one: an argument left NULL keeps the current value (or takes the
 * default of a new schedule: payload '', timezone UTC, catch_up once, active). Everything is
 * checked here, so that firing never meets a schedule it cannot evaluate.
 *
 * The next occurrence is counted from now when the schedule is new, when its cron expression or
 * time zone changes, and when it is made active again (an inactive schedule fires nothing, and
 * catches nothing up); otherwise it stays, so that changing a payload never skips nor repeats a run.
 * The channel may be inactive: its occurrences are then recorded as failed until it is active.
 *
 * A schedule targets a channel or a topic: with topic, each occurrence is a publication of the
 * payload on it (publish(), with event_type), checked when it fires (a publication the topic's
 * subscribers refuse then is recorded as failed). Naming one of the two moves the schedule to it.
 */
DECLARE
    prev pgrelay.schedule_entries;
    s pgrelay.schedule_entries;
    ch pgrelay.channels;
BEGIN
    PERFORM pgrelay._check_name('schedule', 'name', schedule.name);
    SELECT * INTO prev FROM pgrelay.schedule_entries x WHERE x.name = schedule.name FOR UPDATE;
    IF NOT FOUND THEN
        IF (schedule.channel IS NULL AND schedule.topic IS NULL) OR schedule.cron IS NULL THEN
            RAISE EXCEPTION 'schedule "%" does not exist; give its channel and cron to create it', schedule.name
                USING ERRCODE = 'null_value_not_allowed';
        END IF;
        prev := NULL;
        s.name := schedule.name;
        s.payload := '';
        s.timezone := 'UTC';
        s.catch_up := 'once';
        s.active := true;
        s.created_by := session_user;
        s.created_at := now();
    ELSE
        s := prev;
    END IF;

    IF schedule.channel IS NOT NULL AND schedule.topic IS NOT NULL THEN
        RAISE EXCEPTION 'a schedule targets a channel or a topic, not both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF schedule.channel IS NOT NULL THEN
        s.channel := schedule.channel;
        s.topic := NULL;
        s.event_type := NULL;
    ELSIF schedule.topic IS NOT NULL THEN
        s.topic := schedule.topic;
        s.channel := NULL;
    END IF;
    IF schedule.event_type IS NOT NULL THEN
        IF s.topic IS NULL THEN
            RAISE EXCEPTION 'event_type is for a schedule that publishes on a topic'
                USING ERRCODE = 'invalid_parameter_value', HINT = 'Give topic => too.';
        END IF;
        IF schedule.event_type !~ '^[[:alnum:]_.:/-]{1,128}$' THEN
            RAISE EXCEPTION 'invalid event type "%"', pgrelay._show(schedule.event_type)
                USING ERRCODE = 'invalid_name',
                      DETAIL = 'An event type has 1 to 128 letters, digits or the characters _ . : / -';
        END IF;
        s.event_type := schedule.event_type;
    END IF;
    IF s.topic IS NOT NULL THEN
        PERFORM 1 FROM pgrelay.topics x WHERE x.topic = s.topic FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'topic "%" does not exist', pgrelay._show(s.topic)
                USING ERRCODE = 'undefined_object', HINT = 'Create it with pgrelay.create_topic().';
        END IF;
    ELSE
        SELECT * INTO ch FROM pgrelay.channels x WHERE x.channel = s.channel;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(s.channel)
                USING ERRCODE = 'undefined_object',
                      HINT = 'Create it with pgrelay.register().';
        END IF;
    END IF;
    s.cron := COALESCE(btrim(schedule.cron, E' \t'), s.cron);
    PERFORM pgrelay._cron_parse(s.cron);
    IF schedule.timezone IS NOT NULL THEN
        s.timezone := pgrelay._check_timezone(schedule.timezone);
    END IF;
    s.payload := COALESCE(schedule.payload, s.payload);
    -- a topic's payload is checked at each publication: its subscribers may change until then
    IF s.channel IS NOT NULL AND ch.action_type = 'notify' AND pgrelay._notification_id(s.payload) IS NULL THEN
        PERFORM pgrelay._email_payload_refused(s.channel, NULL);
    END IF;
    IF s.channel IS NOT NULL AND octet_length(s.payload) > ch.max_payload_bytes THEN
        RAISE EXCEPTION 'payload of % bytes is larger than the % bytes channel "%" accepts',
                        octet_length(s.payload), ch.max_payload_bytes, s.channel
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'An admin can raise the limit: pgrelay.register(channel, max_payload_bytes => ...).';
    END IF;
    s.catch_up := COALESCE(schedule.catch_up, s.catch_up);
    IF s.catch_up NOT IN ('once', 'skip') THEN
        RAISE EXCEPTION 'invalid catch_up "%"', pgrelay._show(s.catch_up)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use once (the default: a run missed while no Processor fired is queued once, late) or skip.';
    END IF;
    s.active := COALESCE(schedule.active, s.active);
    IF prev.name IS NULL OR prev.cron IS DISTINCT FROM s.cron OR prev.timezone IS DISTINCT FROM s.timezone
       OR (s.active AND NOT prev.active) THEN
        s.next_run_at := pgrelay._cron_next(s.cron, s.timezone, now());
        IF s.next_run_at IS NULL THEN
            RAISE EXCEPTION 'cron expression "%" names no time in the next 10 years', pgrelay._show(s.cron)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'A day of the month that no month has (such as 30 2), with any day of the week (*), never comes.';
        END IF;
    END IF;
    s.updated_at := now();

    INSERT INTO pgrelay.schedule_entries AS x
    SELECT s.*
    ON CONFLICT ON CONSTRAINT schedule_entries_pkey DO UPDATE
        SET channel = EXCLUDED.channel, cron = EXCLUDED.cron, timezone = EXCLUDED.timezone,
            payload = EXCLUDED.payload, catch_up = EXCLUDED.catch_up, active = EXCLUDED.active,
            next_run_at = EXCLUDED.next_run_at, updated_at = EXCLUDED.updated_at,
            topic = EXCLUDED.topic, event_type = EXCLUDED.event_type
    RETURNING * INTO s;
    RETURN s;
END
$$;
COMMENT ON FUNCTION pgrelay.schedule(text, text, text, text, text, text, boolean, text, text) IS
    'Creates or updates a recurring event (named arguments; NULL keeps the current value): payload queued on channel '
    '(or published on topic) at each time of cron in timezone';

-- pgrelay.unschedule()
CREATE OR REPLACE FUNCTION pgrelay.unschedule(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Drops a schedule and the record of its runs. Events it queued already stay queued.
    IF unschedule.name IS NULL THEN
        RAISE EXCEPTION 'name must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM pgrelay.schedule_entries x WHERE x.name = unschedule.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'schedule "%" does not exist', pgrelay._show(unschedule.name)
            USING ERRCODE = 'undefined_object';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay.unschedule(text) IS
    'Drops a recurring event and the record of its runs (events it queued stay queued)';

-- pgrelay._schedule_fires()
CREATE OR REPLACE FUNCTION pgrelay._schedule_fires() RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_schedule_fire): does this node fire schedules now? Exactly one node of a cluster
 * does: in single mode the database's (never a standby); in leader mode the leader (this
 * session's pg_relay.is_leader, which _ha_tick sets); in multi-node mode the lowest live node,
 * the one that adopts dead nodes' rows, while it is in contact with its peers (_verdicts, read only:
 * _ha_tick has just brought the observation up to date).
 */
DECLARE
    ctx record;
    in_contact boolean;
    lowest integer;
BEGIN
    IF pg_is_in_recovery() THEN
        RETURN false;
    END IF;
    SELECT * INTO ctx FROM pgrelay._dispatch_context();
    IF ctx.mode = 'single' THEN
        RETURN true;
    ELSIF ctx.mode = 'leader' THEN
        RETURN ctx.is_leader;
    END IF;
    SELECT COALESCE(bool_and(NOT v.waiting), true), min(v.node_id) FILTER (WHERE v.candidate)
    INTO in_contact, lowest
    FROM pgrelay._verdicts(pgrelay._dead_after(NULL)) v;
    RETURN in_contact AND lowest = ctx.node;
END
$$;
COMMENT ON FUNCTION pgrelay._schedule_fires() IS
    'Internal: does this node fire schedules now (single: yes; leader: the leader; multi-node: the lowest live node, in contact)?';

-- pgrelay._schedule_fire()
CREATE OR REPLACE FUNCTION pgrelay._schedule_fire(at timestamptz DEFAULT NULL)
RETURNS TABLE (schedule text, occurrence timestamptz, outcome text, late boolean, event_id bigint, reason text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Fires every active schedule due at `at` (default now; tests pass their own clock), when this
 * node is the one that fires (_schedule_fires; otherwise returns nothing). The Processor runs it
 * when its probe says schedule_due. Returns one row per occurrence fired:
 *
 *   on time   the schedule's latest occurrence at or before `at` came less than a minute ago:
 *             its event is queued (run_at: the occurrence). Earlier occurrences still due were
 *             missed; they are covered by this one.
 *   late      no occurrence came in the last minute, but one is due (no Processor fired it at its
 *             time): with catch_up once the first due occurrence is queued, once, however many
 *             were missed; with catch_up skip it is recorded as skipped.
 *   failed    the channel refused the event (inactive, or the payload over its limit now): the
 *             error is the reason, nothing is queued, the schedule goes on.
 *
 * A schedule of a topic publishes its payload (publish()): the run's event_id is the publication
 * id, and a publication refused (no subscriber, one that does not take it) is a failed run.
 *
 * Each occurrence fired gets its row in schedule_runs, keyed by (schedule, occurrence), before its
 * event is queued: an occurrence with a row (fired here, or on another node and replicated) is
 * never queued again. Each schedule's row is locked (SKIP LOCKED): two Processors of one
 * database never fire the same schedule at once. Runs older than 31 days are forgotten.
 */
#variable_conflict use_column
DECLARE
    t timestamptz := COALESCE(at, now());
    me integer := pgrelay._this_node();
    s pgrelay.schedule_entries;
    on_time timestamptz;
BEGIN
    IF NOT isfinite(t) THEN
        RAISE EXCEPTION 'at must be a finite time, not %', t USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pgrelay._schedule_fires() THEN
        RETURN;
    END IF;
    FOR s IN SELECT * FROM pgrelay.schedule_entries x
             WHERE x.active AND x.next_run_at <= t
             ORDER BY x.next_run_at, x.name
             FOR UPDATE SKIP LOCKED LOOP
        on_time := pgrelay._cron_next(s.cron, s.timezone, t - interval '1 minute');
        schedule := s.name;
        late := on_time IS NULL OR on_time > t OR on_time < s.next_run_at;
        occurrence := CASE WHEN late THEN s.next_run_at ELSE on_time END;
        event_id := NULL;
        reason := NULL;
        outcome := CASE WHEN late AND s.catch_up = 'skip' THEN 'skipped' ELSE 'queued' END;
        IF outcome = 'skipped' THEN
            reason := 'missed: no Processor fired it within a minute of its time';
        ELSIF s.topic IS NULL THEN
            event_id := pgrelay._next_id();
        END IF;
        INSERT INTO pgrelay.schedule_runs AS r (schedule, occurrence, outcome, late, reason, event_id, node_id, fired_at)
        VALUES (s.name, occurrence, outcome, late, reason, event_id, me, clock_timestamp())
        ON CONFLICT ON CONSTRAINT schedule_runs_pkey DO NOTHING;
        IF NOT FOUND THEN
            -- fired already (the schedule's row was older than its runs: a conflict kept another
            -- node's version of it): never twice, only move on
            outcome := NULL;
        ELSIF outcome = 'queued' THEN
            BEGIN
                IF s.topic IS NULL THEN
                    PERFORM pgrelay._enqueue(channel => s.channel, payload => s.payload, run_at => occurrence,
                                             id => event_id);
                ELSE
                    event_id := pgrelay.publish(s.topic, s.payload, s.event_type, occurrence);
                    UPDATE pgrelay.schedule_runs r SET event_id = _schedule_fire.event_id
                    WHERE r.schedule = s.name AND r.occurrence = _schedule_fire.occurrence;
                END IF;
            EXCEPTION WHEN OTHERS THEN
                outcome := 'failed';
                reason := SQLERRM;
                event_id := NULL;
                UPDATE pgrelay.schedule_runs r SET outcome = 'failed', reason = _schedule_fire.reason, event_id = NULL
                WHERE r.schedule = s.name AND r.occurrence = _schedule_fire.occurrence;
            END;
        END IF;
        UPDATE pgrelay.schedule_entries x
        SET next_run_at = pgrelay._cron_next(s.cron, s.timezone, GREATEST(t, _schedule_fire.occurrence)),
            last_run_at = CASE WHEN _schedule_fire.outcome IS NULL THEN x.last_run_at ELSE _schedule_fire.occurrence END,
            last_fired_at = CASE WHEN _schedule_fire.outcome IS NULL THEN x.last_fired_at ELSE clock_timestamp() END,
            last_outcome = COALESCE(_schedule_fire.outcome, x.last_outcome),
            last_event_id = CASE WHEN _schedule_fire.outcome IS NULL THEN x.last_event_id ELSE _schedule_fire.event_id END,
            last_reason = CASE WHEN _schedule_fire.outcome IS NULL THEN x.last_reason ELSE _schedule_fire.reason END
        WHERE x.name = s.name;
        DELETE FROM pgrelay.schedule_runs r WHERE r.schedule = s.name AND r.occurrence < t - interval '31 days';
        IF outcome IS NOT NULL THEN
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgrelay._schedule_fire(timestamptz) IS
    'Fires the schedules due at a time (default now) on the node that fires: queues each occurrence once; returns what it did';
