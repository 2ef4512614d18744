"""torch-level names that are not ops of the op database, against torch 2.13: predicates and queries, print
options, process switches, the removed functions' errors, compile and control flow run eagerly, DLPack."""
from __future__ import annotations

import warnings

import pytest
import torch

import ember


def _same_outcome(fn):
    """Run ``fn(lib)`` on torch and ember: the same value (repr) or the same exception type and message."""
    out = []
    for lib in (torch, ember):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append(("ok", repr(fn(lib))))
        except Exception as e:   # noqa: BLE001  (comparing exceptions is the point)
            out.append((type(e).__name__, str(e)))
    assert out[0] == out[1]


@pytest.mark.parametrize("case", [
    lambda m: m.tensor([1.5]).is_nonzero(), lambda m: m.tensor(0.).is_nonzero(),
    lambda m: m.tensor(float("nan")).is_nonzero(), lambda m: m.tensor([]).is_nonzero(),
    lambda m: m.tensor([1, 2]).is_nonzero(), lambda m: m.is_nonzero(m.tensor([0])), lambda m: m.is_nonzero(3),
    lambda m: [m.tensor(1, dtype=d).is_signed() for d in (m.uint8, m.bool, m.int8, m.int16, m.float16, m.float64)],
    lambda m: m.is_signed(m.tensor(1)),
    lambda m: (m.ones(2).get_device(), m.get_device(m.ones(2))),
    lambda m: m.ones(2, 3).is_same_size(m.zeros(2, 3)), lambda m: m.is_same_size(m.ones(2), m.ones(3)),
    lambda m: m.ones(2).is_same_size(3),
    lambda m: m.is_inference(m.ones(1)),
    lambda m: (m.typename(m.ones(2)), m.typename(m.ones(2, dtype=m.int64)), m.typename(3)),
    lambda m: m.typename(m.nn.Linear(2, 2)).replace("ember.", "torch."),   # the class's own module path
    lambda m: (m.scalar_tensor(3), m.scalar_tensor(True), m.scalar_tensor(3, dtype=m.int64),
               m.scalar_tensor(2.5, dtype=m.float64), m.scalar_tensor(m.tensor(2.))),
    lambda m: (m.range(1, 4), m.range(0, 1, 0.25), m.range(1, 4, dtype=m.int64), m.range(5), m.range(1, 2, 0.1)),
    lambda m: m.range(4, 1), lambda m: m.range(1, 4, 0),
    lambda m: (m.ByteTensor([1, 2]), m.CharTensor([-1]), m.ShortTensor(2).shape, m.ones(2).type(m.ByteTensor)),
    lambda m: (m.ones(2).byte(), m.tensor([-1.5, 2.7]).char(), m.tensor([True]).byte()),
    lambda m: m.detach(m.ones(1, requires_grad=True) * 2), lambda m: m.detach_(m.ones(1, requires_grad=True) * 2),
    lambda m: m.tensor([1, 2]).apply_(lambda v: v * 2.7),
    lambda m: m.ones(3, requires_grad=True).apply_(lambda v: v),
    lambda m: m.tensor([[1., 2]]).map_(m.tensor([3., 4]), lambda a, b: a + b),
    lambda m: m.tensor([1., 2]).map_(m.tensor([3, 4]), lambda a, b: a + b),
    lambda m: m.tensor([1., 2]).map2_(m.tensor([3., 4]), m.tensor([5.]), lambda a, b, c: a + b * c),
    lambda m: [getattr(m, f)(m.ones(2, 2), m.ones(2, 2)) for f in ("lstsq", "solve")],
    lambda m: m.lstsq(m.ones(2, 2), m.ones(2, 2)), lambda m: m.solve(m.ones(2, 2), m.ones(2, 2)),
    lambda m: m.symeig(m.ones(2, 2)), lambda m: m.eig(m.ones(2, 2)), lambda m: m.matrix_rank(m.ones(2, 2)),
    lambda m: m.ones(2, 2).lstsq(m.ones(2, 2)), lambda m: m.ones(2, 2).solve(m.ones(2, 2)),
    lambda m: m.ones(2, 2).symeig(), lambda m: m.ones(2, 2).eig(),
    lambda m: (m.compiled_with_cxx11_abi(), m.has_lapack, m.init_num_threads()),
    lambda m: m.cond(m.tensor(False), lambda a: a + 1, lambda a: a - 1, (m.ones(2),)),
    lambda m: m.cond(True, lambda a, b: a * b, lambda a, b: a - b, [m.ones(2), m.ones(2) * 3]),
    lambda m: m.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), (m.tensor(0), m.ones(2))),
    lambda m: m.get_default_device(),
])
def test_against_torch(case):
    _same_outcome(case)


def test_gcd_lcm_xlogy_in_place_functions():
    for lib in (torch, ember):
        a, b, c = lib.tensor([4, 6]), lib.tensor([6, 4]), lib.tensor([1., 2.])
        assert lib.gcd_(a, lib.tensor([6, 9])) is a and lib.lcm_(b, lib.tensor([3, 6])) is b
        lib.xlogy_(c, 3.)
        assert a.tolist() == [2, 3] and b.tolist() == [6, 12]
    assert ember.tensor([1., 2.]).xlogy_(3.).tolist() == torch.tensor([1., 2.]).xlogy_(3.).tolist()


