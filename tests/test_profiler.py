"""torch.profiler and torch.autograd.profiler against PyTorch 2.13 on the same programs: the names recorded (ops as
``aten::*``, backward nodes as the engine's ``autograd::engine::evaluate_function: ...``), the table's layout, the
Chrome trace, schedules and their callbacks, record_function, shapes, memory, misuse; and that nothing is left
hooked on the hot path once a profiler stops."""
from __future__ import annotations

import json
import re
import warnings

import pytest
import torch

import ember
from ember.autograd import _primitive, _profiling, engine


def _mlp_program(lib, **kw):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    x, y = lib.randn(3, 4), lib.randn(3, 2)
    with lib.profiler.profile(**kw) as p:
        with lib.profiler.record_function("fwd"):
            loss = lib.nn.functional.mse_loss(m(x), y)
        loss.backward()
    return p


@pytest.fixture(scope="module")
def both():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (_mlp_program(torch, record_shapes=True, profile_memory=True),
                _mlp_program(ember, record_shapes=True, profile_memory=True))


# What ember does not record that PyTorch does (documented in README "Profiling"): the kernels behind PyTorch's
# composites (aten::transpose, aten::as_strided, aten::expand, aten::copy_, aten::resolve_conj, aten::clamp_min,
# aten::empty, aten::resize_, aten::sum inside mean, aten::fill_, aten::to...), the ops a backward node calls inside
# (ember's nodes run their rules on raw arrays: aten::mm inside AddmmBackward0), aten::ones_like for the initial
# gradient, and AccumulateGrad's aten::detach.
def test_recorded_names_are_torchs(both):
    tp, ep = both
    tnames = {e.name for e in tp.events()}
    enames = {e.name for e in ep.events()}
    assert enames <= tnames, enames - tnames
    backward = {n for n in tnames if n.startswith("autograd::") or n.endswith("Backward0") or "AccumulateGrad" in n}
    assert backward <= enames   # every backward node, under PyTorch's name
    for n in ("fwd", "aten::linear", "aten::t", "aten::addmm", "aten::relu", "aten::mse_loss"):
        assert n in enames


