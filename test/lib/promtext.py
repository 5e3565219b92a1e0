"""A strict parser of the Prometheus text exposition format 0.0.4, for the tests of the Processor's
--metrics endpoint: it refuses what Prometheus would refuse and what the format's rules forbid
even where Prometheus is lenient.

    families = parse(text)      # {family name: Family}, or raises FormatError naming the line
    families["pgrelay_events_total"].value(channel="orders", outcome="ok")

Rules checked: every line is a HELP or TYPE line, another comment, or a sample; metric and label
names are valid; label values use only the escapes \\\\, \\" and \\n; values are Go floats; a family
has at most one HELP and one TYPE, given before its first sample; a family's samples are not
interleaved with another's; no series appears twice; counters are not negative; a histogram has
_bucket samples with an le label, in increasing le order, cumulative, ending with le="+Inf", equal
to its _count, and a _sum, for every label set.
"""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
FLOAT = re.compile(r"^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf|NaN)$")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class FormatError(AssertionError):
    pass


class Family:
    def __init__(self, name):
        self.name = name
        self.type = None
        self.help = None
        self.samples = []          # (sample name, {label: value}, float)

    def series(self, suffix=""):
        return [(labels, v) for n, labels, v in self.samples if n == self.name + suffix]

    def value(self, suffix="", **labels):
        """The value of the one series with exactly these labels (None when there is none)."""
        for l, v in self.series(suffix):
            if l == labels:
                return v
        return None


def _fail(lineno, line, why):
    raise FormatError("line %d: %s: %r" % (lineno, why, line))


def _unescape_help(text):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in "\\n":
            out.append("\\" if text[i + 1] == "\\" else "\n")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _labels(s, lineno, line):
    """Parse '{a="x",b="y"}' at the start of s; return (dict, rest)."""
    labels, i = {}, 1
    while True:
        if s[i] == "}":
            return labels, s[i + 1:]
        m = LABEL.match(s, i)
        if not m:
            _fail(lineno, line, "bad label name")
        key = m.group(0)
        i = m.end()
        if s[i:i + 2] != '="':
            _fail(lineno, line, "expected =\" after label %s" % key)
        i += 2
        val = []
        while True:
            if i >= len(s):
                _fail(lineno, line, "unterminated label value")
            c = s[i]
            if c == "\\":
                nxt = s[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    _fail(lineno, line, "bad escape \\%s in a label value" % nxt)
                val.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                _fail(lineno, line, "raw newline in a label value")
            else:
                val.append(c)
                i += 1
        if key in labels:
            _fail(lineno, line, "label %s twice" % key)
        labels[key] = "".join(val)
        if s[i] == ",":
            i += 1
            if s[i] == "}":          # a trailing comma is allowed by 0.0.4
                return labels, s[i + 1:]
        elif s[i] != "}":
            _fail(lineno, line, "expected , or } after a label")


def _family_of(name, families):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and base in families and families[base].type in ("histogram", "summary"):
            return base
    return name


def parse(text):
    if text and not text.endswith("\n"):
        raise FormatError("the exposition does not end with a newline")
    families, order, seen_series, closed = {}, [], set(), set()
    current = None
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.fullmatch(name):
                    _fail(lineno, line, "bad metric name")
                fam = families.setdefault(name, Family(name))
                if name not in order:
                    order.append(name)
                if fam.samples:
                    _fail(lineno, line, "%s after the family's samples" % parts[1])
                if name in closed:
                    _fail(lineno, line, "family %s again after another family" % name)
                if current is not None and current != name:
                    closed.add(current)
                current = name
                if parts[1] == "HELP":
                    if fam.help is not None:
                        _fail(lineno, line, "second HELP")
                    fam.help = _unescape_help(parts[3] if len(parts) > 3 else "")
                else:
                    if fam.type is not None:
                        _fail(lineno, line, "second TYPE")
                    if len(parts) != 4 or parts[3] not in TYPES:
                        _fail(lineno, line, "bad TYPE")
                    fam.type = parts[3]
            continue
        if line.strip() == "":
            continue
        m = NAME.match(line)
        if not m:
            _fail(lineno, line, "bad metric name")
        sname, rest = m.group(0), line[m.end():]
        labels = {}
        if rest.startswith("{"):
            labels, rest = _labels(rest, lineno, line)
        if not rest.startswith(" "):
            _fail(lineno, line, "expected a space before the value")
        fields = rest.split()
        if len(fields) not in (1, 2) or not FLOAT.match(fields[0]):
            _fail(lineno, line, "bad value")
        if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
            _fail(lineno, line, "bad timestamp")
        value = float(fields[0])
        fname = _family_of(sname, families)
        fam = families.setdefault(fname, Family(fname))
        if fname not in order:
            order.append(fname)
        if fname in closed:
            _fail(lineno, line, "family %s interleaved with another" % fname)
        if current is not None and current != fname:
            closed.add(current)
        current = fname
        key = (sname, tuple(sorted(labels.items())))
        if key in seen_series:
            _fail(lineno, line, "series twice")
        seen_series.add(key)
        if fam.type == "counter" and (value < 0 or math.isnan(value)):
            _fail(lineno, line, "a counter below zero")
        fam.samples.append((sname, labels, value))
    for fam in families.values():
        if fam.type == "histogram":
            _check_histogram(fam)
    return families


def _check_histogram(fam):
    groups = {}
    for sname, labels, value in fam.samples:
        rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if sname == fam.name + "_bucket":
            if "le" not in labels:
                raise FormatError("%s: a bucket without le" % fam.name)
            g["buckets"].append((float(labels["le"]), value))
        elif sname == fam.name + "_sum":
            g["sum"] = value
        elif sname == fam.name + "_count":
            g["count"] = value
        else:
            raise FormatError("%s: sample %s in a histogram" % (fam.name, sname))
    for rest, g in groups.items():
        les = [le for le, _ in g["buckets"]]
        counts = [c for _, c in g["buckets"]]
        if not les or les[-1] != math.inf:
            raise FormatError("%s%s: the last bucket is not le=\"+Inf\"" % (fam.name, dict(rest)))
        if les != sorted(les) or len(set(les)) != len(les):
            raise FormatError("%s%s: buckets not in increasing le order" % (fam.name, dict(rest)))
        if counts != sorted(counts):
            raise FormatError("%s%s: buckets not cumulative" % (fam.name, dict(rest)))
        if g["count"] is None or g["sum"] is None:
            raise FormatError("%s%s: _sum or _count missing" % (fam.name, dict(rest)))
        if counts[-1] != g["count"]:
            raise FormatError("%s%s: +Inf bucket %s != _count %s" % (fam.name, dict(rest), counts[-1], g["count"]))


def sample_names(families):
    """Every sample name a family may produce (a histogram's _bucket, _sum, _count), for checking
    that a query or dashboard names only metrics that exist."""
    out = set()
    for fam in families.values():
        if fam.type == "histogram":
            out |= {fam.name + s for s in ("_bucket", "_sum", "_count")}
        else:
            out.add(fam.name)
    return out