@pytest.mark.parametrize("opts", [dict(precision=2), dict(threshold=5), dict(edgeitems=1, threshold=3),
                                  dict(linewidth=20), dict(profile="short"), dict(profile="full"),
                                  dict(sci_mode=True), dict(sci_mode=False), dict(precision=6, sci_mode=True),
                                  dict(profile="short", precision=5), dict(edgeitems=0, threshold=2)])
def test_set_printoptions(opts):
    data = [[1.123456789, -2.5, 1e-3, 3.0, 100.25, 7.5, 0.0], [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1e5]]
    ints = list(range(20))
    try:
        for lib in (torch, ember):
            lib.set_printoptions(**opts)
        for make in (lambda m: m.tensor(data), lambda m: m.tensor(ints), lambda m: m.tensor([1.0, 2.0]),
                     lambda m: m.tensor(3.14159, dtype=m.float64), lambda m: m.arange(2000.).reshape(40, 50),
                     lambda m: m.tensor([1e-8, 1.0]), lambda m: m.tensor([2.0, 3.0], requires_grad=True) * 2):
            assert repr(make(ember)) == repr(make(torch)), opts
    finally:
        for lib in (torch, ember):
            lib.set_printoptions(profile="default")


def test_deterministic_debug_mode_and_switches():
    try:
        for mode, want in (("warn", 1), ("error", 2), (0, 0), (2, 2), ("default", 0), (1, 1)):
            for lib in (torch, ember):
                lib.set_deterministic_debug_mode(mode)
            assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == want
            assert ember.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
        for bad in (5, "x", 1.0):
            _same_outcome(lambda m, bad=bad: m.set_deterministic_debug_mode(bad))
    finally:
        for lib in (torch, ember):
            lib.set_deterministic_debug_mode(0)
    ember.set_warn_always(True)
    assert ember.is_warn_always_enabled()
    ember.set_warn_always(False)
    assert not ember.is_warn_always_enabled()
    assert ember.set_flush_denormal(False) is False


def test_range_warns_as_torch():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        ember.range(1, 3)


def test_default_device():
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    assert ember.get_default_device() == ember.device("cpu") and ember.zeros(1).device.type == "cpu"
    ember.set_default_device(None)
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        ember.set_default_device("cuda")
    with pytest.raises(NotImplementedError, match="only the 'cpu' default"):
        ember.set_default_device("meta")
    assert ember.get_default_device() == ember.device("cpu")


def test_compile_wraps_and_keeps_results():
    # ember.compile traces and replays (tests/test_compile.py); disable=True is the pass-through
    model = ember.nn.Linear(2, 2)
    assert ember.compile(model)._orig_mod is model
    f = lambda x: x * 2   # noqa: E731
    x = ember.ones(3)
    assert ember.compile(f, mode="reduce-overhead")(x).tolist() == [2.0] * 3
    assert ember.compile(fullgraph=True)(f)(x).tolist() == [2.0] * 3
    assert ember.compile(f, disable=True) is f


def test_dlpack_shares_memory_both_ways():
    x = ember.arange(4.)
    t = torch.from_dlpack(ember.to_dlpack(x))
    t[0] = 9
    assert x.tolist() == [9., 1., 2., 3.]
    y = ember.from_dlpack(torch.arange(3.))
    assert y.tolist() == [0., 1., 2.] and y.dtype == ember.float32
    z = torch.arange(3, dtype=torch.int32)
    w = ember.from_dlpack(z)
    w[1] = 7   # shared with torch's tensor
    assert z.tolist() == [0, 7, 2] and w.dtype == ember.int32
    assert ember.from_dlpack(ember.to_dlpack(ember.ones(2))).tolist() == [1., 1.]


# ----- torch.rnn_tanh / rnn_relu / lstm / gru and the cells (ATen's flat-weight signatures) -------------------------

def _rnn_params(rng, gates, inp, hid, layers, dirs, bias, proj=0):
    out = []
    for layer in range(layers):
        for _ in range(dirs):
            i = inp if layer == 0 else (proj or hid) * dirs
            out += [rng.standard_normal((gates * hid, i)) * 0.3, rng.standard_normal((gates * hid, proj or hid)) * 0.3]
            if bias:
                out += [rng.standard_normal(gates * hid) * 0.3, rng.standard_normal(gates * hid) * 0.3]
            if proj:
                out += [rng.standard_normal((proj, hid)) * 0.3]
    return out


@pytest.mark.parametrize("mode", ["rnn_tanh", "rnn_relu", "gru", "lstm", "lstm_proj"])
@pytest.mark.parametrize("layers,dirs,bias,batch_first,dropout", [(1, 1, True, False, 0.0), (2, 2, False, True, 0.0),
                                                                  (2, 1, True, False, 0.4)])
