"""GradScaler against torch 2.13: training loops with the scaler give torch's losses (float32, and autocast float16),
steps with inf/NaN gradients are skipped and the scale backs off, growth, state_dict, the disabled pass-through,
the deprecated torch.cuda.amp/torch.cpu.amp forms and their warnings, the two ATen ops it runs on."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.amp import grad_scaler as gs

torch = pytest.importorskip("torch")


def _loop(m, steps=12, amp=False, init_scale=2.0 ** 16, growth_interval=3, poison=(), opt="SGD", clip=False):
    """A small MLP trained with GradScaler('cpu'); ``poison``: steps whose gradients get an inf."""
    rng = np.random.default_rng(0)
    W1, b1, W2, b2 = (rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((8, 4), (8,), (3, 8), (3,)))
    X = rng.standard_normal((16, 4)).astype(np.float32)
    Y = rng.integers(0, 3, 16)
    params = [m.tensor(a, requires_grad=True) for a in (W1, b1, W2, b2)]
    optimizer = getattr(m.optim, opt)(params, lr=0.1)
    scaler = m.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    x, y = m.tensor(X), m.tensor(Y)
    log = []
    for i in range(steps):
        optimizer.zero_grad()
        with m.autocast("cpu", dtype=m.float16, enabled=amp):
            h = m.nn.functional.linear(x, params[0], params[1]).relu()
            out = m.nn.functional.linear(h, params[2], params[3])
            loss = m.nn.functional.cross_entropy(out, y)
        scaler.scale(loss).backward()
        if i in poison:
            params[0].grad[0, 0] = float("inf") if i % 2 else float("nan")
        if clip:
            scaler.unscale_(optimizer)
            m.nn.utils.clip_grad_norm_(params, 1.0)
        r = scaler.step(optimizer)
        scaler.update()
        log.append((loss.item(), scaler.get_scale(), scaler._get_growth_tracker(), r))
    return log, [p.detach().numpy() for p in params], scaler.state_dict()


@pytest.mark.parametrize("kw", [{}, {"poison": (2, 3, 7)}, {"opt": "Adam", "poison": (1,)}, {"clip": True},
                                {"init_scale": 2.0 ** 127, "growth_interval": 1}])
def test_float32_loop_matches_torch(kw):
    """The scale, growth tracker and skipped steps are torch's exactly; losses and parameters to float32
    rounding (ember's MLP gradients differ from torch's BLAS in the last bits, with or without a scaler)."""
    t, e = _loop(torch, **kw), _loop(ember, **kw)
    assert [r[1:] for r in e[0]] == [r[1:] for r in t[0]]
    np.testing.assert_allclose([r[0] for r in e[0]], [r[0] for r in t[0]], rtol=1e-5)
    for a, b in zip(e[1], t[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert e[2] == t[2]


def test_scaling_is_exact():
    """With power-of-two scales and no inf, training with the scaler is bit-identical to training without it."""
    with_scaler = _loop(ember, steps=6)
    plain = _loop(ember, steps=6, init_scale=1.0)
    assert [r[0] for r in with_scaler[0]] == [r[0] for r in plain[0]]
    for a, b in zip(with_scaler[1], plain[1]):
        np.testing.assert_array_equal(a, b)


def test_autocast_float16_loop_matches_torch():
    """With autocast float16 the losses and scales are torch's (float16 backward kernels round alike to 1e-3)."""
    t, e = _loop(torch, amp=True, poison=(4,)), _loop(ember, amp=True, poison=(4,))
    assert [r[1:] for r in e[0]] == [r[1:] for r in t[0]]
    np.testing.assert_allclose([r[0] for r in e[0]], [r[0] for r in t[0]], rtol=1e-3)
    for a, b in zip(e[1], t[1]):
        np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-3)


def test_skipped_step_leaves_params():
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale((w * float("inf")).sum()).backward()
    assert scaler.step(opt) is None
    scaler.update()
    assert w.tolist() == [1.0, 1.0] and scaler.get_scale() == 2.0


def test_disabled_is_pass_through():
    for m in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = m.amp.GradScaler("cpu", enabled=False)
        assert not w
        t = m.ones(2)
        assert s.scale(t) is t and s.get_scale() == 1.0 and s.state_dict() == {} and not s.is_enabled()
        p = m.ones(1, requires_grad=True)
        opt = m.optim.SGD([p], lr=1.0)
        (p * 2).sum().backward()
        s.step(opt)
        s.update()
        s.unscale_(opt)
        s.load_state_dict({})
        assert p.item() == -1.0


