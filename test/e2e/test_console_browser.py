"""pg_relay web in a real browser: Debian's headless Chromium, driven by chromium-driver through
Debian's python3-selenium, loads every page of the console against a live database with a running
Processor (a SQL channel, one whose handler fails on every attempt and retries an hour later, an
email through a real SMTP server, a webhook to a receiver that checks signatures), signs in with
the address the console writes at start (its session cookie), checks what each page shows (the
retrying events and last errors on the first screen, the backlog over the last hour and day), that
every page fits a window 1280 pixels wide and refreshes itself unless told not to, retries a failed
event and pauses a channel and a schedule as an admin, is refused as a monitor, signs out (of the
session, and of HTTP Basic), and saves a screenshot of each page (docs/console.md shows them:
PGRELAY_CONSOLE_SHOTS=docs/img makes the committed ones). The browser's console must stay free of
errors: a Content-Security-Policy violation or a script error fails the test."""
import os
import re
import shutil
import subprocess

import pytest

import testlib
import webconsole

webdriver = pytest.importorskip("selenium.webdriver", reason="python3-selenium is not installed")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not CHROMIUM or not DRIVER,
                                reason="chromium and chromium-driver are not installed (packaging/install-deps)")
PAYLOAD = '{"order": 42, "note": "flaky: fails until the admin fixes it"}'


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,820",
              "--hide-scrollbars", "--lang=en-US", "--disable-extensions", "--no-first-run",
              "--user-data-dir=" + testlib.work_dir("chromium-")):
        opts.add_argument(a)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    d.set_page_load_timeout(30)
    yield d
    d.quit()


@pytest.fixture
def shots(tmp_path):
    """shot(driver, name): a screenshot in the test's directory (and PGRELAY_CONSOLE_SHOTS)."""
    extra = os.environ.get("PGRELAY_CONSOLE_SHOTS")

    def shot(d, name):
        path = tmp_path / (name + ".png")
        height = d.execute_script("return document.documentElement.scrollHeight")
        d.set_window_size(1280, max(820, min(height + 20, 1100)))     # the whole page, within reason
        # the box as it is by default (the tests untick it so that no page reloads under them);
        # set without its change event, so nothing is scheduled
        d.execute_script("var b = document.getElementById('autorefresh'); if (b) b.checked = true;")
        d.save_screenshot(str(path))
        d.set_window_size(1280, 820)
        assert path.stat().st_size > 5000
        if extra:
            shutil.copy(path, os.path.join(extra, name + ".png"))
        return path

    return shot


def go(d, element):
    """Clicks a link or a form's button and waits until the next page has loaded: a click returns
    before it is there. The old page is told apart by a mark on its window object, which the next
    page does not have; a probe that lands mid-navigation fails and is retried (chromium answers
    such a probe with a WebDriverException, not only with a stale element)."""
    d.execute_script("window.__pgrelay_old_page = true")
    element.click()

    def arrived(drv):
        return drv.execute_script("return window.__pgrelay_old_page === undefined"
                                  " && document.readyState === 'complete'")

    WebDriverWait(d, 30, ignored_exceptions=(WebDriverException,)).until(arrived)


def quiet(d, refused=False):
    """No error in the browser's console since the last call (CSP violations and script errors are);
    refused: the 403 answers of the database's refusals are expected. The browser's own request
    for /favicon.ico (the console has none) is not the page's: it may still be on its way to a
    console the test has stopped."""
    bad = [e for e in d.get_log("browser") if e["level"] == "SEVERE"
           and not (refused and "/action/" in e["message"] and "status of 403" in e["message"])
           and "/favicon.ico " not in e["message"]]
    assert not bad, bad


def text(d, css):
    return d.find_element(By.CSS_SELECTOR, css).text


