"""DistributedDataParallel on rank-sharded batches, written once for ember and torch (LIB=ember|torch).

Each case trains a model for a few steps with DDP, every rank on its share of the same global batches, and also
trains the same model in this one process on the whole batches (no DDP): each rank writes both runs' final
parameters, and what the error cases raise, to $OUT/rank<r>.json. CASES (comma separated) picks cases.
tests/test_ddp.py compares DDP with the single-process run and ember with torch's gloo.
"""
import datetime
import json
import os
import warnings

if os.environ.get("LIB", "ember") == "ember":
    import ember as torch
else:
    import torch
dist = torch.distributed
nn = torch.nn
DDP = nn.parallel.DistributedDataParallel
warnings.simplefilter("ignore")

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
R, N = dist.get_rank(), dist.get_world_size()
STEPS = int(os.environ.get("STEPS", "20"))
got = {}


def params(m):
    return {k: v.detach().to(torch.float64).reshape(-1).tolist() for k, v in m.state_dict().items()}


def grads(m):
    return {k: (None if p.grad is None else p.grad.to(torch.float64).reshape(-1).tolist())
            for k, p in m.named_parameters()}


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 8, batch_first=True)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class Branchy(nn.Module):
    """``a`` always; ``b`` when asked; ``c`` never."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.c = nn.Linear(4, 4)

    def forward(self, x, use_b=True):
        h = self.a(x)
        return self.b(h) if use_b else h


def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 3))


def data(kind, steps, batch):
    """The global batches, the same on every rank (seeded)."""
    g = torch.Generator().manual_seed(1234)
    if kind in ("mlp", "bn_mlp"):
        xs = [torch.randn(batch, 6, generator=g) for _ in range(steps)]
        ys = [torch.randn(batch, 3, generator=g) for _ in range(steps)]
    elif kind == "cnn":
        xs = [torch.randn(batch, 1, 6, 6, generator=g) for _ in range(steps)]
        ys = [torch.randint(0, 3, (batch,), generator=g) for _ in range(steps)]
    else:
        xs = [torch.randn(batch, 5, 3, generator=g) for _ in range(steps)]
        ys = [torch.randn(batch, 1, generator=g) for _ in range(steps)]
    return xs, ys


def bn_mlp():
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))


MODELS = {"mlp": mlp, "cnn": cnn, "lstm": LSTMNet, "bn_mlp": bn_mlp}
LOSSES = {"mlp": nn.functional.mse_loss, "cnn": nn.functional.cross_entropy, "lstm": nn.functional.mse_loss,
          "bn_mlp": nn.functional.mse_loss}


def optimizer(name, ps):
    return torch.optim.SGD(ps, lr=0.1, momentum=0.9) if name == "sgd" else torch.optim.Adam(ps, lr=0.01)


def train(kind, opt_name, accumulate=1, sync_bn=False, hook=None, **ddp_kwargs):
    """DDP training (each rank on its shard; ``accumulate`` micro-batches per step, all but the last under
    no_sync; BatchNorm made SyncBatchNorm with ``sync_bn``; ``hook`` a communication hook) and the same training in
    one process on whole batches; both runs' final parameters and buffers."""
    batch = 8 * accumulate
    xs, ys = data(kind, STEPS, batch)
    loss_fn = LOSSES[kind]
    torch.manual_seed(R + 7)                   # different on every rank: DDP's broadcast makes them rank 0's
    model = MODELS[kind]()
    torch.manual_seed(7)
    single = MODELS[kind]()
    if sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ddp = DDP(model, **ddp_kwargs)
    if callable(hook):
        ddp.register_comm_hook(None, hook)
    elif hook == "builtin_fp16":
        ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    elif hook is not None:   # a DDPCommHookType's name
        package = hooks().__name__.rsplit(".", 1)[0]
        import importlib
        named = importlib.import_module(package)
        named.register_ddp_comm_hook(named.DDPCommHookType[hook], ddp)
    opt, opt1 = optimizer(opt_name, ddp.parameters()), optimizer(opt_name, single.parameters())
    per = batch // (N * accumulate)
    losses = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        for k in range(accumulate):
            lo = (k * N + R) * per
            sl = slice(lo, lo + per)
            if k < accumulate - 1:
                with ddp.no_sync():
                    (loss_fn(ddp(x[sl]), y[sl]) / accumulate).backward()
            else:
                loss = loss_fn(ddp(x[sl]), y[sl]) / accumulate
                loss.backward()
        losses.append(loss.item())
        opt.step()
        opt1.zero_grad()
        loss_fn(single(x), y).backward()
        opt1.step()
    return {"ddp": params(ddp.module), "single": params(single), "keys": list(ddp.state_dict())[:2],
            "losses": losses}


