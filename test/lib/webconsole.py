"""pg_relay web as a child process for the tests: started on a free loopback port (its log says
where: web_listening url=...), signed in with the address it gives when it has no password file
(web_sign_in url="...", or the file of --token-file), and plain HTTP(S) requests to it that keep
status, headers and body, so that a test can check what the console answers to anything a browser
or an attacker sends."""
import base64
import http.client
import re
import ssl
import urllib.parse

import testlib


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        return self.headers.get(name)


class Console:
    """One `pg_relay web` (the ASan build unless binary= says otherwise). Without --auth-file it
    signs in at start and sends its session cookie with every request (cookie=False: without)."""

    def __init__(self, dsn, *args, listen="127.0.0.1:0", env=None, binary=None, ca=None):
        self.proc = testlib.Processor(["web", "-d", dsn, "--listen=" + listen] + list(args), env=env,
                                      binary=binary or testlib.PROCESSOR)
        m = self.proc.wait_log(r"web_listening url=(\S+)")
        self.url = m.group(1)
        self.ca = ca
        self.cookie = None
        self.sign_in_url = None
        if not any(a.startswith("--auth-file=") for a in args):
            token_file = [a.split("=", 1)[1] for a in args if a.startswith("--token-file=")]
            if token_file:
                self.proc.wait_log(r"web_sign_in file=")
                with open(token_file[0]) as f:
                    self.sign_in_url = f.read().strip()
            else:
                self.sign_in_url = self.proc.wait_log(r'web_sign_in url="?([^"\s]+)').group(1)
            r = self.request(self.sign_in_url[len(self.url) - 1:], cookie=False)
            assert r.status == 303 and r.header("Set-Cookie"), (r.status, r.body)
            self.cookie = r.header("Set-Cookie").split(";")[0]

    def address(self):
        """HOST:PORT as a browser puts it in Host and Origin."""
        return re.match(r"https?://([^/]+)/", self.url).group(1)

    def port(self):
        return int(self.address().rsplit(":", 1)[1])

    def origin(self):
        return self.url.rstrip("/")

    def request(self, path, data=None, headers=None, user=None, password=None, method=None, base=None,
                cookie=True, source=None):
        """One request on a connection of its own, from the loopback address source when given;
        redirects are not followed."""
        url = urllib.parse.urlsplit((base or self.url).rstrip("/") + path)
        h = dict(headers or {})
        if cookie and self.cookie:
            h.setdefault("Cookie", self.cookie)
        if user is not None:
            h["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        body = None
        if data is not None:
            body = urllib.parse.urlencode(data).encode() if isinstance(data, dict) else data.encode()
            h.setdefault("Content-Type", "application/x-www-form-urlencoded")
        kw = {"timeout": 30, "source_address": (source, 0) if source else None}
        if url.scheme == "https":
            conn = http.client.HTTPSConnection(url.hostname, url.port,
                                               context=ssl.create_default_context(cafile=self.ca), **kw)
        else:
            conn = http.client.HTTPConnection(url.hostname, url.port, **kw)
        try:
            conn.request(method or ("POST" if body is not None else "GET"),
                         url.path + ("?" + url.query if url.query else ""), body=body, headers=h)
            r = conn.getresponse()
            return Response(r.status, r.msg, r.read().decode("utf-8", "replace"))
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request(path, **kw)

    def csrf(self, path, **kw):
        """The CSRF token of the forms of a page (every page that has a form carries it)."""
        m = re.search(r'name="csrf" value="([0-9a-f]{64})"', self.get(path, **kw).body)
        assert m, "no form on %s" % path
        return m.group(1)

    def post(self, path, fields, origin=True, **kw):
        """A form's POST as a browser sends it: with this console's Origin unless origin= says
        otherwise (False: none)."""
        headers = dict(kw.pop("headers", {}) or {})
        if origin is True:
            headers["Origin"] = self.origin()
        elif origin:
            headers["Origin"] = origin
        return self.request(path, data=fields, headers=headers, **kw)

    def stop(self):
        return self.proc.stop()
