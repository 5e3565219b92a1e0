"""pg_relay web as a child process for the tests: started on a free loopback port (its log says
where: web_listening url=...), and plain HTTP(S) requests to it that keep status, headers and body,
so that a test can check what the console answers to anything a browser or an attacker sends."""
import base64
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request

import testlib


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        return self.headers.get(name)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kw):
        return None


class Console:
    """One `pg_relay web` (the ASan build unless binary= says otherwise)."""

    def __init__(self, dsn, *args, listen="127.0.0.1:0", env=None, binary=None, ca=None):
        self.proc = testlib.Processor(["web", "-d", dsn, "--listen=" + listen] + list(args), env=env,
                                      binary=binary or testlib.PROCESSOR)
        m = self.proc.wait_log(r"web_listening url=(\S+)")
        self.url = m.group(1)
        self.ca = ca

    def address(self):
        """HOST:PORT as a browser puts it in Host and Origin."""
        return re.match(r"https?://([^/]+)/", self.url).group(1)

    def origin(self):
        return self.url.rstrip("/")

    def request(self, path, data=None, headers=None, user=None, password=None, method=None, base=None):
        url = (base or self.url).rstrip("/") + path
        h = dict(headers or {})
        if user is not None:
            h["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        body = None
        if data is not None:
            body = urllib.parse.urlencode(data).encode() if isinstance(data, dict) else data.encode()
            h.setdefault("Content-Type", "application/x-www-form-urlencoded")
        req = urllib.request.Request(url, data=body, headers=h, method=method)
        handlers = [NoRedirect()]
        if url.startswith("https://"):
            ctx = ssl.create_default_context(cafile=self.ca)
            handlers.append(urllib.request.HTTPSHandler(context=ctx))
        opener = urllib.request.build_opener(*handlers)
        try:
            with opener.open(req, timeout=30) as r:
                return Response(r.status, r.headers, r.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            return Response(e.code, e.headers, e.read().decode("utf-8", "replace"))

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
