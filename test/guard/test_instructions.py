"""A guard against plan regressions: the server's instructions per event of process_one(),
process_batch() and notify(), counted by callgrind in a single-user server (bench/bench.py,
`instructions()`: the same count on every run of a build, whatever the machine does, so this is no
timing test; one exception below), held against the statement that does the same writes in plain
SQL. A plan that reads
a catalog or a table whole, or a per-event call that should be per batch, multiplies them; no drain
test would notice (one release shipped at 133M instructions per event).

The multiples are the current figures with room (docs/design/benchmark-notes.md has the figures of
the release): process_one() <= 3.5 times the floor statement (one event per transaction), a batch
of 50 <= 5.5 times the batched limit's statement per event, a broker kind's batch of 50 (its claim and
its finish in one transaction) <= 3.5 times the statement that makes its writes in plain SQL, per
event, notify() <= 3 times a plain insert into a table with the queue's indexes.

The exception: a batch asks its gate again whenever 10 ms of wall time have passed since it last
asked (the promise that no event starts more than 10 ms after pause()). Under callgrind a handler
takes about that long, so how many events the gate is asked before depends on the machine's load:
about 4.5 times on an idle machine, 4.9 when it is asked before every event, the most it can be.
The 5.5 keeps room above that most, so load alone never fails the guard."""
import os
import shutil
import sys

import pytest

import testlib

sys.path.insert(0, os.path.join(testlib.ROOT, "bench"))
import bench  # noqa: E402

GUARDS = (("process_one", "floor", 3.5), ("process_batch", "limit", 5.5), ("held", "held_floor", 3.5),
          ("notify", "plain", 3.0))


@pytest.fixture(scope="module")
def counts():
    if shutil.which(bench.VALGRIND) is None:
        pytest.skip("valgrind is not installed")
    testlib.pg_prefix()     # the private prefix of the session's major, which the counts run on
    work = testlib.work_dir("instr-")
    # fewer runs than the bench's: the difference of two lengths is as exact, the runs shorter
    return bench.instructions(work, names={n for g in GUARDS for n in g[:2]}, runs=(40, 120), batch_runs=(4, 12))


@pytest.mark.parametrize("name,floor,multiple", GUARDS)
def test_instructions_per_event_stay_near_the_floor(counts, name, floor, multiple):
    ratio = counts[name] / counts[floor]
    print("%s: %.0f instructions, %.2f times %s (%.0f); at most %.1f times" % (
        name, counts[name], ratio, floor, counts[floor], multiple))
    assert ratio <= multiple, "%s costs %.0f instructions, %.1f times the %s statement's %.0f (at most %.1f)" % (
        name, counts[name], ratio, floor, counts[floor], multiple)