def fits(d, width=1280):
    """Nothing on the page is wider than a window of width pixels: no table runs off its right
    edge (each table's right edge, and the page's own scroll width)."""
    d.set_window_size(width, 820)
    inner, scroll, right = d.execute_script(
        "return [window.innerWidth, document.documentElement.scrollWidth,"
        " Math.max(0, ...[...document.querySelectorAll('table, svg.chart, .tiles')]"
        ".map(function (t) { return t.getBoundingClientRect().right; }))]")
    assert scroll <= inner and right <= inner, (d.current_url, inner, scroll, right)


def no_refresh(d):
    """Unticks the refresh of this console's pages (kept per origin, as the reader's choice is), so
    that no page reloads under a test's clicks, and loads the page again."""
    d.execute_script("localStorage.setItem('pg_relay.refresh', '0')")
    d.get(d.current_url)


@pytest.fixture
def live(cluster, smtpd, hookd, processors):
    """A database with a SQL channel (one event fails until public.flaky says otherwise), an email
    through the SMTP server (one recipient refused), a webhook whose receiver answers 500 once, and
    a running Processor; waits until all of it is done."""
    db = testlib.Database(cluster, extensions=("pg_relay", "pg_relay_notifier"))
    for name, group in (("console_admin", "pgrelay_admin"), ("console_monitor", "pgrelay_monitor")):
        db.sql("DO $$ BEGIN CREATE ROLE %s LOGIN IN ROLE %s; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
               % (name, group))
    db.sql("CREATE TABLE public.flaky (fail boolean NOT NULL)")
    db.sql("INSERT INTO public.flaky VALUES (true)")
    db.sql("""CREATE FUNCTION public.confirm(p text) RETURNS void SECURITY DEFINER SET search_path = public
              LANGUAGE plpgsql AS $$ BEGIN IF p LIKE '%flaky%' AND (SELECT fail FROM public.flaky) THEN
              RAISE EXCEPTION 'order service unavailable'; END IF; END $$""")
    db.sql("GRANT EXECUTE ON FUNCTION public.confirm(text) TO pgrelay_processor, console_admin")
    db.sql("SELECT pgrelay.register('order_placed', 'sql', handler => 'public.confirm(text)', max_attempts => 3,"
           " backoff_base => '50 milliseconds', backoff_max => '100 milliseconds')")
    db.sql("SELECT pgrelay.register('nightly_report', 'sql', handler => 'public.confirm(text)', active => true)")
    # a handler that fails on every attempt (a duplicate key), retried an hour later: its events
    # are queued and not due, and would look healthy
    db.sql("CREATE TABLE public.stock (sku integer PRIMARY KEY)")
    db.sql("INSERT INTO public.stock VALUES (1)")
    db.sql("""CREATE FUNCTION public.sync_stock(p text) RETURNS void SECURITY DEFINER SET search_path = public
              LANGUAGE sql AS 'INSERT INTO public.stock VALUES (1)'""")
    db.sql("GRANT EXECUTE ON FUNCTION public.sync_stock(text) TO pgrelay_processor")
    db.sql("SELECT pgrelay.register('stock_sync', 'sql', handler => 'public.sync_stock(text)', max_attempts => 8,"
           " backoff_base => '1 hour', backoff_max => '1 hour')")
    db.sql("SELECT pgrelay.notify('stock_sync', '{\"sku\": ' || g || '}') FROM generate_series(1, 12) g")
    s = smtpd("--reject-rcpt", "nobody@example.org=550")
    db.sql("SELECT pgrelay_notifier.create_profile('sink', host => '127.0.0.1', port => %s, security => 'none',"
           " from_address => 'noreply@example.com', from_name => 'Example App', debug => true)", (s.port,))
    db.sql("SELECT pgrelay_notifier.create_channel('welcome_mail', 'sink')")
    h = hookd()
    h.script("500 times=1")
    db.sql("SELECT pgrelay.register_webhook('order_shipped', %s, ca_file => %s, signing_secret => %s,"
           " backoff_base => '50 milliseconds', backoff_max => '100 milliseconds')",
           (h.url("/orders"), h.ca, h.SECRET))
    db.sql("SELECT pgrelay.notify('order_placed', '{\"order\": ' || g || '}') FROM generate_series(1, 30) g")
    db.failed_id = db.scalar("SELECT pgrelay.notify('order_placed', %s)", (PAYLOAD,))
    db.mail_id = db.scalar("SELECT pgrelay_notifier.send('welcome_mail', \"to\" => ARRAY['Ann <ann@example.org>',"
                           " 'nobody@example.org'], subject => 'Welcome, Ann', body_text => 'Hello Ann')")
    db.mail_event = db.scalar("SELECT id FROM pgrelay.queue WHERE channel = 'welcome_mail'")
    db.hook_event = db.scalar("SELECT pgrelay.notify('order_shipped', '{\"order\": 42, \"carrier\": \"DHL\"}')")
    db.sql("SELECT pgrelay.notify('nightly_report', 'later', now() + interval '1 hour')")
    db.sql("SELECT pgrelay.schedule('nightly', 'nightly_report', '0 3 * * *', timezone => 'Europe/Berlin')")
    db.sql("SELECT * FROM pgrelay._schedule_fire((SELECT next_run_at FROM pgrelay.schedules))")   # its first run
    db.scheduled = db.scalar("SELECT last_event_id FROM pgrelay.schedules")
    db.proc = processors("-d", db.dsn, "--poll-interval=100ms", "--workers=2")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.failed") == 1 and
                     db.scalar("SELECT count(*) FROM pgrelay.log WHERE channel = 'order_shipped' AND outcome = 'ok'") == 1
                     and db.scalar("SELECT count(*) FROM pgrelay.log WHERE channel = 'welcome_mail'") >= 1,
                     "the events done, the email sent, the webhook retried and done")
    testlib.wait_for(lambda: db.scalar("SELECT retrying FROM pgrelay.queue_depth WHERE channel = 'stock_sync'") == 12,
                     "every event of stock_sync waiting for its retry")
    # the running Processor samples the backlog (its first report of each minute); before it, the
    # day as its predecessors would have sampled it: a quiet day with a burst some hours ago, drained
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.backlog_samples") >= 1, "the Processor's sample")
    db.sql("""INSERT INTO pgrelay.backlog_samples (sampled_at, due, waiting, retrying, failed)
              SELECT m, GREATEST(600 - abs(a - 360) * 10, a % 7), 2 + a % 3, GREATEST(150 - abs(a - 330) * 2, 0), 1
              FROM generate_series(1, 1439) a,
                   LATERAL (SELECT (SELECT min(sampled_at) FROM pgrelay.backlog_samples) - a * interval '1 minute' AS m) t""")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.processors WHERE alive") == 1,
                     "the Processor's report")
    yield db
    db.close()


