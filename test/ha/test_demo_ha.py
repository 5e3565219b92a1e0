"""`make demo-ha` stays working: run demo/ha-run as a newcomer would and check what it shows."""
import os
import subprocess

import testlib


def test_demo_ha_shows_adoption_and_leadership_moving(require_pglogical):
    env = dict(os.environ)
    env.pop("PGRELAY_PG_PREFIX", None)       # the demo makes its own prefix, as for a user
    env.pop("PGRELAY_TEST_WORK", None)
    r = subprocess.run(["bash", os.path.join(testlib.ROOT, "demo", "ha-run")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300, env=env, cwd=testlib.ROOT)
    assert r.returncode == 0, r.stdout[-4000:]
    out = r.stdout
    assert "n1's Processor: info node_adopted node=2 rows=3 by=1" in out
    assert "c-local is node-restricted: never adopted" in out
    assert "parcels run twice: 0" in out
    assert "n2's Processor: info leader_acquired mode=leader node=2" in out
    assert 'leader_yielded mode=leader node=2 reason="node 1 is the lowest live node"' in out
    assert "Stopped both servers and removed their directories." in out
