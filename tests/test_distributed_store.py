"""torch.distributed's stores (HashStore, FileStore, TCPStore, PrefixStore): every operation and error in one
process as torch's, and 3 processes sharing a TCPStore and a FileStore (tests/dist_programs/store.py) as the same
script does with torch. Stores need no MPI."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "dist_programs" / "store.py"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _probe(lib, dist) -> list:
    """Each step's result or error, for the three kinds of store."""
    import datetime
    import tempfile
    out = []
    def run(f):
        try:
            out.append(repr(f()))
        except Exception as e:   # noqa: BLE001
            out.append(f"{type(e).__name__}: {e}")
    path = tempfile.mktemp()
    for make in (dist.HashStore, lambda: dist.FileStore(path, 1),
                 lambda: dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5))):
        s = make()
        s.set_timeout(datetime.timedelta(seconds=0.3))
        out.append(type(s).__name__)
        for f in [lambda: (s.timeout, s.num_keys()), lambda: (s.set("a", "1"), s.set("b", b"\x00x")),
                  lambda: (s.get("a"), s.get("b"), s.num_keys()), lambda: (s.add("c", 5), s.add("c", 2), s.get("c")),
                  lambda: (s.compare_set("a", "1", "2"), s.get("a"), s.compare_set("a", "9", "3"), s.get("a"),
                           s.compare_set("z", "", "new"), s.compare_set("y", "x", "new2")),
                  lambda: (s.check(["a"]), s.check(["a", "nope"]), s.delete_key("a"), s.delete_key("a"),
                           s.num_keys()),
                  lambda: s.get("nope"), lambda: s.wait(["nope"], datetime.timedelta(seconds=0.2)),
                  lambda: (s.append("k", "ab"), s.append("k", b"cd"), s.get("k")),
                  lambda: (s.multi_get(["k", "c"]), s.multi_set(["m1", "m2"], ["x", b"y"]), s.get("m2")),
                  lambda: (s.queue_push("q", "a"), s.queue_push("q", "b"), s.queue_len("q"), s.queue_pop("q"),
                           s.queue_pop("q", block=False), s.num_keys()),
                  lambda: s.queue_pop("q", block=False),
                  lambda: (dist.PrefixStore("pre", s).set("q", "1"), s.get("pre/q"),
                           dist.PrefixStore("pre", s).num_keys(), dist.PrefixStore("pre", s).get("q"))]:
            run(f)
    if os.path.exists(path):   # (torch's FileStore removes its file when its last user goes)
        os.unlink(path)
    return out


def test_stores_as_torch():
    import ember
    import torch
    got, want = _probe(ember, ember.distributed), _probe(torch, torch.distributed)
    assert got == want
    with pytest.raises(ValueError, match="stoll"):   # (torch's TCPStore server drops the connection here)
        s = ember.distributed.HashStore()
        s.set("b", "x")
        s.add("b", 1)


def test_tcp_store_connect_errors():
    import datetime

    import ember
    dist = ember.distributed
    master = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5))
    with pytest.raises(dist.DistNetworkError, match="failed to listen"):
        dist.TCPStore("127.0.0.1", master.port, 1, True, datetime.timedelta(seconds=1))
    with pytest.raises(dist.DistNetworkError, match=r"timed out after 300ms while trying to connect to \(127"):
        dist.TCPStore("127.0.0.1", _port(), is_master=False, timeout=datetime.timedelta(seconds=0.3))


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    base = tmp_path_factory.mktemp("store")
    out = {}
    for lib in ("ember", "torch"):
        d = base / lib
        d.mkdir()
        port = _port()
        env = dict(os.environ, PYTHONPATH=str(ROOT), LIB=lib, WORLD="3", PORT=str(port), FILE=str(d / "store"),
                   OUT=str(d))
        procs = [subprocess.Popen([sys.executable, str(SCRIPT)], env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for r in range(3)]
        for r, p in enumerate(procs):
            try:
                text, _ = p.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                pytest.fail(f"{lib} rank {r} hung")
            assert p.returncode == 0, f"{lib} rank {r}:\n{text[-3000:]}"
        out[lib] = [json.loads((d / f"store_rank{r}.json").read_text()) for r in range(3)]
    return out


def test_stores_across_processes_as_torch(shared):
    assert shared["ember"] == shared["torch"]
    for r, got in enumerate(shared["ember"]):
        for name in ("tcp", "file", "prefix"):
            assert got[name] == {"values": [f"hello from {q}" for q in range(3)], "joined": 3,
                                 "winner_is_a_rank": True, "my_answer_is_the_winner": True, "check": True}