def start(live, role, d):
    """A console as role, and the browser signed in to it with the address it wrote at start."""
    c = webconsole.Console(live.dsn.replace("user=postgres", "user=" + role))
    d.get(c.sign_in_url)
    assert d.current_url == c.url and d.title == "Overview \u00b7 pg_relay", (d.current_url, d.title)
    no_refresh(d)
    return c


def test_every_page_as_an_admin_then_as_a_monitor(live, browser, shots):
    d = browser
    admin = webconsole.Console(live.dsn.replace("user=postgres", "user=console_admin"))
    try:
        # Not signed in: no page, and what to do about it; then the address of the console's start
        d.get(admin.url)
        assert "not signed in" in d.page_source and "console_admin" not in d.page_source
        d.get_log("browser")                                       # the 401's console message
        d.get(admin.sign_in_url)
        assert d.current_url == admin.url
        # the overview refreshes itself, by default, until the reader unticks the box
        assert d.find_element(By.ID, "autorefresh").is_selected()
        d.execute_script("window.__pgrelay_old_page = true")
        WebDriverWait(d, 30, ignored_exceptions=(WebDriverException,)).until(
            lambda drv: drv.execute_script("return window.__pgrelay_old_page === undefined"
                                           " && document.readyState === 'complete'"))
        d.find_element(By.ID, "autorefresh").click()
        assert d.execute_script("return localStorage.getItem('pg_relay.refresh')") == "0"
        d.get(admin.url)
        assert not d.find_element(By.ID, "autorefresh").is_selected()
        # Overview: the totals, the backlog and the attempts, a row per channel with its last error
        # (after one load that counts the quiet day)
        testlib.wait_for(lambda: 'id="counting"' not in admin.get("/").body, "the last day counted")
        d.get(admin.url)
        assert d.title == "Overview \u00b7 pg_relay"
        assert "console_admin" in text(d, "#who") and "pgrelay_admin" in text(d, "#who")
        assert text(d, "#total-retrying") == "12\nretrying" and "warn" in d.find_element(By.ID, "total-retrying").get_attribute("class")
        assert text(d, "#total-failed") == "1\nfailed for good"
        rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r for r in d.find_elements(By.CSS_SELECTOR, "#channels tr")[1:]}
        assert set(rows) == {"order_placed", "welcome_mail", "order_shipped", "nightly_report", "stock_sync"}, rows.keys()
        # the channel with the most events due or retrying comes first
        assert d.find_elements(By.CSS_SELECTOR, "#channels tr")[1].text.startswith("stock_sync")
        cells = [c.text for c in rows["stock_sync"].find_elements(By.TAG_NAME, "td")]
        assert cells[3:6] == ["12", "0", "12"], cells                # queued, due, retrying
        assert "data 23505" in cells[14] and 'duplicate key value violates unique constraint "stock_pkey"' in cells[14]
        cells = [c.text for c in rows["order_placed"].find_elements(By.TAG_NAME, "td")]
        assert cells[7:9] == ["0", "0"], cells                       # keyed and snoozed
        assert cells[9:11] == ["30", "1"], cells                     # done and failed in the last hour
        assert "handler P0001" in cells[14] and "order service unavailable" in cells[14], cells
        assert [c.text for c in rows["nightly_report"].find_elements(By.TAG_NAME, "td")][3:5] == ["2", "0"]
        assert len(d.find_elements(By.CSS_SELECTOR, "#backlog svg.chart")) == 2
        assert len(d.find_elements(By.CSS_SELECTOR, "#attempts svg.chart")) == 2
        # the backlog: a bar per sample, the largest of each quarter of an hour over the day (the
        # current one may wait for its first sample: a report comes every 10 s)
        day = d.find_elements(By.CSS_SELECTOR, "#backlog svg.chart")[1]
        titles = [t.get_attribute("textContent") for t in day.find_elements(By.CSS_SELECTOR, "g > title")]
        assert len(titles) == 96 and not [t for t in titles[:-1] if "no sample" in t], titles
        assert any(t.endswith(" UTC: 600 due, 2 waiting, 90 retrying, 1 failed") for t in titles), titles[-30:]
        hour = d.find_elements(By.CSS_SELECTOR, "#backlog svg.chart")[0]
        titles = [t.get_attribute("textContent") for t in hour.find_elements(By.CSS_SELECTOR, "g > title")]
        assert len(titles) == 60 and not [t for t in titles[:-1] if "no sample" in t], titles
        assert "1 Processor(s) alive" in text(d, "#processors-line")
        fits(d)
        shots(d, "overview")
        quiet(d)

        # Channels: settings, then pause and resume a channel with its button
        go(d, d.find_element(By.LINK_TEXT, "Channels"))
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#channel-table tr") if r.text.startswith("order_placed")][0]
        assert "public.confirm(text)" in row.text and "parallel" in row.text
        # durations in words, on one line
        settings = row.find_element(By.CSS_SELECTOR, "td.runs .settings").text
        assert "3 attempts, timeout 30 s, backoff 50 ms \u2013 100 ms" in settings, settings
        assert "127.0.0.1" in d.find_element(By.CSS_SELECTOR, "#channel-table").text       # the webhook's host
        sync = [r for r in d.find_elements(By.CSS_SELECTOR, "#channel-table tr") if r.text.startswith("stock_sync")][0]
        assert "backoff 1 h \u2013 1 h" in sync.text and "duplicate key value" in sync.find_element(By.CSS_SELECTOR, "td.err").text
        fits(d)
        go(d, row.find_element(By.XPATH, ".//button[text()='Pause']"))
        assert "The channel is paused" in text(d, ".notice.done")
        assert live.scalar("SELECT paused FROM pgrelay.channels WHERE channel = 'order_placed'")
        go(d, d.find_element(By.ID, "back"))
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#channel-table tr") if r.text.startswith("order_placed")][0]
        assert "paused" in row.find_element(By.CSS_SELECTOR, "td.state").text
        shots(d, "channels")
        go(d, row.find_element(By.XPATH, ".//button[text()='Resume']"))
        assert not live.scalar("SELECT paused FROM pgrelay.channels WHERE channel = 'order_placed'")
        quiet(d)

        # Events: search the failed ones of a channel with the form
        d.get(admin.url + "events")
        d.find_element(By.NAME, "channel").send_keys("order_placed")
        Select(d.find_element(By.NAME, "outcome")).select_by_visible_text("failed")
        go(d, d.find_element(By.CSS_SELECTOR, "form.search button"))
        assert "channel=order_placed" in d.current_url and "outcome=failed" in d.current_url
        found = d.find_elements(By.CSS_SELECTOR, "#events tr")[1:]
        assert len(found) == 1 and "order service unavailable" in found[0].text, [r.text for r in found]
        d.get(admin.url + "events?channel=order_placed")
        fits(d)
        shots(d, "events")
        d.get(admin.url + "events?q=carrier")
        assert [r.find_elements(By.TAG_NAME, "a")[0].text for r in d.find_elements(By.CSS_SELECTOR, "#events tr")[1:]] \
            == [str(live.hook_event)] * 2
        quiet(d)

        # One failed event: its attempts and payload; fix the cause, retry it, watch it succeed
        d.get(admin.url + "failures")
        assert "1 failed event(s) match" in text(d, "#failed-count")
        fits(d)
        shots(d, "failures")
        go(d, d.find_element(By.LINK_TEXT, str(live.failed_id)))
        assert "failed for good" in text(d, "#status") and "order service unavailable" in text(d, "#status")
        assert text(d, "#payload") == PAYLOAD
        attempts = d.find_elements(By.CSS_SELECTOR, "#attempts tr")[1:]
        assert [a.find_elements(By.TAG_NAME, "td")[3].text for a in attempts] == ["retry", "retry", "failed"]
        assert all(a.find_elements(By.TAG_NAME, "td")[5].text == "P0001" for a in attempts)
        fits(d)
        shots(d, "event")
        live.sql("UPDATE public.flaky SET fail = false")
        go(d, d.find_element(By.XPATH, "//button[text()='Retry']"))
        assert "queued again" in text(d, ".notice.done")
        testlib.wait_for(lambda: live.scalar("SELECT outcome FROM pgrelay.log WHERE event_id = %s ORDER BY id DESC LIMIT 1",
                                             (live.failed_id,)) == "ok", "the retried event done")
        go(d, d.find_element(By.ID, "back"))
        assert [a.find_elements(By.TAG_NAME, "td")[3].text for a in d.find_elements(By.CSS_SELECTOR, "#attempts tr")[1:]] \
            == ["retry", "retry", "failed", "ok"]
        assert "Finished" in text(d, "#status")
        quiet(d)

        # The email: per-recipient results and the delivery trace
        d.get(admin.url + "event?id=%d" % live.mail_event)
        rec = text(d, "#recipients")
        assert "ann@example.org" in rec and "sent" in rec and "nobody@example.org" in rec and "550" in rec, rec
        assert "partially_sent" in text(d, "#deliveries")
        assert d.find_elements(By.CSS_SELECTOR, "details.trace")
        shots(d, "email")

        # The webhook: status and latency of each attempt, the recorded answers
        d.get(admin.url + "event?id=%d" % live.hook_event)
        statuses = [a.find_elements(By.TAG_NAME, "td")[8].text for a in d.find_elements(By.CSS_SELECTOR, "#attempts tr")[1:]]
        assert statuses == ["500", "200"], statuses
        assert len(d.find_elements(By.CSS_SELECTOR, "details.answer")) == 2
        shots(d, "webhook")

        # Schedules: the nightly report's row, paused and resumed with its button
        go(d, d.find_element(By.LINK_TEXT, "Schedules"))
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#schedules tr") if r.text.startswith("nightly")][0]
        assert "nightly_report" in row.text and "0 3 * * *" in row.text and "Europe/Berlin" in row.text, row.text
        assert "queued" in row.text and row.find_element(By.LINK_TEXT, str(live.scheduled))
        fits(d)
        shots(d, "schedules")
        go(d, row.find_element(By.XPATH, ".//button[text()='Pause']"))
        assert "The schedule is paused" in text(d, ".notice.done")
        assert not live.scalar("SELECT active FROM pgrelay.schedules WHERE name = 'nightly'")
        go(d, d.find_element(By.ID, "back"))
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#schedules tr") if r.text.startswith("nightly")][0]
        assert "paused" in row.find_element(By.CSS_SELECTOR, "td.state").text
        go(d, row.find_element(By.XPATH, ".//button[text()='Resume']"))
        assert live.scalar("SELECT active FROM pgrelay.schedules WHERE name = 'nightly'")
        quiet(d)

        # Topics: a subscription with its filter, reached by the navigation
        live.sql("SELECT pgrelay.create_topic('orders', 'order lifecycle')")
        live.sql("SELECT pgrelay.subscribe('orders', 'order_placed', '{order.*}')")
        go(d, d.find_element(By.LINK_TEXT, "Topics"))
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#topics tr") if "order_placed" in r.text][0]
        assert "orders" in row.text and "order lifecycle" in row.text and "order.*" in row.text, row.text
        fits(d)
        quiet(d)

        # Processors: the running one
        d.get(admin.url + "processors")
        assert str(live.proc.proc.pid) in text(d, "#processors") and "alive" in text(d, "#processors")
        fits(d)
        shots(d, "processors")
        quiet(d)

        # Sign out: the session ends, and the next page is not served
        go(d, d.find_element(By.ID, "sign-out"))
        assert "This browser's session has ended" in text(d, "#signed-out")
        d.get(admin.url + "channels")
        assert "not signed in" in d.page_source and "order_placed" not in d.page_source
        d.get_log("browser")                                       # the 401's console message
    finally:
        admin.stop()

    # A monitor: the same pages without payloads or deliveries, and the database refuses its actions
    live.sql("UPDATE public.flaky SET fail = true")
    again = live.scalar("SELECT pgrelay.notify('order_placed', %s)", (PAYLOAD,))
    testlib.wait_for(lambda: live.scalar("SELECT count(*) FROM pgrelay.failed WHERE event_id = %s", (again,)) == 1,
                     "the second failure")
    mon = start(live, "console_monitor", d)
    try:
        d.get(mon.url)
        assert "console_monitor" in text(d, "#who") and "pgrelay_monitor" in text(d, "#who")
        assert len(d.find_elements(By.CSS_SELECTOR, "#channels tr")) == 6
        assert text(d, "#total-retrying") == "12\nretrying"
        d.get(mon.url + "channels")
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#channel-table tr") if r.text.startswith("stock_sync")][0]
        assert "duplicate key value" in row.text and "public.sync_stock" not in row.text
        d.get(mon.url + "events")
        assert not d.find_element(By.NAME, "q").is_enabled()
        assert "may not read payloads" in text(d, ".notice.denied")
        d.get(mon.url + "event?id=%d" % again)
        assert "failed for good" in text(d, "#status")
        assert "flaky" not in d.page_source and not d.find_elements(By.ID, "payload")
        assert "may not read payloads" in d.page_source
        shots(d, "monitor-event")
        go(d, d.find_element(By.XPATH, "//button[text()='Retry']"))
        assert "Refused by the database" in d.title and "permission denied" in text(d, ".notice.denied")
        assert live.scalar("SELECT count(*) FROM pgrelay.failed WHERE event_id = %s", (again,)) == 1
        d.get(mon.url + "event?id=%d" % live.mail_event)
        assert "ann@example.org" not in d.page_source and "may not read the notifier" in d.page_source
        d.get(mon.url + "schedules")
        assert "nightly_report" in text(d, "#schedules") and not d.find_elements(By.XPATH, "//button[text()='Pause']")
        assert "may not pause or resume schedules" in text(d, ".notice.denied")
        d.get(mon.url + "topics")
        assert "order_placed" in text(d, "#topics") and "order lifecycle" not in text(d, "#topics")
        d.get(mon.url + "channels")
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#channel-table tr") if r.text.startswith("order_placed")][0]
        go(d, row.find_element(By.XPATH, ".//button[text()='Pause']"))
        assert "Refused by the database" in d.title
        assert not live.scalar("SELECT paused FROM pgrelay.channels WHERE channel = 'order_placed'")
        quiet(d, refused=True)
    finally:
        mon.stop()


