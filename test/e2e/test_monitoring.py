"""The monitoring files of monitoring/ hold what they claim: every query of queries.yaml runs as a
login with nothing but pgrelay_monitor and returns exactly the columns it declares (and
postgres_exporter itself loads the file and serves them), and the Grafana dashboard and the
alerting rules name only metrics that exist: the Processor's (scraped from a running one), the
exporter's from queries.yaml, and Prometheus's own `up`."""
import json
import os
import re
import shutil
import subprocess
import urllib.request

import pytest
import yaml

import promtext
import testlib

MONITORING = os.path.join(testlib.ROOT, "monitoring")
USAGES = {"LABEL", "GAUGE", "COUNTER", "DISCARD", "MAPPEDMETRIC", "DURATION"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
                "offset", "bool", "inf", "nan"}


def queries():
    return yaml.safe_load(open(os.path.join(MONITORING, "queries.yaml")))


def declared(q):
    """[(column, usage)] of a query, in order."""
    out = []
    for item in q["metrics"]:
        (col, spec), = item.items()
        out.append((col, spec["usage"]))
    return out


def exporter_metric_names():
    names = set()
    for qname, q in queries().items():
        for col, usage in declared(q):
            if usage in ("GAUGE", "COUNTER"):
                names.add("%s_%s" % (qname, col))
    return names