def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(x.category.__name__, str(x.message)) for x in w]


@pytest.mark.parametrize("call", [
    "m.cuda.amp.GradScaler(enabled=False)", "m.cuda.amp.GradScaler()", "m.amp.GradScaler()",
    "m.amp.GradScaler('cuda', enabled=False)", "m.cpu.amp.GradScaler()", "m.GradScaler('cpu')",
    "m.amp.GradScaler('cpu', growth_interval=5, init_scale=8.0)",
])
def test_construction_matches_torch(call):
    """nanoGPT's torch.cuda.amp.GradScaler(enabled=False) and the other forms: same warnings, same state."""
    def ev(m):
        s, w = _warned(lambda: eval(call, {"m": m}))
        return s.is_enabled(), s.state_dict(), w
    assert ev(ember) == ev(torch)


@pytest.mark.parametrize("case", ["growth", "backoff", "unscale_twice", "step_twice", "unscale_after_step",
                                  "no_scale", "fp16_grads", "closure", "bad_factor", "update_new_scale"])
def test_errors_match_torch(case):
    def run(m):
        p = m.ones(3, requires_grad=True)
        opt = m.optim.SGD([p], lr=0.5)
        kw = {"growth_factor": 1.0} if case == "bad_factor" else {}
        try:
            s = m.amp.GradScaler("cpu", init_scale=3.0, growth_interval=2, backoff_factor=0.3, **kw)
            if case == "no_scale":
                s.step(opt)
            (s.scale(p * 2).sum() if case != "backoff" else s.scale(p / 0).sum()).backward()
            if case == "fp16_grads":
                p.grad = p.grad.half()
            if case in ("unscale_twice",):
                s.unscale_(opt)
            if case == "unscale_after_step":
                s.step(opt)
                s.unscale_(opt)
            if case == "closure":
                s.step(opt, closure=lambda: 0)
            s.unscale_(opt) if case in ("unscale_twice", "fp16_grads") else None
            s.step(opt)
            if case == "step_twice":
                s.step(opt)
            s.update(1.5 if case == "update_new_scale" else None)
            opt.zero_grad()
            s.scale(p.sum()).backward()
            s.step(opt)
            s.update()
            return s.state_dict(), p.tolist()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
    assert run(ember) == run(torch)


def test_state_dict_round_trip_and_pickle():
    for m in (torch, ember):
        s = m.amp.GradScaler("cpu", init_scale=16.0)
        s.scale(m.ones(1))
        s.load_state_dict({"scale": 4.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 7,
                           "_growth_tracker": 2})
        assert s.state_dict() == {"scale": 4.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 7,
                                  "_growth_tracker": 2}
        s2 = pickle.loads(pickle.dumps(s))
        assert s2.state_dict() == s.state_dict()
        with pytest.raises(RuntimeError, match="source state dict is empty"):
            s.load_state_dict({})


@pytest.mark.parametrize("scale,found,tracker,growth,backoff,interval", [
    (65536.0, 0.0, 1, 2.0, 0.5, 2), (65536.0, 1.0, 1, 2.0, 0.5, 2), (3.0e38, 0.0, 0, 2.0, 0.5, 1),
    (7.0, 1.0, 3, 2.0, 0.3, 5), (7.0, 0.0, 3, 1.7, 0.3, 5), (7.0, 0.0, 4, 1.7, 0.3, 5)])
def test_update_scale_op_matches_torch(scale, found, tracker, growth, backoff, interval):
    def run(m, fn):
        s, t, f = m.tensor(scale), m.tensor(tracker, dtype=m.int32), m.tensor(found)
        fn(s, t, f, growth, backoff, interval)
        return s.item(), t.item()
    assert run(ember, gs._amp_update_scale_) == run(torch, torch._amp_update_scale_)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("inv", [1.0, 2.0 ** -16, 0.3])
def test_unscale_op_matches_torch(dtype, inv):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((4, 5)).astype(dtype) * 1000, rng.standard_normal(3).astype(dtype)]
    arrays[1][1] = np.inf

    def run(m, fn):
        gr = [m.tensor(a) for a in arrays[:1]], [m.tensor(a) for a in arrays]
        out = []
        for grads in gr:
            found = m.zeros(())
            fn(grads, found, m.tensor(inv))
            out.append((found.item(), [g.numpy().tolist() for g in grads]))
        return out
    assert run(ember, gs._amp_foreach_non_finite_check_and_unscale_) == \
        run(torch, torch._amp_foreach_non_finite_check_and_unscale_)