def test_pages_read_without_javascript(live, browser):
    """The pages are whole without the script: the same rows, the forms still post."""
    d = browser
    admin = start(live, "console_admin", d)
    try:
        d.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
        d.get(admin.url + "channels")
        assert "order_placed" in text(d, "#channel-table")
        assert not d.find_element(By.ID, "autorefresh").is_displayed()      # the script's only control
        row = [r for r in d.find_elements(By.CSS_SELECTOR, "#channel-table tr") if r.text.startswith("nightly_report")][0]
        go(d, row.find_element(By.XPATH, ".//button[text()='Pause']"))
        assert live.scalar("SELECT paused FROM pgrelay.channels WHERE channel = 'nightly_report'")
    finally:
        admin.stop()


def test_sign_out_of_http_basic(live, browser, tmp_path):
    """HTTP Basic has no sign-out of its own: the browser sends the password with every request
    until an answer with it is 401. The console's Sign out gets that answer, and Chromium forgets
    the password: the next page asks for it again."""
    d = browser
    line = subprocess.run([testlib.PROCESSOR, "web", "--hash-password=ann", "--iterations=1000"],
                          input="correct horse\n", capture_output=True, text=True, check=True).stdout
    auth = tmp_path / "users"
    auth.write_text(line)
    c = webconsole.Console(live.dsn.replace("user=postgres", "user=console_admin"), "--auth-file=" + str(auth),
                           "--log-level=debug")

    def served():
        """The pages served to ann so far (a refused request is not served)."""
        return len(re.findall(r"web_request method=GET path=/channels status=200 .*user=ann", c.proc.log()))

    try:
        d.get(c.url.replace("http://", "http://ann:correct%20horse@"))
        assert "signed in as ann" in text(d, "#who")
        no_refresh(d)
        # the browser keeps the password for the console's other pages
        d.get(c.url + "channels")
        assert "signed in as ann" in text(d, "#who") and "order_placed" in text(d, "#channel-table")
        assert served() == 1
        quiet(d)
        # Sign out: the answer is 401 (a browser shows its password prompt, which headless Chromium
        # cancels), and the next page comes without the password: not served
        go(d, d.find_element(By.ID, "sign-out"))
        assert "web_signed_out session=password user=ann" in c.proc.log()
        d.get(c.url + "channels")
        assert "signed in as" not in d.page_source and "order_placed" not in d.page_source, d.page_source
        assert served() == 1
        d.get_log("browser")                                       # the 401s' console messages
    finally:
        c.stop()