def promql_names(expr):
    """The metric names a PromQL expression refers to: what is left once strings, label matchers,
    grouping clauses, ranges, function calls and keywords are taken out."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        if e[m.end():].lstrip().startswith("(") or m.group(0) in PROMQL_WORDS:
            continue
        names.add(m.group(0))
    return names


def test_promql_names():
    assert promql_names('histogram_quantile(0.95, sum by (le, channel) (rate(a_bucket{x=~"$i"}[5m])))') == {"a_bucket"}
    assert promql_names('count(b) > 0 and max(c) == 0') == {"b", "c"}
    assert promql_names('sum by (channel) (rate(d{outcome=~"ok|x"}[10m])) / sum(e) > 0.1') == {"d", "e"}


def populate(db):
    """Some of everything the queries read: channels, due and failed events, a Processor's report,
    a peer node with a heartbeat."""
    db.conn.execute("""
        CREATE FUNCTION ok(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS '';
        CREATE FUNCTION stop(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'no' USING ERRCODE = 'PGSTP'; END $$;
        SELECT pgrelay.register('orders', 'sql', handler => 'ok(text)');
        SELECT pgrelay.register('broken', 'sql', handler => 'stop(text)');
        SELECT pgrelay.notify('orders', 'x');
        SELECT pgrelay.process_one(pgrelay.notify('orders', 'y'));
        SELECT pgrelay.process_one(pgrelay.notify('broken', 'z'));
        SELECT pgrelay._processor_report('host-a', 42, '9.9.9', 4, 1, now(), '10 seconds');
        SELECT pgrelay.register_webhook('hook', 'https://hooks.example.com/orders');
        SELECT pgrelay.set_node(2, 'n2');
        INSERT INTO pgrelay.heartbeats (node_id, beat, beat_at, mode, leader, started_at)
        VALUES (2, 1, now(), 'leader', true, now());
        DO $$ BEGIN CREATE ROLE relay_watch LOGIN IN ROLE pgrelay_monitor;
                    EXCEPTION WHEN duplicate_object THEN NULL; END $$;
    """)
    return db.dsn.replace("user=postgres", "user=relay_watch")


def test_queries_run_as_a_monitor_and_return_what_they_declare(db):
    import psycopg
    dsn = populate(db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert not conn.execute("SELECT pg_has_role('pgrelay_admin', 'USAGE')").fetchone()[0]
        for name, q in queries().items():
            assert re.fullmatch(r"[a-z_]+", name) and name.startswith("pg_relay_")
            assert set(q) <= {"query", "metrics", "master", "cache_seconds"}, name
            cols = declared(q)
            assert all(u in USAGES for _, u in cols), name
            assert all(spec["description"] for item in q["metrics"] for spec in item.values()), name
            cur = conn.execute(q["query"])
            got = [d.name for d in cur.description]
            assert got == [c for c, _ in cols], "%s returns %s, declares %s" % (name, got, cols)
            rows = cur.fetchall()
            assert rows, "%s returned no row on a database with something to show" % name
            for row in rows:
                for (col, usage), v in zip(cols, row):
                    if usage == "LABEL":
                        assert isinstance(v, str), (name, col, v)
                    else:
                        assert v is not None and float(v) == float(v), (name, col, v)


@pytest.mark.skipif(shutil.which("prometheus-postgres-exporter") is None,
                    reason="prometheus-postgres-exporter is not installed")
def test_postgres_exporter_serves_the_queries(db, tmp_path):
    dsn = populate(db)
    port = testlib.free_ports(1)[0]
    log = open(tmp_path / "exporter.log", "wb")
    env = dict(os.environ, DATA_SOURCE_NAME="postgresql://relay_watch@127.0.0.1:%d/%s?sslmode=disable"
               % (db.cluster.port, db.name))
    # Debian 12's exporter (0.11) reads the checkpoint columns of pg_stat_bgwriter, which
    # PostgreSQL 17 moved to pg_stat_checkpointer: its own bgwriter collector fails there.
    newer = ["--no-collector.bgwriter"] if int(testlib.pg_major()) >= 17 else []
    p = subprocess.Popen(["prometheus-postgres-exporter", "--web.listen-address=127.0.0.1:%d" % port,
                          "--extend.query-path=" + os.path.join(MONITORING, "queries.yaml"),
                          "--disable-default-metrics", "--disable-settings-metrics"] + newer,
                         stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        def scraped():
            assert p.poll() is None, open(tmp_path / "exporter.log").read()
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
                    text = r.read().decode()
            except OSError:
                return None
            return text if "pg_relay_queue_due" in text else None
        text = testlib.wait_for(scraped, "the exporter to serve pg_relay_queue_due")
        fams = promtext.parse(text)
        names = promtext.sample_names(fams)
        missing = exporter_metric_names() - names
        assert not missing, "declared but not served: %s\n%s" % (missing, open(tmp_path / "exporter.log").read())
        assert fams["pg_relay_queue_due"].value(channel="orders", action_type="sql",
                                                server="127.0.0.1:%d" % db.cluster.port) == 1
        assert all(v == 0 for _, v in fams["pg_exporter_user_queries_load_error"].series())
        assert fams["pg_exporter_last_scrape_error"].value() == 0
        assert "error" not in open(tmp_path / "exporter.log").read().lower()
    finally:
        p.terminate()
        p.wait(timeout=10)
        log.close()


def processor_metric_names(db, processors):
    p = processors("-d", db.dsn, "--metrics=127.0.0.1:0")
    addr = p.wait_log(r" metrics_listening address=(\S+)").group(1)
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        names = promtext.sample_names(promtext.parse(r.read().decode()))
    assert p.stop() == 0
    return names


def test_dashboard_names_only_what_the_processor_exports(db, processors):
    exported = processor_metric_names(db, processors)
    dash = json.load(open(os.path.join(MONITORING, "grafana-dashboard.json")))
    assert dash["title"] and dash["uid"] and dash["schemaVersion"] >= 30
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    # Grafana's label_values(METRIC, LABEL) is not PromQL: its metric counts, its label does not
    m = re.fullmatch(r"label_values\((\w+), *\w+\)", variables["instance"]["definition"])
    assert m, variables["instance"]["definition"]
    exprs = [m.group(1)]
    ids = set()
    for panel in dash["panels"]:
        assert panel["id"] not in ids
        ids.add(panel["id"])
        g = panel["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}"
        assert panel["targets"], panel["title"]
        for t in panel["targets"]:
            assert t["refId"] and t["expr"]
            exprs.append(t["expr"])
    used = set().union(*(promql_names(e) for e in exprs))
    assert used, exprs
    unknown = used - exported
    assert not unknown, "the dashboard names metrics the Processor does not export: %s" % sorted(unknown)


def test_alerts_name_only_metrics_that_exist(db, processors):
    known = processor_metric_names(db, processors) | exporter_metric_names() | {"up"}
    rules = yaml.safe_load(open(os.path.join(MONITORING, "alerts.yaml")))
    seen = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
            assert re.fullmatch(r"PgRelay[A-Za-z]+", rule["alert"]) and rule["alert"] not in seen
            seen.add(rule["alert"])
            assert rule["labels"]["severity"] in ("critical", "warning", "info")
            assert rule["annotations"]["summary"]
            unknown = promql_names(rule["expr"]) - known
            assert not unknown, "%s names %s" % (rule["alert"], sorted(unknown))
    # the alerts docs/monitoring.md promises are there
    for a in ("PgRelayEventsWaiting", "PgRelayEventsFailing", "PgRelayHighErrorRate", "PgRelayNoProcessorAlive",
              "PgRelayLeaderless", "PgRelayProcessorRestarting"):
        assert a in seen
