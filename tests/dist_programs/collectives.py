"""Every collective of torch.distributed once, on rank-dependent inputs; each rank writes what it got to
$OUT/rank<r>.json. Run under ember's launcher (LIB=ember) or torchrun (LIB=torch): tests/test_distributed.py
compares both with the single-process results. An op the backend refuses is recorded as its error."""
import datetime
import json
import os

if os.environ.get("LIB", "ember") == "ember":
    import ember as torch
else:
    import torch
dist = torch.distributed


def x_of(r, dtype=torch.float32):
    """Rank r's input: a (2, 3) tensor."""
    return (torch.arange(6, dtype=torch.float64).reshape(2, 3) * (r + 1) + r).to(dtype)


def plain(t):
    return t.to(torch.float64).tolist() if t.dtype in (torch.bfloat16, torch.float16) else t.tolist()


got = {}


def record(name, fn):
    try:
        got[name] = fn()
    except Exception as e:   # noqa: BLE001
        got[name] = {"error": type(e).__name__, "message": str(e)}


# before init: PyTorch's error
try:
    dist.all_reduce(torch.ones(1))
except Exception as e:   # noqa: BLE001
    got["before_init"] = [type(e).__name__, str(e)]

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
got["rank"], got["world"] = r, n
got["env"] = [int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), int(os.environ["WORLD_SIZE"]),
              int(os.environ["LOCAL_WORLD_SIZE"]), "MASTER_ADDR" in os.environ, "MASTER_PORT" in os.environ]
got["initialized"] = dist.is_initialized()
got["backend"] = str(dist.get_backend())


def all_reduce(op, dtype=torch.float32):
    def run():
        t = x_of(r, dtype)
        v = t._version
        dist.all_reduce(t, op=op)
        return [plain(t), t._version > v]
    return run


for name in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
    record(f"all_reduce_{name}", all_reduce(getattr(dist.ReduceOp, name)))
for dtype in ("float64", "int32", "int64", "bfloat16", "float16"):
    record(f"all_reduce_SUM_{dtype}", all_reduce(dist.ReduceOp.SUM, getattr(torch, dtype)))
for name in ("BAND", "BOR", "BXOR"):
    record(f"all_reduce_{name}_int64", all_reduce(getattr(dist.ReduceOp, name), torch.int64))


def bool_max():
    t = x_of(r) > 4 + r   # rank 0: elements above 4; rank 1: above 5 ...
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def complex_sum():
    t = torch.complex(x_of(r), -x_of(r))
    dist.all_reduce(t)
    return [t.real.tolist(), t.imag.tolist()]


record("all_reduce_MAX_bool", bool_max)
record("all_reduce_SUM_complex64", complex_sum)


def noncontiguous():
    base = x_of(r)
    t = base.t()
    dist.all_reduce(t)
    return plain(base)


record("all_reduce_noncontiguous", noncontiguous)


def reduce():
    t = x_of(r)
    dist.reduce(t, dst=n - 1)
    return plain(t) if r == n - 1 else None


record("reduce", reduce)


def broadcast():
    t = x_of(r)
    dist.broadcast(t, src=n - 1)
    return plain(t)


record("broadcast", broadcast)


def all_gather():
    out = [torch.zeros(2, 3) for _ in range(n)]
    dist.all_gather(out, x_of(r))
    return [plain(t) for t in out]


record("all_gather", all_gather)


def all_gather_into_tensor():
    out = torch.zeros(2 * n, 3)
    dist.all_gather_into_tensor(out, x_of(r))
    return plain(out)


record("all_gather_into_tensor", all_gather_into_tensor)


def gather():
    out = [torch.zeros(2, 3) for _ in range(n)] if r == 0 else None
    dist.gather(x_of(r), out, dst=0)
    return [plain(t) for t in out] if r == 0 else None


record("gather", gather)


def scatter():
    t = torch.zeros(2, 3)
    dist.scatter(t, [x_of(i) * 10 for i in range(n)] if r == 0 else None, src=0)
    return plain(t)


record("scatter", scatter)


def reduce_scatter():
    out = torch.zeros(2, 3)
    dist.reduce_scatter(out, [x_of(r) + i for i in range(n)])
    return plain(out)


record("reduce_scatter", reduce_scatter)


def reduce_scatter_tensor():
    out = torch.zeros(2, 3)
    dist.reduce_scatter_tensor(out, torch.cat([x_of(r) + i for i in range(n)]))
    return plain(out)


record("reduce_scatter_tensor", reduce_scatter_tensor)