def test_counts_and_nesting_match(both):
    tp, ep = both

    def counts(p, names):
        c = {}
        for e in p.key_averages():
            if e.key in names:
                c[e.key] = e.count
        return c

    names = {"aten::linear", "aten::addmm", "aten::relu", "aten::mse_loss", "AddmmBackward0", "TBackward0",
             "torch::autograd::AccumulateGrad", "autograd::engine::evaluate_function: AddmmBackward0"}
    assert counts(tp, names) == counts(ep, names)

    def parents(p):
        return {(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in p.events()
                if e.name in names | {"aten::t"}}
    assert parents(ep) <= parents(tp)
    assert ("aten::addmm", "aten::linear") in parents(ep)
    assert ("AddmmBackward0", "autograd::engine::evaluate_function: AddmmBackward0") in parents(ep)


def _layout(table: str) -> list:
    """The table's lines as their cells: where each ends (the columns) and its text, numbers blanked."""
    return [[(m.end(), re.sub(r"-?\d+(\.\d+)?(%|us|ms|s| B| KB| MB)?", "#", m.group()))
             for m in re.finditer(r"\S+(?: \S+)*", line)] for line in table.splitlines()]


def test_table_layout(both):
    tp, ep = both
    keep = {"fwd", "aten::linear", "aten::addmm", "aten::relu", "aten::mse_loss",
            "autograd::engine::evaluate_function: AddmmBackward0", "AddmmBackward0"}
    for kw in ({}, {"group_by_input_shape": True}):
        tt = [e for e in tp.key_averages(**kw) if e.key in keep]
        et = [e for e in ep.key_averages(**kw) if e.key in keep]
        # the same rows in the same order (sorted by name), then the whole table
        tt.sort(key=lambda e: (e.key, str(e.input_shapes)))
        et.sort(key=lambda e: (e.key, str(e.input_shapes)))
        from torch.autograd.profiler_util import _build_table as torch_table

        from ember.autograd.profiler_util import _build_table as ember_table
        if kw:   # input shapes differ where ember's ops take other arguments: the other columns are compared
            for e in tt + et:
                e.input_shapes = [[1]]
        for table_kw in ({}, {"row_limit": 3}, {"header": "MLP", "top_level_events_only": True},
                         {"time_unit": "ms"}, {"sort_by": "count"}):
            a = torch_table(tt, profile_memory=True, **table_kw)
            b = ember_table(et, profile_memory=True, **table_kw)
            if "sort_by" not in table_kw:
                assert _layout(a)[:-1] == _layout(b)[:-1]   # (the footer's time: its own test below)
            else:
                assert [ln.split()[0] for ln in a.splitlines()[3:-2]] == [ln.split()[0] for ln in b.splitlines()[3:-2]]
    # the whole table of each program: the same header lines and footer
    a, b = tp.key_averages().table(sort_by="cpu_time_total"), ep.key_averages().table(sort_by="cpu_time_total")
    assert a.splitlines()[:3] == b.splitlines()[:3]
    assert b.splitlines()[-1].startswith("Self CPU time total: ")
    assert str(ep.key_averages()) == ep.key_averages().table()


def test_chrome_trace(tmp_path, both):
    _, ep = both
    path = tmp_path / "trace.json"
    ep.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert trace["schemaVersion"] == 1 and trace["displayTimeUnit"] == "ms"
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "Trace"]
    assert {e["name"] for e in ops} == {e.name for e in ep.events() if e.name != "[memory]"}
    # Kineto's extras: the profiler's own span, the option keys that are on, forward -> backward flow arrows
    span = [e for e in trace["traceEvents"] if e.get("cat") == "Trace"]
    assert [(e["name"], e["pid"], e["tid"]) for e in span] == [("PyTorch Profiler (0)", "Spans", "PyTorch Profiler")]
    flows = [e for e in trace["traceEvents"] if e.get("cat") == "fwdbwd"]
    starts, ends = {e["id"] for e in flows if e["ph"] == "s"}, {e["id"] for e in flows if e["ph"] == "f"}
    assert starts and starts == ends and len(flows) == 2 * len(starts)
    for e in ops:
        assert e["dur"] >= 0 and isinstance(e["ts"], float) and e["pid"] and e["tid"] == 1
        assert e["cat"] == ("user_annotation" if e["name"] == "fwd" else "cpu_op")
    fwd = next(e for e in ops if e["name"] == "fwd")
    inside = [e for e in ops if e["name"] == "aten::linear"]
    assert len(inside) == 2 and all(fwd["ts"] <= e["ts"] and e["ts"] + e["dur"] <= fwd["ts"] + fwd["dur"] + 1e-3
                                    for e in inside)
    assert [e for e in ops if e["name"] == "aten::addmm"][0]["args"]["Input Dims"][:3] == [[8], [3, 4], [4, 8]]
    assert any(e["ph"] == "i" and e["name"] == "[memory]" for e in trace["traceEvents"])
    # EventList's own (legacy) form: a JSON list
    ep.events().export_chrome_trace(str(path))
    legacy = json.loads(path.read_text())
    assert all(e["ph"] == "X" for e in legacy) and len(legacy) == len([e for e in ep.events() if e.trace_name])


def test_record_shapes(both):
    tp, ep = both
    shapes, tshapes = {}, {}   # the first event of each name
    for e in ep.events():
        shapes.setdefault(e.name, e.input_shapes)
    for e in tp.events():
        tshapes.setdefault(e.name, e.input_shapes)
    for name in ("aten::linear", "aten::relu", "aten::t"):
        assert shapes[name] == tshapes[name]
    assert shapes["AddmmBackward0"] == tshapes["AddmmBackward0"] == [[3, 2]]   # its incoming gradient


