"""Stores across processes, written once for ember and torch (LIB=ember|torch): RANK of WORLD processes (started
by the test, no launcher) share a TCPStore served by rank 0 on PORT and a FileStore in FILE. Each rank counts
itself in, publishes a key, waits for everyone's, and runs a compare_set race; OUT/store_rank<r>.json."""
import datetime
import json
import os

if os.environ.get("LIB", "ember") == "torch":
    import torch
else:
    import ember as torch
dist = torch.distributed
R, N = int(os.environ["RANK"]), int(os.environ["WORLD"])
got = {}
tcp = dist.TCPStore("127.0.0.1", int(os.environ["PORT"]), N, R == 0, datetime.timedelta(seconds=60))
stores = {"tcp": tcp, "file": dist.FileStore(os.environ["FILE"], N),
          "prefix": dist.PrefixStore("job", tcp.clone() if R % 2 else tcp)}
for name, s in stores.items():
    s.set_timeout(datetime.timedelta(seconds=60))
    s.add("joined", 1)
    s.set(f"rank{R}", f"hello from {R}")
    s.wait([f"rank{q}" for q in range(N)])
    values = [s.get(f"rank{q}").decode() for q in range(N)]
    winner = s.compare_set("first", "", str(R))   # one rank wins the race; every rank sees the winner
    s.add("done", 1)
    s.wait(["done"])
    while int(s.get("done")) < N:
        pass
    got[name] = {"values": values, "joined": int(s.get("joined")), "winner_is_a_rank": int(s.get("first")) in
                 range(N), "my_answer_is_the_winner": winner == s.get("first"),
                 "check": s.check([f"rank{q}" for q in range(N)])}
    s.add("left", 1)
    if R == 0:   # the master's server must outlive the others' last requests
        s.wait(["left"])
        while int(s.get("left")) < N:
            pass
with open(os.path.join(os.environ["OUT"], f"store_rank{R}.json"), "w") as f:
    json.dump(got, f)