def all_to_all():
    ins = [torch.full((i + 1,), float(10 * r + i)) for i in range(n)]
    outs = [torch.zeros(r + 1) for _ in range(n)]
    dist.all_to_all(outs, ins)
    return [plain(t) for t in outs]


record("all_to_all", all_to_all)


def all_to_all_single():
    inp = torch.arange(2 * n, dtype=torch.float32) + 100 * r
    out = torch.zeros(2 * n)
    dist.all_to_all_single(out, inp)
    return plain(out)


record("all_to_all_single", all_to_all_single)


def all_to_all_single_uneven():
    # rank r sends i + 1 rows to rank i, receives r + 1 rows from each
    inp = torch.cat([torch.full((i + 1, 2), float(10 * r + i)) for i in range(n)])
    out = torch.zeros(n * (r + 1), 2)
    dist.all_to_all_single(out, inp, output_split_sizes=[r + 1] * n, input_split_sizes=[i + 1 for i in range(n)])
    return plain(out)


record("all_to_all_single_uneven", all_to_all_single_uneven)


def ring():
    send = x_of(r)
    recv = torch.zeros(2, 3)
    works = [dist.isend(send, dst=(r + 1) % n), dist.irecv(recv, src=(r - 1) % n)]
    for w in works:
        w.wait()
    return [plain(recv), all(w.is_completed() for w in works)]


record("isend_irecv_ring", ring)


def send_recv():
    if r == 0:
        dist.send(x_of(7), dst=n - 1)
        return None
    if r == n - 1:
        t = torch.zeros(2, 3)
        src = dist.recv(t)
        return [plain(t), src]
    return None


record("send_recv_any_source", send_recv)


def async_all_reduce():
    t = x_of(r)
    w = dist.all_reduce(t, async_op=True)
    w.wait()
    return [plain(t), w.is_completed()]


record("async_all_reduce", async_all_reduce)


def objects():
    objs = [{"from": r}, [r] * 2] if r == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    every = [None] * n
    dist.all_gather_object(every, ("rank", r))
    gathered = [None] * n if r == n - 1 else None
    dist.gather_object({"r": r}, gathered, dst=n - 1)
    return [objs, [list(e) for e in every], gathered]


record("objects", objects)


def subgroup():
    g = dist.new_group([0, n - 1])
    if r in (0, n - 1):
        t = x_of(r)
        dist.all_reduce(t, group=g)
        return [plain(t), dist.get_rank(g), dist.get_world_size(g)]
    return [None, dist.get_rank(g), dist.get_world_size(g)]


record("subgroup", subgroup)


def autograd():
    """torch.distributed.nn.functional: outputs and the gradients they carry back across ranks."""
    import importlib
    F = importlib.import_module(torch.__name__ + ".distributed.nn.functional")
    x = (torch.arange(3, dtype=torch.float64) + r).requires_grad_()
    w = torch.arange(3, dtype=torch.float64) + 10 * r
    y = F.all_reduce(x * x)
    (y * w).sum().backward()
    g1, x.grad = x.grad.tolist(), None
    outs = F.all_gather(x * 2)
    sum((o * (i + 1)) * w for i, o in enumerate(outs)).sum().backward()
    g2 = x.grad.tolist()
    return [y.tolist(), g1, [o.tolist() for o in outs], g2]


record("nn_functional", autograd)


def checkpoint():
    """The usual pattern: rank 0 saves, every rank loads after a barrier."""
    path = os.path.join(os.environ["OUT"], "ckpt.pt")
    if r == 0:
        torch.save({"w": x_of(0), "step": 3}, path)
    dist.barrier()
    back = torch.load(path)
    return [plain(back["w"]), back["step"]]


record("checkpoint_rank0", checkpoint)


def barriers():
    dist.barrier()
    return True


record("barrier", barriers)
record("monitored_barrier", lambda: (dist.monitored_barrier(timeout=datetime.timedelta(seconds=30)), True)[1])

if os.environ.get("LIB", "ember") == "ember":   # mismatches across ranks (torch's gloo would hang or crash)
    record("mismatch_shape", lambda: dist.all_reduce(torch.ones(r + 1)))
    record("mismatch_dtype", lambda: dist.all_reduce(torch.ones(2, dtype=torch.float32 if r else torch.float64)))
    record("mismatch_collective", lambda: dist.broadcast(torch.ones(2), src=0) if r else dist.all_reduce(
        torch.ones(2)))
    record("after_errors", all_reduce(dist.ReduceOp.SUM))

dist.barrier()
dist.destroy_process_group()
got["initialized_after"] = dist.is_initialized()
with open(os.path.join(os.environ["OUT"], f"rank{r}.json"), "w") as f:
    json.dump(got, f)