def test_profile_memory(both):
    _, ep = both
    ev = {}
    for e in ep.events():
        ev.setdefault(e.name, e)
    assert ev["aten::relu"].cpu_memory_usage == 3 * 8 * 4   # its float32 output
    assert ev["aten::t"].cpu_memory_usage == 0              # a view
    assert ev["ReluBackward0"].cpu_memory_usage == 3 * 8 * 4
    avg = {e.key: e for e in ep.key_averages()}
    assert avg["aten::addmm"].cpu_memory_usage == 3 * 8 * 4 + 3 * 2 * 4
    assert "Self CPU Mem" in ep.key_averages().table()


def test_record_function_decorator_and_nesting():
    @ember.profiler.record_function("outer")
    def f(x):
        with ember.autograd.profiler.record_function("inner"):
            return x * 2

    f(ember.ones(2))   # outside a profiler: nothing happens
    with ember.autograd.profiler.profile() as p:
        f(ember.ones(2))
    ev = {e.name: e for e in p.function_events}
    assert ev["inner"].cpu_parent is ev["outer"] and ev["aten::mul"].cpu_parent is ev["inner"]
    assert ev["outer"].is_user_annotation and ev["outer"].cpu_time_total >= ev["inner"].cpu_time_total
    total = p.total_average()
    assert total.key == "Total" and total.count == 10   # as PyTorch's: outer, inner, ones > (empty, fill_),
    # mul > to > _to_copy > (empty_strided, copy_) (the Python scalar 2, wrapped as int64, converted to float32)
    assert abs(p.self_cpu_time_total - sum(e.self_cpu_time_total for e in p.function_events)) < 1e-6


def _schedule_run(lib, n=10, **sched):
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(schedule=lib.profiler.schedule(**sched),
                                  on_trace_ready=lambda p: calls.append((p.step_num, sorted(
                                      {e.name for e in p.events() if e.name.startswith("ProfilerStep")})))) as p:
            for _ in range(n):
                lib.ones(2) + 1
                p.step()
    return calls


@pytest.mark.parametrize("sched", [dict(wait=1, warmup=1, active=2, repeat=2), dict(wait=0, warmup=1, active=1),
                                   dict(wait=2, warmup=1, active=3, skip_first=1)])
def test_schedule_and_on_trace_ready(sched):
    assert _schedule_run(ember, **sched) == _schedule_run(torch, **sched)
    s, t = ember.profiler.schedule(**sched), torch.profiler.schedule(**sched)
    assert [s(i).name for i in range(12)] == [t(i).name for i in range(12)]


def test_tensorboard_trace_handler(tmp_path):
    with ember.profiler.profile(schedule=ember.profiler.schedule(wait=0, warmup=1, active=1),
                                on_trace_ready=ember.profiler.tensorboard_trace_handler(str(tmp_path), "w0")) as p:
        for _ in range(4):
            ember.ones(2) * 3
            p.step()
    files = sorted(f.name for f in tmp_path.iterdir())
    assert len(files) == 2 and all(re.fullmatch(r"w0\.\d+\.pt\.trace\.json", f) for f in files)
    json.loads((tmp_path / files[0]).read_text())


def test_activities_and_enums():
    assert ember.profiler.supported_activities() == {ember.profiler.ProfilerActivity.CPU}
    assert ember.profiler.kineto_available() is True
    assert [a.name for a in ember.profiler.ProfilerActivity] == ["CPU", "XPU", "CUDA", "HPU", "MTIA", "PrivateUse1"]
    assert {a.name: a.value for a in ember.profiler.ProfilerActivity} == \
        {k: int(v.value) for k, v in torch.profiler.ProfilerActivity.__members__.items()}
    assert list(ember.profiler.ProfilerAction.__members__) == list(torch.profiler.ProfilerAction.__members__)
    assert {k: int(v) for k, v in ember.profiler.DeviceType.__members__.items()} == \
        {k: int(v) for k, v in torch.profiler.DeviceType.__members__.items()}
    with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
        with ember.profiler.profile(activities=[ember.profiler.ProfilerActivity.CPU,
                                                ember.profiler.ProfilerActivity.CUDA]) as p:
            ember.ones(2) + 1
    assert "aten::add" in {e.name for e in p.events()}
    with pytest.warns(UserWarning), pytest.raises(AssertionError, match="No activities specified for the profiler"):
        with ember.profiler.profile(activities=[ember.profiler.ProfilerActivity.CUDA]):
            pass
    with ember.autograd.profiler.emit_nvtx(), ember.autograd.profiler.emit_itt():
        ember.ones(2) + 1