def unused_rank_dependent():
    """find_unused_parameters: ``b`` used on rank 0 only on even steps, ``c`` never; grads after each backward."""
    torch.manual_seed(3)
    m = Branchy()
    ddp = DDP(m, find_unused_parameters=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(5)
    out = []
    for step in range(4):
        x = torch.randn(2 * N, 4, generator=g)[2 * R:2 * R + 2]
        opt.zero_grad()
        ddp(x, use_b=(R == 0 and step % 2 == 0)).pow(2).mean().backward()
        out.append(grads(m))
        opt.step()
    return [out, params(m)]


def unused_error():
    """An unused parameter without find_unused_parameters: PyTorch's error at the next forward."""
    torch.manual_seed(3)
    ddp = DDP(Branchy())
    x = torch.ones(2, 4)
    ddp(x).sum().backward()
    try:
        ddp(x)
    except Exception as e:   # noqa: BLE001
        return [type(e).__name__, str(e)]
    return "no error"


def constructor_errors():
    out = []
    for make in (lambda: DDP(nn.ReLU()), lambda: DDP(nn.Linear(2, 2), device_ids=[0, 1])):
        try:
            make()
            out.append("no error")
        except Exception as e:   # noqa: BLE001
            out.append([type(e).__name__, str(e)])
    return out


def buffers():
    """BatchNorm's running statistics: rank 0's broadcast before every forward (broadcast_buffers)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    ddp = DDP(m)
    g = torch.Generator().manual_seed(9)
    for _ in range(3):
        x = torch.randn(2 * N, 3, generator=g)[2 * R:2 * R + 2] * (R + 1)
        ddp(x).sum().backward()
    return [m[1].running_mean.tolist(), m[1].running_var.tolist(), int(m[1].num_batches_tracked)]


def join(extra_on_rank0, generic=False, bn=False, hook=None, zero=False, unused=False, small_buckets=False,
         **kwargs):
    """``with ddp.join(**kwargs):`` (``generic``: ``with Join([ddp], **kwargs)``; ``zero``: with a
    ZeroRedundancyOptimizer, ``Join([ddp, zero])``) around the loop; rank 0 gets ``extra_on_rank0`` more batches
    than the others, rank N-1 one fewer when ``extra_on_rank0 > 1``; ``unused``: find_unused_parameters, a layer
    used on odd steps only."""
    torch.manual_seed(4)
    m = (nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2)) if bn else Branchy() if unused
         else nn.Linear(4, 2))
    ddp = DDP(m, find_unused_parameters=unused, bucket_cap_mb=0.00005 if small_buckets else None)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    if zero:
        import importlib   # (torch.distributed.optim is not loaded by ``import torch``)
        zero_module = importlib.import_module(torch.__name__ + ".distributed.optim")
        opt = zero_module.ZeroRedundancyOptimizer(ddp.parameters(), torch.optim.SGD, lr=0.1, momentum=0.9)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(6)
    xs = [torch.randn(2 * N, 4, generator=g) for _ in range(3 + extra_on_rank0)]
    mine = 3 + (extra_on_rank0 if R == 0 else 0) - (1 if extra_on_rank0 > 1 and R == N - 1 else 0)
    context = (torch.distributed.algorithms.Join([ddp, opt] if zero else [ddp], **kwargs) if generic or zero
               else ddp.join(**kwargs))
    try:
        with context:
            for step, x in enumerate(xs[:mine]):
                opt.zero_grad()
                out = ddp(x[2 * R:2 * R + 2], use_b=step % 2 == 1) if unused else ddp(x[2 * R:2 * R + 2])
                out.pow(2).sum().backward()
                opt.step()
    except RuntimeError as e:
        return ["RuntimeError", str(e)]
    return params(m)


def hooks():
    import importlib   # (``torch`` here may be ember: import from whichever it is)
    return importlib.import_module(torch.__name__ + ".distributed.algorithms.ddp_comm_hooks.default_hooks")


def custom_hook_seen():
    """A hook of the user's own (PyTorch's documented pattern): a Future made by hand for the first bucket, an
    all_reduce future with a ``then`` for the others; what it saw of each bucket in 3 steps (with no_sync)."""
    seen = []

    def hook(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        seen.append([state, bucket.index(), bucket.is_last(), bucket.buffer().numel(), str(bucket.buffer().dtype),
                     [list(g.shape) for g in bucket.gradients()], [list(p.shape) for p in bucket.parameters()],
                     float(bucket.buffer().abs().sum())])
        if bucket.index() == 0:   # this bucket: every rank keeps its own gradients, doubled
            fut = torch.futures.Future()
            fut.set_result(bucket.buffer() * 2)
            return fut
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0] / N)
    torch.manual_seed(11)
    m = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
    ddp = DDP(m, bucket_cap_mb=0.01)
    ddp.register_comm_hook("state", hook)
    g = torch.Generator().manual_seed(12)
    for step in range(3):
        x = torch.randn(2 * N, 4, generator=g)[2 * R:2 * R + 2]
        if step == 1:
            with ddp.no_sync():
                ddp(x).sum().backward()
        ddp(x).pow(2).sum().backward()
    return [seen, grads(m)]


def hook_errors():
    out = []

    def plain(state, bucket):
        return bucket
    def bad_bucket(state, bucket: int):
        pass
    def bad_return(state, bucket) -> int:
        pass
    def no_bucket(state, b):
        pass
    for hook in (3, bad_bucket, bad_return, no_bucket, hooks().allreduce_hook):
        ddp = DDP(nn.Linear(2, 2))
        try:
            ddp.register_comm_hook(None, hook)
            ddp.register_comm_hook(None, hook)
            out.append("no error")
        except Exception as e:   # noqa: BLE001
            out.append([type(e).__name__, str(e)])
    return out


CASES = {
    "mlp_sgd": lambda: train("mlp", "sgd"),
    "mlp_sgd_small_buckets": lambda: train("mlp", "sgd", bucket_cap_mb=0.0001),
    "cnn_adam": lambda: train("cnn", "adam"),
    "lstm_adam": lambda: train("lstm", "adam", gradient_as_bucket_view=True),
    "mlp_no_sync": lambda: train("mlp", "adam", accumulate=2),
    "mlp_static_graph": lambda: train("mlp", "sgd", static_graph=True),
    "sync_batchnorm": lambda: train("bn_mlp", "sgd", sync_bn=True),
    "unused_rank_dependent": unused_rank_dependent,
    "unused_error": unused_error,
    "constructor_errors": constructor_errors,
    "buffers": buffers,
    "join_even": lambda: join(0),
    "join_uneven": lambda: join(1),
    "join_uneven_bn": lambda: join(3, bn=True),
    "join_uneven_active_divisor": lambda: join(2, bn=True, small_buckets=True, divide_by_initial_world_size=False),
    "join_uneven_generic_hook": lambda: join(2, generic=True, hook=hooks().allreduce_hook),
    "join_throw": lambda: join(1, throw_on_early_termination=True),
    "join_uneven_zero": lambda: join(2, bn=True, zero=True),
    "join_uneven_unused": lambda: join(3, unused=True),
    # communication hooks, uneven inputs (not in the default run: see ON_REQUEST)
    "hook_allreduce": lambda: train("mlp", "sgd", hook=hooks().allreduce_hook),
    "hook_allreduce_no_sync": lambda: train("mlp", "adam", accumulate=2, hook=hooks().allreduce_hook),
    "hook_fp16": lambda: train("cnn", "adam", hook=hooks().fp16_compress_hook),
    "hook_fp16_wrapper": lambda: train("mlp", "sgd", hook=hooks().fp16_compress_wrapper(hooks().allreduce_hook)),
    "hook_bf16": lambda: train("mlp", "sgd", hook=hooks().bf16_compress_hook),
    "hook_builtin_fp16": lambda: train("mlp", "sgd", hook="builtin_fp16"),
    "hook_by_name_noop": lambda: train("mlp", "sgd", hook="NOOP"),
    "hook_custom": custom_hook_seen,
    "hook_errors": hook_errors,
}
chosen = os.environ.get("CASES")
ON_REQUEST = ("hook_", "join_uneven_", "join_throw")   # tests/test_ddp_comm_hooks.py, tests/test_ddp_join.py
for name in (chosen.split(",") if chosen else [c for c in CASES if not c.startswith(ON_REQUEST)]):
    try:
        got[name] = CASES[name]()
    except Exception as e:   # noqa: BLE001
        got[name] = {"error": type(e).__name__, "message": str(e)}

with open(os.path.join(os.environ.get("OUT", "."), f"rank{R}.json"), "w") as f:
    json.dump(got, f)
dist.destroy_process_group()