def test_functional_rnns_match_torch(mode, layers, dirs, bias, batch_first, dropout):
    import numpy as np
    rng = np.random.default_rng(0)
    gates = {"rnn_tanh": 1, "rnn_relu": 1, "gru": 3, "lstm": 4, "lstm_proj": 4}[mode]
    proj = 3 if mode == "lstm_proj" else 0
    params = _rnn_params(rng, gates, 4, 5, layers, dirs, bias, proj)
    x = rng.standard_normal((2, 6, 4) if batch_first else (6, 2, 4))
    h = rng.standard_normal((layers * dirs, 2, proj or 5))
    c = rng.standard_normal((layers * dirs, 2, 5))
    results = []
    for lib in (torch, ember):
        lib.manual_seed(3)
        ps = [lib.tensor(p, dtype=lib.float32, requires_grad=True) for p in params]
        hx = [lib.tensor(h, dtype=lib.float32), lib.tensor(c, dtype=lib.float32)] if gates == 4 else \
            lib.tensor(h, dtype=lib.float32)
        fn = getattr(lib, "lstm" if gates == 4 else mode)
        out = fn(lib.tensor(x, dtype=lib.float32), hx, ps, bias, layers, dropout, True, dirs == 2, batch_first)
        sum(o.sum() for o in out).backward()
        results.append([o.detach().numpy() for o in out] + [p.grad.numpy() for p in ps])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6)


def test_functional_rnn_packed_data_form():
    import numpy as np
    rng = np.random.default_rng(1)
    params = _rnn_params(rng, 3, 4, 5, 1, 2, True)
    data, sizes, h = rng.standard_normal((6, 4)), [3, 2, 1], rng.standard_normal((2, 3, 5))
    outs = []
    for lib in (torch, ember):
        ps = [lib.tensor(p) for p in params]
        out = lib.gru(lib.tensor(data), lib.tensor(sizes), lib.tensor(h), ps, True, 1, 0.0, False, True)
        outs.append([o.numpy() for o in out])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-13)


def test_functional_cells_match_torch():
    import numpy as np
    rng = np.random.default_rng(2)
    x, h, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    for name, gates in (("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3), ("lstm_cell", 4)):
        w = [rng.standard_normal((gates * 5, 4)), rng.standard_normal((gates * 5, 5)), rng.standard_normal(gates * 5),
             rng.standard_normal(gates * 5)]
        outs = []
        for lib in (torch, ember):
            hx = (lib.tensor(h), lib.tensor(c)) if gates == 4 else lib.tensor(h)
            ws = [lib.tensor(a, requires_grad=True) for a in w]
            r = getattr(lib, name)(lib.tensor(x), hx, *ws)
            r = r if isinstance(r, tuple) else (r,)
            sum(o.sum() for o in r).backward()
            outs.append([o.detach().numpy() for o in r] + [a.grad.numpy() for a in ws])
            r2 = getattr(lib, name)(lib.tensor(x), hx, ws[0], ws[1])   # no biases
            outs[-1] += [o.detach().numpy() for o in (r2 if isinstance(r2, tuple) else (r2,))]
        for a, b in zip(*outs):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [
    lambda m, a: m.svd_lowrank(a, q=3), lambda m, a: m.pca_lowrank(a.float()),
    lambda m, a: m.svd_lowrank(a.mT, q=4, niter=1, M=a.mT.mean(0, keepdim=True)),
    lambda m, a: m.pca_lowrank(a, q=2, center=False, niter=0)])
def test_lowrank_svd_matches_torch(case):
    """The same seed draws the same random basis: S equal, U diag(S) V^T equal (the columns' signs follow each
    library's SVD of the small projected matrix, which may differ)."""
    import numpy as np
    a = np.random.default_rng(0).standard_normal((8, 5))
    out = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        u, s, v = case(lib, lib.tensor(a))
        out.append((s.numpy(), (u * s.unsqueeze(-2)).matmul(v.mT).numpy(), np.abs(u.numpy()), np.abs(v.numpy())))
    for x, y in zip(*out):
        np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="must be non-negative integer and not greater"):
        ember.pca_lowrank(ember.ones(3, 2), q=3)


def test_poisson_draws_torchs_stream():
    """The same seed gives PyTorch's counts: small rates (products of uniforms), large ones (PTRS rejection),
    zero, float16/32/64, a transposed input (drawn in the output's row-major order), an explicit generator."""
    import numpy as np
    outs = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        rates = lib.rand(4, 6) * 40
        r = [lib.poisson(lib.tensor([0.5, 3.0, 15.0, 0.0, 100.0, 1e4])), lib.poisson(rates),
             lib.poisson(rates.t().double()), lib.poisson(rates.half()),
             lib.poisson(lib.tensor([2.0, 7.5]), generator=lib.Generator().manual_seed(3)), lib.rand(3)]
        x = lib.tensor([2.0, 30.0], requires_grad=True)
        y = lib.poisson(x)
        y.sum().backward()
        outs.append([t.numpy() for t in r] + [y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(b, a)
    _same_outcome(lambda m: m.poisson(m.tensor([-1.0])))
    _same_outcome(lambda m: m.poisson(m.tensor([1, 2])))
    _same_outcome(lambda m: m.poisson(m.tensor([float("nan")])))