def _raises(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


def test_misuse_as_torch():
    for lib in (torch, ember):
        p = lib.profiler.profile()
        got = [_raises(p.key_averages), _raises(p.stop), _raises(p.events),
               _raises(lambda: lib.profiler.schedule(wait=-1, warmup=0, active=1)),
               _raises(lambda: lib.profiler.schedule(wait=0, warmup=1, active=0))]
        with lib.profiler.profile() as q:   # nothing recorded: empty results, no error
            pass
        got += [q.key_averages().table(), list(q.events())]
        a = lib.autograd.profiler.profile()
        a.__enter__()
        got.append(_raises(a.__enter__))
        a.__exit__(None, None, None)
        if lib is torch:
            want = got
        else:
            assert got == want


def test_factories_recorded_as_torch():
    """torch.ones records aten::ones > aten::empty, aten::fill_ (PyTorch's composite); rand_like records no
    aten::rand inside (ember's rand_like runs rand)."""
    x = ember.ones(2, 3)
    cases = {lambda: ember.ones(3): "aten::ones(aten::empty,aten::fill_)",
             lambda: ember.zeros_like(x): "aten::zeros_like(aten::empty_like(aten::empty_strided),aten::zero_)",
             lambda: ember.rand_like(x): "aten::rand_like(aten::empty_like(aten::empty_strided),aten::uniform_)",
             lambda: ember.arange(5): "aten::arange(aten::empty,aten::arange(aten::resize_))",
             lambda: ember.randn(3): "aten::randn(aten::empty,aten::normal_)"}

    def tree(e):
        kids = ",".join(tree(c) for c in e.cpu_children)
        return e.name + (f"({kids})" if kids else "")
    for f, want in cases.items():
        with ember.profiler.profile() as p:
            f()
        assert [tree(e) for e in p.events() if e.cpu_parent is None] == [want]
    y = (ember.ones(2, requires_grad=True) * 2.0).sum()
    with ember.profiler.profile() as p:   # backward()'s implicit gradient: torch.ones_like(y)
        y.backward()
    assert tree(p.events()[0]) == "aten::ones_like(aten::empty_like(aten::empty_strided),aten::fill_)"


def test_wrapped_scalar_conversion_as_torch():
    """A Python scalar whose wrapped dtype is not the op's: PyTorch's op records its conversion inside itself;
    an in-place op records no out-of-place op inside; Tensor.gt records one aten::gt."""
    x, xd, xi = ember.ones(3), ember.ones(3, dtype=ember.float64), ember.ones(3, dtype=ember.int64)
    to = "aten::to(aten::_to_copy(aten::empty_strided,aten::copy_))"
    cases = {lambda: x * 2: [f"aten::mul({to})"], lambda: x + 1.5: [f"aten::add({to})"],
             lambda: x > 0: [f"aten::gt({to})"], lambda: xd * 2.0: ["aten::mul"], lambda: xi * 2: ["aten::mul"],
             lambda: x * x: ["aten::mul"], lambda: xd.mul_(2.0): ["aten::mul_"], lambda: x.mul_(2): [f"aten::mul_({to})"]}

    def tree(e):
        kids = ",".join(tree(c) for c in e.cpu_children)
        return e.name + (f"({kids})" if kids else "")
    for f, want in cases.items():
        with ember.profiler.profile() as p:
            f()
        assert [tree(e) for e in p.events() if e.cpu_parent is None] == want


def test_nested_profilers():
    with ember.profiler.profile() as outer:
        ember.ones(2) + 1
        with ember.profiler.profile() as inner:
            ember.ones(2) * 2
    assert {e.name for e in inner.events()} == {"aten::ones", "aten::empty", "aten::fill_", "aten::mul", "aten::to",
                                                "aten::_to_copy", "aten::empty_strided", "aten::copy_"}
    assert {"aten::add", "aten::mul"} <= {e.name for e in outer.events()}
    assert _profiling.NODE_HOOK is None


def test_export_stacks(tmp_path):
    with ember.profiler.profile(with_stack=True) as p:
        ember.ones(2, requires_grad=True).exp().sum()
    ev = next(e for e in p.events() if e.name == "aten::exp")
    assert ev.stack and "test_profiler.py" in ev.stack[0] and "test_export_stacks" in ev.stack[0]
    path = tmp_path / "stacks.txt"
    p.export_stacks(str(path))
    lines = path.read_text().splitlines()
    assert lines and all(re.fullmatch(r"\S+ \d+", ln) for ln in lines)
    with pytest.raises(ValueError, match="metric should be one of"):
        p.export_stacks(str(path), "cpu_time")


def test_nothing_left_on_the_hot_path():
    """No profiler: apply, the fast paths and the public ops run their own code, the engine's hook is off."""
    code = _primitive.apply.__code__
    fast = [f.__code__ for f in _primitive.FAST_PATHS]
    linear = ember.nn.functional.linear.__code__
    with ember.profiler.profile():
        assert _primitive.apply.__code__ is not code and _profiling.NODE_HOOK is not None
        assert ember.nn.functional.linear.__code__ is not linear
    assert _primitive.apply.__code__ is code and _profiling.NODE_HOOK is None
    assert [f.__code__ for f in _primitive.FAST_PATHS] == fast and ember.nn.functional.linear.__code__ is linear
    assert engine._profiling.NODE_HOOK is None and not _profiling._saved


def test_results_unchanged_while_profiling():
    """An op's values and gradients are the same with the profiler recording (the fast paths take their general
    case, which gives the same result) and errors keep their text."""
    x = ember.linspace(-2, 2, 7, requires_grad=True)

    def run():
        y = (x.exp() * 3 + x.sin()).tanh().sum()
        (g,) = ember.autograd.grad(y, x)
        return y.item(), g.tolist()
    want = run()
    with ember.profiler.profile():
        got = run()
        err = _raises(lambda: ember.mm(ember.ones(2, 3), ember.ones(2, 3)))
    assert got == want
    assert err == _raises(lambda: ember.mm(ember.ones(2, 3), ember.ones(2, 3)))


def _flops_program(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(64, 32), lib.nn.ReLU(), lib.nn.Linear(32, 10))
    conv = lib.nn.Conv2d(3, 4, 3)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    x, img = lib.randn(16, 64), lib.randn(2, 3, 8, 8)
    a, b = lib.randn(3, 4), lib.randn(3, 4)
    with lib.profiler.profile(with_flops=True) as p:
        m(x).sum().backward()
        opt.step()
        opt.zero_grad()
        conv(img)
        a * b
        a + b
        lib.bmm(lib.randn(2, 3, 4), lib.randn(2, 4, 5))
    return p


def test_flops_and_optimizer_regions():
    """with_flops: PyTorch's estimates (matrix products, conv2d, add, mul) and its "Total FLOPs" column; an
    optimizer's step and zero_grad as PyTorch's regions. (PyTorch also counts the aten::mm inside backward nodes,
    which ember does not record.)"""
    tp, ep = _flops_program(torch), _flops_program(ember)
    forward = sorted((e.name, e.flops) for e in ep.events() if e.flops)
    assert forward == sorted((e.name, e.flops) for e in tp.events() if e.flops and e.cpu_parent is None
                             or e.flops and not e.cpu_parent.name.endswith("Backward0"))
    assert {"Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad"} <= {e.name for e in ep.events()}
    assert ep.key_averages().table().splitlines()[1] == tp.key_averages().table().splitlines()[1]


def test_backward_events_get_the_forward_stack():
    x = ember.ones(3, requires_grad=True)
    with ember.profiler.profile(with_stack=True) as p:
        y = x.exp()   # the line the node's events point to
        y.sum().backward()
    node = next(e for e in p.events() if e.name == "ExpBackward0")
    op = next(e for e in p.events() if e.name == "aten::exp")
    assert node.sequence_nr == op.sequence_nr >= 0 and node.stack == op.stack
    assert "test_backward_events_get_the_forward_stack" in op.stack[0]


def test_with_autocast_both_ways():
    """autocast swaps the code of the ops it casts, as the profiler does: either may start first, and both
    leave every function as it was."""
    from ember.amp import autocast_mode
    lin = ember.nn.Linear(4, 3)
    x = ember.randn(2, 4)
    codes = {id(f): f.__code__ for f in (ember.nn.functional.linear, ember.mm, ember.matmul, _primitive.apply)}
    with ember.profiler.profile() as p:
        with ember.autocast("cpu"):
            inside = lin(x)
        after = lin(x)
    with ember.autocast("cpu"):
        with ember.profiler.profile() as q:
            inside2 = lin(x)
    assert (inside.dtype, after.dtype, inside2.dtype) == (ember.bfloat16, ember.float32, ember.bfloat16)
    assert "aten::addmm" in {e.name for e in p.events()} and "aten::addmm" in {e.name for e in q.events()}
    assert {id(f): f.__code__ for f in (ember.nn.functional.linear, ember.mm, ember.matmul,
                                        _primitive.apply)} == codes
    assert not autocast_mode._swapped[0]
    assert lin(x).dtype == ember.float32


# ember's own primitives with no ATen op of that name (internal steps of views and in-place ops, an identity helper)
_EMBER_ONLY = {"aten::copy_slices", "aten::eye_of", "aten::view_scatter", "aten::constant_pad_nd_backward"}


def test_every_recordable_name_is_an_aten_op():
    from ember.autograd import profiler as P
    # (ember's own primitives: a test may declare one of its own in this process)
    prims = [p for p in _primitive.PRIMITIVES if getattr(p.forward, "__module__", "").startswith("ember")]
    names = {n for _, n in P._public_ops()} | {_profiling.aten_name(p) for p in prims}
    missing = {n for n in names if not hasattr(torch.ops.aten, n[len("aten::"):])}
    assert missing == _EMBER_ONLY


def _warnings_of(fn) -> list:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            fn()
        except AssertionError as e:
            return [(x.category.__name__, str(x.message)) for x in w] + [str(e)]
    return [(x.category.__name__, str(x.message)) for x in w]


@pytest.mark.parametrize("kw", [dict(use_cuda=True), dict(use_device="cuda"), dict(use_device="tpu"),
                                dict(use_cpu=False), dict(use_cpu=False, use_kineto=True)])
def test_autograd_profile_device_arguments_as_torch(kw):
    def run(lib):
        def fn():
            with lib.autograd.profiler.profile(**kw):
                lib.ones(2) + 1
        return _warnings_of(fn)
    assert run(ember) == run(torch)


def test_events_across_threads_and_acc_events():
    import threading

    def work():
        with ember.profiler.record_function("in thread"):
            ember.ones(2) * 2

    with ember.profiler.profile() as p:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        ember.ones(2) + 1
    ev = {e.name: e for e in p.events()}
    assert ev["aten::mul"].cpu_parent is ev["in thread"] and ev["in thread"].thread != ev["aten::add"].thread
    # acc_events keeps the events of every cycle of a schedule
    with ember.profiler.profile(schedule=ember.profiler.schedule(wait=0, warmup=1, active=1), acc_events=True) as q:
        for _ in range(4):
            ember.ones(2) + 1
            q.step()
    assert sum(e.count for e in q.key_averages() if e.key == "aten::add") == 2
