"""ember.autograd.gradcheck / gradgradcheck, run against torch's on the same programs, and over the op database.

Every program below is written once against a module ``m`` (torch or ember) and run on both: the results
(True / False), the exception types and the key message text must agree; for slow mode the whole
GradcheckError message (both Jacobians, printed) is compared.
"""
from __future__ import annotations

import functools
import os
import sys
import time
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from op_db import OP_DB  # noqa: E402

torch.set_num_threads(1)
SLOW = os.environ.get("EMBER_SLOW") == "1"
LIBS = pytest.mark.parametrize("m", [torch, ember], ids=["torch", "ember"])


# ----- programs, written once for both libraries --------------------------------------------------

@functools.lru_cache(maxsize=None)
def fns(m):
    """Custom Functions (some deliberately wrong) defined against module ``m``."""
    class BadReLU(m.autograd.Function):       # backward doubles the gradient
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * (x > 0).to(g.dtype)

    class NotMulByGrad(m.autograd.Function):  # right Jacobian, but a zero grad_output gives ones
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3 if bool(g.abs().sum() > 0) else m.ones_like(g)

    class Noisy(m.autograd.Function):         # backward is not deterministic
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * (3 + m.rand(g.shape, dtype=g.dtype) * 1e-9)

    class TwoOutNoneUnsafe(m.autograd.Function):   # forgets that an output gradient may be None
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    class TwoOutNoneSafe(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            r = None
            if g1 is not None:
                r = g1 * 2
            if g2 is not None:
                r = g2 * 3 if r is None else r + g2 * 3
            return r

    class SquareDetachedBackward(m.autograd.Function):   # first derivative right, second one zero
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x.detach()

    class Square(m.autograd.Function):        # differentiable backward: gradgradcheck passes
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x

    class NoJvp(m.autograd.Function):         # no jvp: forward mode must refuse it
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3

    def wrong_tangent(a):
        """2a, whose forward-mode tangent is 3 times the input's: reverse mode stays right."""
        p, t = m.autograd.forward_ad.unpack_dual(a)
        if t is not None:
            return m.autograd.forward_ad.make_dual(p * 2, t * 3)
        return a * 2

    return dict(BadReLU=BadReLU, NotMulByGrad=NotMulByGrad, Noisy=Noisy, TwoOutNoneUnsafe=TwoOutNoneUnsafe,
                TwoOutNoneSafe=TwoOutNoneSafe, SquareDetachedBackward=SquareDetachedBackward, Square=Square,
                NoJvp=NoJvp, wrong_tangent=wrong_tangent)


def data(m):
    m.manual_seed(0)
    x = m.randn(3, 2, dtype=m.float64, requires_grad=True)
    y = m.randn(2, 4, dtype=m.float64, requires_grad=True)
    s = m.randn((), dtype=m.float64, requires_grad=True)
    e = m.randn(0, 3, dtype=m.float64, requires_grad=True)
    return x, y, s, e


def run(m, prog):
    """("ok", result) or ("raise", exception type name, message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", prog(m))
        except Exception as e:  # noqa: BLE001
            return ("raise", type(e).__name__, str(e))


def gc(m, f, inputs, **kw):
    return m.autograd.gradcheck(f, inputs, **kw)


def ggc(m, f, inputs, *args, **kw):
    return m.autograd.gradgradcheck(f, inputs, *args, **kw)


PASSING = {
    "elementwise": lambda m: gc(m, lambda a: a.sin() * a.exp(), data(m)[:1]),
    "matmul": lambda m: gc(m, m.matmul, data(m)[:2]),
    "matmul_fast": lambda m: gc(m, lambda a, b: (a @ b).tanh(), data(m)[:2], fast_mode=True),
    "tuple_in_out": lambda m: gc(m, lambda a, b: (a @ b, a.sum() * b), data(m)[:2]),
    "non_tensor_inputs": lambda m: gc(m, lambda a, k, b, name: a * k + b.sum(), (data(m)[0], 3.0, data(m)[1], "x")),
    "unused_input": lambda m: gc(m, lambda a, b: a * 2, data(m)[:2]),
    "unused_input_fast": lambda m: gc(m, lambda a, b: a * 2, data(m)[:2], fast_mode=True),
    "output_not_requiring_grad": lambda m: gc(m, lambda a: (a.detach() * 2, a * 3), data(m)[:1]),
    "constant_output": lambda m: gc(m, lambda a: m.ones(3, dtype=m.float64), data(m)[:1]),
    "identity": lambda m: gc(m, lambda a: a, data(m)[:1]),
    "list_inputs": lambda m: gc(m, lambda a, b: a * b, [data(m)[2], data(m)[0]]),
    "single_tensor_input": lambda m: gc(m, m.tanh, data(m)[0]),
    "empty_input": lambda m: gc(m, lambda a: a * 2, (data(m)[3],)),
    "int_output_mixed_in": lambda m: gc(m, lambda a: a.max(dim=1), data(m)[:1]),
    "multi_output_op": lambda m: gc(m, lambda a: m.std_mean(a, dim=0), data(m)[:1]),
    "custom_function_none_grads": lambda m: gc(m, fns(m)["TwoOutNoneSafe"].apply, data(m)[:1]),
    "nondet_tol": lambda m: gc(m, lambda a: fns(m)["Noisy"].apply(a), data(m)[:1], nondet_tol=1e-6,
                               check_undefined_grad=False),
    "forward_ad": lambda m: gc(m, lambda a, b: (a @ b).tanh(), data(m)[:2], check_forward_ad=True),
    "forward_ad_fast": lambda m: gc(m, lambda a, b: (a @ b).tanh(), data(m)[:2], check_forward_ad=True,
                                    fast_mode=True),
    "forward_ad_only": lambda m: gc(m, lambda a: a.exp(), data(m)[:1], check_forward_ad=True,
                                    check_backward_ad=False),
    "gradgrad_elementwise": lambda m: ggc(m, lambda a: a.sin() * a, data(m)[:1]),
    "gradgrad_matmul": lambda m: ggc(m, lambda a, b: (a @ b).tanh(), data(m)[:2]),
    "gradgrad_given_grad_outputs": lambda m: ggc(m, lambda a: a.exp(), data(m)[:1],
                                                 (m.ones(3, 2, dtype=m.float64, requires_grad=True),)),
    "gradgrad_noncontiguous": lambda m: ggc(m, lambda a: a.exp(), data(m)[:1], gen_non_contig_grad_outputs=True),
    "gradgrad_fast": lambda m: ggc(m, lambda a: a.sin() * a, data(m)[:1], fast_mode=True),
    "gradgrad_custom_function": lambda m: ggc(m, fns(m)["Square"].apply, data(m)[:1]),
    "gradgrad_fwd_over_rev": lambda m: ggc(m, lambda a: a.sin() * a, data(m)[:1], check_fwd_over_rev=True),
}


@pytest.mark.parametrize("name", list(PASSING))
def test_passing_programs(name):
    t, e = run(torch, PASSING[name]), run(ember, PASSING[name])
    assert t == ("ok", True), t
    assert e == t


def _bad(kind):
    return {
        "slow": lambda m: gc(m, fns(m)["BadReLU"].apply, data(m)[:1]),
        "fast": lambda m: gc(m, fns(m)["BadReLU"].apply, data(m)[:1], fast_mode=True),
        "forward": lambda m: gc(m, fns(m)["wrong_tangent"], data(m)[:1], check_forward_ad=True),
        "forward_fast": lambda m: gc(m, fns(m)["wrong_tangent"], data(m)[:1], check_forward_ad=True,
                                     fast_mode=True),
        "second_input": lambda m: gc(m, lambda a, b: (a.sum() * b, fns(m)["BadReLU"].apply(b)), data(m)[:2]),
        "gradgrad": lambda m: ggc(m, fns(m)["SquareDetachedBackward"].apply, data(m)[:1]),
        "gradgrad_fast": lambda m: ggc(m, fns(m)["SquareDetachedBackward"].apply, data(m)[:1], fast_mode=True),
    }[kind]


@pytest.mark.parametrize("kind", ["slow", "forward", "second_input", "gradgrad"])
def test_mismatch_message_matches_torch(kind):
    """Slow mode: the same GradcheckError, message included (both Jacobians as printed tensors)."""
    t, e = run(torch, _bad(kind)), run(ember, _bad(kind))
    assert t[:2] == ("raise", "GradcheckError")
    assert e == t
    mode = "computed with forward mode " if kind == "forward" else ""
    pair = "output 1 with respect to input 1" if kind == "second_input" else "output 0 with respect to input 0"
    assert e[2].startswith(f"Jacobian {mode}mismatch for {pair},\nnumerical:tensor(")
    assert "\nanalytical:tensor(" in e[2]


@pytest.mark.parametrize("kind", ["fast", "forward_fast", "gradgrad_fast"])
def test_fast_mode_mismatch(kind):
    """Fast mode: the same projected values, then the slow-mode Jacobians of the failing pair."""
    t, e = run(torch, _bad(kind)), run(ember, _bad(kind))
    assert t[:2] == e[:2] == ("raise", "GradcheckError")
    t_lines, e_lines = t[2].splitlines(), e[2].splitlines()
    assert e_lines[0] == t_lines[0]
    for k in (1, 2):   # numerical:<value>, analytical:<value>
        tk, ek = t_lines[k].split(":", 1), e_lines[k].split(":", 1)
        assert ek[0] == tk[0]
        if tk[1].startswith("tensor"):
            assert ek[1] == tk[1]
        else:
            assert float(ek[1]) == pytest.approx(float(tk[1]), rel=1e-9)
    # The slow-mode recomputation: identical printed Jacobians and max difference.
    t_tail, e_tail = t[2].split("Numerical:\n", 1)[1], e[2].split("Numerical:\n", 1)[1]
    assert e_tail.split("\n\n")[0] == t_tail.split("\n\n")[0]
    assert e[2].split("The max per-element difference")[1].splitlines()[0] == \
        t[2].split("The max per-element difference")[1].splitlines()[0]


@pytest.mark.parametrize("kind", ["slow", "fast", "forward", "forward_fast", "gradgrad", "gradgrad_fast"])
def test_raise_exception_false_returns_false(kind):
    def prog(m):
        f = _bad(kind)
        return f(_NoRaise(m))
    assert run(torch, prog) == run(ember, prog) == ("ok", False)


class _NoRaise:
    """Module ``m`` whose gradcheck/gradgradcheck default to raise_exception=False."""

    def __init__(self, m):
        self._m = m
        self.autograd = type("A", (), {
            "gradcheck": staticmethod(functools.partial(m.autograd.gradcheck, raise_exception=False)),
            "gradgradcheck": staticmethod(functools.partial(m.autograd.gradgradcheck, raise_exception=False)),
            "forward_ad": m.autograd.forward_ad, "Function": m.autograd.Function})

    def __getattr__(self, name):
        return getattr(self._m, name)


def test_gradcheck_error_type():
    from ember.autograd.gradcheck import GradcheckError
    assert GradcheckError is ember.autograd.GradcheckError
    assert issubclass(GradcheckError, RuntimeError)
    with pytest.raises(GradcheckError):
        ember.autograd.gradcheck(fns(ember)["BadReLU"].apply, data(ember)[:1])


def test_module_and_function_names_as_torch():
    """``torch.autograd.gradcheck`` is the function; the module lives on in sys.modules."""
    for m in (torch, ember):
        assert callable(m.autograd.gradcheck) and not isinstance(m.autograd.gradcheck, type(sys))
        mod = sys.modules[f"{m.__name__}.autograd.gradcheck"]
        assert mod.gradcheck is m.autograd.gradcheck
        assert mod.gradgradcheck is m.autograd.gradgradcheck
        assert issubclass(mod.GradcheckError, RuntimeError)
    import inspect
    for name in ("gradcheck", "gradgradcheck"):
        tp = inspect.signature(getattr(torch.autograd, name)).parameters
        ep = inspect.signature(getattr(ember.autograd, name)).parameters
        assert list(ep) == list(tp)
        assert {k: (p.default, p.kind) for k, p in ep.items()} == {k: (p.default, p.kind) for k, p in tp.items()}


ERRORS = {
    "none_requires_grad": lambda m: gc(m, lambda a: a * 2, (data(m)[0].detach(),)),
    "stride_0": lambda m: gc(m, lambda a: a * 2,
                             (m.randn(3, dtype=m.float64).expand(2, 3).requires_grad_(),)),
    "no_check_at_all": lambda m: gc(m, lambda a: a, data(m)[:1], check_backward_ad=False),
    "batched_without_backward": lambda m: gc(m, lambda a: a, data(m)[:1], check_forward_ad=True,
                                             check_backward_ad=False, check_batched_grad=True),
    "not_multiplied_by_grad_output": lambda m: gc(m, fns(m)["NotMulByGrad"].apply, data(m)[:1]),
    "not_reentrant": lambda m: gc(m, fns(m)["Noisy"].apply, data(m)[:1]),
    "undefined_output_grad_unsupported": lambda m: gc(m, fns(m)["TwoOutNoneUnsafe"].apply, data(m)[:1]),
    "depends_but_not_differentiable": lambda m: gc(m, lambda a: a.detach() * 2, data(m)[:1]),
    "depends_but_not_differentiable_fast": lambda m: gc(m, lambda a: a.detach() * 2, data(m)[:1],
                                                        fast_mode=True),
    "gradgrad_undefined_without_rev": lambda m: ggc(m, lambda a: a, data(m)[:1], check_rev_over_rev=False),
    # A custom Function without jvp under forward mode: PyTorch's NotImplementedError, not a GradcheckError,
    # so raise_exception=False does not turn it into False.
    "function_without_jvp": lambda m: gc(m, fns(m)["NoJvp"].apply, data(m)[:1], check_forward_ad=True),
    "function_without_jvp_fast": lambda m: gc(m, fns(m)["NoJvp"].apply, data(m)[:1], check_forward_ad=True,
                                              fast_mode=True),
    "function_without_jvp_forward_only": lambda m: gc(m, fns(m)["NoJvp"].apply, data(m)[:1],
                                                      check_forward_ad=True, check_backward_ad=False),
    "function_without_jvp_no_raise": lambda m: gc(m, fns(m)["NoJvp"].apply, data(m)[:1], check_forward_ad=True,
                                                  raise_exception=False),
    "function_without_jvp_fwd_over_rev": lambda m: ggc(m, fns(m)["NoJvp"].apply, data(m)[:1],
                                                       check_fwd_over_rev=True),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    t, e = run(torch, ERRORS[name]), run(ember, ERRORS[name])
    assert t[0] == "raise"
    assert e == t   # the whole message


def test_function_without_jvp_leaves_no_dual_level_open():
    """After the NotImplementedError, forward mode works again: the check's dual level was exited."""
    with pytest.raises(NotImplementedError, match="jvp"):
        ember.autograd.gradcheck(fns(ember)["NoJvp"].apply, data(ember)[:1], check_forward_ad=True)
    fwAD = ember.autograd.forward_ad
    x = data(ember)[0].detach()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones_like(x))
        assert ember.allclose(fwAD.unpack_dual(d.exp()).tangent, x.exp())


@LIBS
def test_float32_input_warns(m):
    x = m.randn(4, dtype=m.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #1 requires gradient and is not a double precision") as rec:
        assert m.autograd.gradcheck(lambda k, a: a * k, (2.0, x), eps=1e-3, atol=1e-2, rtol=1e-2)
    if m is ember:
        w = [r for r in rec if "double precision" in str(r.message)][0]
        assert "float64" in str(w.message) and "eps=0.001" in str(w.message)
        assert w.filename == __file__          # points at the caller, not into gradcheck.py


def test_float64_inputs_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.autograd.gradcheck(lambda a: a * 2, data(ember)[:1])


def test_complex128_inputs_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.autograd.gradcheck(lambda z: z * 2, cdata(ember)[:1])


@LIBS
def test_complex64_input_warns(m):
    z = m.randn(4, dtype=m.complex64, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision") as rec:
        assert m.autograd.gradcheck(lambda a: a * 2, (z,), eps=1e-3, atol=1e-2, rtol=1e-2)
    if m is ember:
        w = [r for r in rec if "double precision" in str(r.message)][0]
        assert "complex128" in str(w.message)


def test_gradgradcheck_draws_grad_outputs_as_torch():
    """Random grad_outputs come from the global generator, in torch's order: the stream after matches."""
    def prog(m):
        x = data(m)[0]
        m.manual_seed(5)
        assert m.autograd.gradgradcheck(lambda a: a.exp(), (x,), gen_non_contig_grad_outputs=True)
        return m.rand(3).tolist()
    assert run(ember, prog) == run(torch, prog)


def test_fast_mode_cost_does_not_grow_with_input_size():
    calls = []

    def f(a):
        calls.append(1)
        return ember.tanh(a * a.sum())

    def count(n, fast):
        calls.clear()
        x = ember.randn(n, dtype=ember.float64, requires_grad=True)
        assert ember.autograd.gradcheck(f, (x,), fast_mode=fast)
        return len(calls)

    assert count(10, True) == count(200, True)
    assert count(200, False) >= 2 * 200 > 10 * count(200, True)


def test_fast_mode_much_faster_on_a_large_input():
    ember.manual_seed(0)
    x = ember.randn(300, dtype=ember.float64, requires_grad=True)
    W = ember.randn(300, 300, dtype=ember.float64) / 20

    def f(a):
        return ember.tanh(W @ (a.sin() * a))

    def timed(fast):
        t0 = time.perf_counter()
        assert ember.autograd.gradcheck(f, (x,), fast_mode=fast)
        return time.perf_counter() - t0

    timed(True)
    assert timed(False) > 5 * timed(True)


@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
def test_reverse_and_forward_checks_share_central_differences(fast):
    """With check_forward_ad, the function is evaluated once, then twice per central difference (one per
    input element, or one along u in fast mode), then once per forward-mode JVP: the reverse-mode check
    reuses the differences instead of taking them again."""
    x = data(ember)[0]
    calls = []

    def f(a):
        calls.append(1)
        return a.exp()
    for kw in ({}, dict(check_forward_ad=True)):
        calls.clear()
        assert ember.autograd.gradcheck(f, (x,), check_undefined_grad=False, fast_mode=fast, **kw)
        n_diff = 1 if fast else x.numel()
        n_jvp = n_diff if kw else 0
        assert len(calls) == 1 + 2 * n_diff + n_jvp


def test_inputs_restored_and_user_rng_untouched():
    x = data(ember)[0]
    before = x.detach().clone()
    ember.manual_seed(3)
    state = ember.get_rng_state()
    assert ember.autograd.gradcheck(lambda a: a.exp(), (x,), fast_mode=True, check_forward_ad=True)
    assert ember.equal(x.detach(), before) and x._version == 0
    assert ember.equal(ember.get_rng_state(), state)


def test_check_batched_grad():
    def prog(m):
        m.manual_seed(0)
        a = m.randn(3, 2, dtype=m.float64, requires_grad=True)
        b = m.randn(2, 4, dtype=m.float64, requires_grad=True)
        ok = m.autograd.gradcheck(lambda p, q: ((p @ q).sin(), p * 2), (a, b), check_batched_grad=True)
        return ok, m.rand(2).tolist()   # the check draws its grad_outputs from the global generator
    assert run(ember, prog) == run(torch, prog)


@pytest.mark.parametrize("name", ["custom_function", "gradgrad", "gradgrad_custom_function", "fast", "scalar",
                                  "empty", "unused_input"])
def test_check_batched_grad_passes_as_torch(name):
    f = {
        "custom_function": lambda m: gc(m, fns(m)["Square"].apply, data(m)[:1], check_batched_grad=True),
        "gradgrad": lambda m: ggc(m, lambda a, b: (a @ b).tanh(), data(m)[:2], check_batched_grad=True),
        "gradgrad_custom_function": lambda m: ggc(m, fns(m)["Square"].apply, data(m)[:1], check_batched_grad=True),
        "fast": lambda m: gc(m, lambda p, q: ((p @ q).sin(), p * 2), data(m)[:2], check_batched_grad=True,
                             fast_mode=True),
        "scalar": lambda m: gc(m, lambda s: s.exp(), data(m)[2:3], check_batched_grad=True),
        "empty": lambda m: gc(m, lambda e: e * 2, data(m)[3:4], check_batched_grad=True),
        "unused_input": lambda m: gc(m, lambda a, b: a * 2, data(m)[:2], check_batched_grad=True),
    }[name]
    assert run(torch, f) == run(ember, f) == ("ok", True)


def test_check_batched_grad_failure_as_torch():
    """A backward that drifts from call to call: the batched gradients differ from the ones taken one by one.
    (torch runs the backward once for the batch under vmap, ember once per row: only "Got" differs.)"""
    def prog(m):
        calls = [0]

        class Drifting(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, g):
                calls[0] += 1
                return g * (3 + 1e-3 * calls[0])
        return gc(m, Drifting.apply, data(m)[:1], check_batched_grad=True, nondet_tol=1, atol=1e-1, rtol=1e-1,
                  check_undefined_grad=False)
    t, e = run(torch, prog), run(ember, prog)
    assert t[:2] == e[:2] == ("raise", "GradcheckError")
    assert e[2].splitlines()[0] == t[2].splitlines()[0] == "For output 0 and input 0:"
    assert e[2].split("\nGot:\n")[0] == t[2].split("\nGot:\n")[0]   # PyTorch's text
    assert e[2].split("Expected:")[1] == t[2].split("Expected:")[1]


# ----- forward-over-reverse (gradgradcheck(check_fwd_over_rev=True)) ----------------------------------

def test_fwd_over_rev_through_saved_output():
    """tan, exp, sigmoid... save their result for backward: forward-over-reverse needs its tangent."""
    x = data(ember)[0]
    for f in (ember.tan, ember.exp, ember.sigmoid, ember.tanh, ember.sqrt):
        assert ember.autograd.gradgradcheck(f, (x.abs().detach().requires_grad_(),), check_fwd_over_rev=True)


# ----- the op database -----------------------------------------------------------------------------------

def _op_cases():
    """Each differentiable op's smallest non-empty sample (every sample under EMBER_SLOW=1)."""
    out = []
    for op in OP_DB:
        if not op.supports_grad:
            continue
        samples = [s for s in op.sample_inputs() if s.args]
        if not SLOW:
            nonempty = [s for s in samples if all(a.size for a in s.args)]
            samples = [min(nonempty, key=lambda s: sum(a.size for a in s.args))] if nonempty else []
        for s in samples:
            out.append(pytest.param(op, s, id=f"{op.name}-{s.desc}"))
    return out


def _op_call(op, sample, m=ember):
    xs = tuple(m.tensor(np.array(a)).requires_grad_() for a in sample.args)

    def f(*args):
        return op.op(m, *args, **sample.kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = f(*xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    diff = [o for o in outs if isinstance(o, m.Tensor) and o.requires_grad]
    if not diff:
        pytest.skip("no differentiable output")
    if not all(bool(m.isfinite(o).all()) for o in diff):
        # allclose without equal_nan, as PyTorch's: gradcheck cannot pass on inf/nan values.
        pytest.skip("non-finite output")
    # Lower-precision outputs (float32/float16 casts) round the central differences.
    tol = {} if all(o.dtype == m.float64 for o in diff) else dict(atol=1e-2, rtol=1e-2)
    return f, xs, dict(eps=op.eps, **tol)


def _check_like_torch(op, sample, check: str, **kw):
    """ember's check passes, or fails exactly as torch's does on the same sample (e.g. the second derivative
    of max at a tie, which central differences cannot see)."""
    def attempt(m):
        f, xs, tol = _op_call(op, sample, m)
        m.manual_seed(0)   # gradgradcheck draws its grad_outputs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return getattr(m.autograd, check)(f, xs, **tol, **kw), None
            except Exception as e:  # noqa: BLE001
                return None, e
    ok, err = attempt(ember)
    if ok:
        return
    _, t_err = attempt(torch)
    assert t_err is not None, f"ember's {check} failed, torch's passes: {err!r}"
    assert type(err).__name__ == type(t_err).__name__, (err, t_err)
    assert str(err).splitlines()[0] == str(t_err).splitlines()[0]


# check_batched_forward_grad (vmap over forward-mode AD): the op-database cases where ember's check fails and
# torch's passes (or fails differently). Strict xfails: delete a line when its case passes.
BATCHED_FWD_GAPS: set = set()


@pytest.mark.parametrize("op,sample", _op_cases())
def test_op_db_gradcheck(op, sample):
    if op.xfail_reason("gradcheck", sample.desc):
        f, xs, kw = _op_call(op, sample)
        with pytest.raises((ember.autograd.GradcheckError, RuntimeError)):
            ember.autograd.gradcheck(f, xs, **kw)
        return
    gap = f"{op.name}-{sample.desc}" in BATCHED_FWD_GAPS
    _check_like_torch(op, sample, "gradcheck", check_forward_ad=op.supports_fwd, check_batched_grad=True,
                      check_batched_forward_grad=op.supports_fwd and not gap)
    if gap:   # the same check with check_batched_forward_grad: a strict expected failure
        try:
            _check_like_torch(op, sample, "gradcheck", check_forward_ad=True, check_batched_grad=True,
                              check_batched_forward_grad=True)
        except AssertionError:
            pytest.xfail("check_batched_forward_grad: see BATCHED_FWD_GAPS")
        pytest.fail("a BATCHED_FWD_GAPS case passes: delete its line")


@pytest.mark.parametrize("op,sample", [c for c in _op_cases() if c.values[0].supports_gradgrad])
def test_op_db_gradgradcheck(op, sample):
    """Second derivatives by reverse-over-reverse and forward-over-reverse (Hessian-vector products through
    every op's backward graph, dual tangents through saved tensors). Where torch has no forward AD for an op
    (index_reduce, cholesky) or its check fails (copy_, scatter_reduce prod, triangular_solve, logcumsumexp),
    ember's must still pass: ``_check_like_torch`` consults torch only when ember's check fails."""
    if op.xfail_reason("gradgrad_numeric", sample.desc):
        f, xs, kw = _op_call(op, sample)
        with pytest.raises(ember.autograd.GradcheckError):
            ember.autograd.gradgradcheck(f, xs, **kw)
        return
    _check_like_torch(op, sample, "gradgradcheck", check_fwd_over_rev=True, check_batched_grad=True)


# Known torch defects (torch 2.13): on these samples torch's forward-over-reverse disagrees with its own
# reverse-over-reverse and fails its own gradgradcheck(check_fwd_over_rev=True), while ember's passes.
# ember's Hessian-vector products are compared with torch's reverse-over-reverse ones there.
TORCH_FWD_OVER_REV_WRONG = {
    "logcumsumexp_large": "the tangent of logcumsumexp's backward for large inputs (x * 300): off by ~1e4",
    "scatter_reduce": "the tangent of scatter_reduce(reduce='prod')'s backward (0-d sample): wrong sign",
    "scatter_reduce_zeros": "the tangent of scatter_reduce(reduce='prod', include_self=False)'s backward",
    "triangular_solve": "the tangent of triangular_solve's backward (both inputs)",
}


def _hvp(m, op, sample, reference=False):
    """Forward-over-reverse: the tangents of grad(f(x), x, g) for dual x (tangent u) and dual g (tangent w),
    i.e. H u + J^T w, H the Hessian of <f(x), g>. ``reference``: the same from reverse-over-reverse
    (grad of <grad, u>, H being symmetric, plus J^T w); no forward mode at all."""
    rng = np.random.default_rng(1)
    fw = m.autograd.forward_ad
    us = [rng.standard_normal(a.shape) for a in sample.args]
    with warnings.catch_warnings(), fw.dual_level():
        warnings.simplefilter("ignore")
        leaves = [m.tensor(np.array(a)).requires_grad_() for a in sample.args]
        xs = leaves if reference else [fw.make_dual(x, m.tensor(u)) for x, u in zip(leaves, us)]
        outs = op.op(m, *xs, **sample.kwargs)
        outs = [o for o in (outs if isinstance(outs, tuple) else (outs,)) if isinstance(o, m.Tensor) and o.requires_grad]
        if not outs:
            return None
        gs = [m.tensor(rng.uniform(-1, 1, tuple(o.shape)), dtype=o.dtype) for o in outs]
        ws = [m.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outs]
        if reference:
            grads = m.autograd.grad(outs, xs, gs, create_graph=True, allow_unused=True)
            inner = sum((g * m.tensor(u)).sum() for g, u in zip(grads, us) if g is not None)
            # A piecewise-linear op's gradient may not depend on x at all: H = 0.
            smooth = isinstance(inner, m.Tensor) and inner.requires_grad
            hu = m.autograd.grad(inner, xs, retain_graph=True, allow_unused=True) if smooth else [None] * len(xs)
            jw = m.autograd.grad(outs, xs, ws, allow_unused=True)
            return [None if a is None and b is None else
                    (0 if a is None else a.detach().numpy()) + (0 if b is None else b.detach().numpy())
                    for a, b in zip(hu, jw)]
        gs = [fw.make_dual(g, w) for g, w in zip(gs, ws)]
        grads = m.autograd.grad(outs, xs, gs, create_graph=True, allow_unused=True)
        tans = [None if g is None else fw.unpack_dual(g).tangent for g in grads]
        # force=True: torch's tangent may be a ZeroTensor (sgn), which numpy() refuses otherwise.
        return [None if t is None else t.detach().numpy(force=True).copy() for t in tans]


@pytest.mark.parametrize("op,sample", [c for c in _op_cases() if c.values[0].supports_gradgrad])
def test_op_db_fwd_over_rev_matches_torch(op, sample):
    """ember's forward-over-reverse Hessian-vector product equals torch's on the same sample and tangents
    (at ties too, where central differences cannot tell): torch's forward-over-reverse where it is right,
    else (no forward AD for the op in torch, or TORCH_FWD_OVER_REV_WRONG) torch's reverse-over-reverse."""
    reason = op.xfail_reason("gradgrad", sample.desc)
    if reason:   # a second derivative the op database knows differs from torch's
        pytest.xfail(reason)
    try:
        ours = _hvp(ember, op, sample)
    except NotImplementedError as e:   # no forward AD through the op's backward: torch must have none either
        with pytest.raises(NotImplementedError) as theirs:
            _hvp(torch, op, sample)
        assert str(e).splitlines()[0] == str(theirs.value).splitlines()[0]
        return
    if ours is None:
        pytest.skip("no differentiable output")
    try:
        assert op.name not in TORCH_FWD_OVER_REV_WRONG
        theirs = _hvp(torch, op, sample)
    except (AssertionError, NotImplementedError, RuntimeError):
        theirs = _hvp(torch, op, sample, reference=True)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a = np.zeros(np.shape(sample.args[k])) if a is None else a
        b = np.zeros(np.shape(sample.args[k])) if b is None else b
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7, err_msg=f"tangent of the gradient of input {k}")


def test_float32_warning_from_gradgradcheck_points_at_caller():
    x = ember.randn(3, dtype=ember.float32, requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ember.autograd.gradgradcheck(lambda a: a * a, (x,), eps=1e-2, atol=1e-1, rtol=1e-1)
    ours = [r for r in rec if "double precision" in str(r.message)]
    # x, and the float32 grad_output drawn for its float32 output: inputs #0 and #1 of the checked function.
    assert sorted(str(r.message).split()[1] for r in ours) == ["#0", "#1"]
    assert all(r.filename == __file__ for r in ours)


@functools.lru_cache(maxsize=None)
def fwd_fns(m):
    """Custom Functions with forward mode, in both styles (PyTorch's batched checks run them under its older vmap,
    where neither setup_context nor a vmap rule is needed)."""
    class Sq(m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_forward(a)
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return 2 * a * g

        @staticmethod
        def jvp(ctx, t):
            a, = ctx.saved_tensors
            return 2 * a * t

    class SqS(m.autograd.Function):
        @staticmethod
        def forward(a):
            return a * a

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])
            ctx.save_for_backward(inputs[0])

        backward = Sq.backward
        jvp = Sq.jvp

    class SqG(SqS):
        generate_vmap_rule = True

    calls = [0]

    class Drifting(SqS):   # the tangent drifts from call to call: the batched ones differ from the single ones
        @staticmethod
        def jvp(ctx, t):
            calls[0] += 1
            a, = ctx.saved_tensors
            return (2 + 1e-3 * calls[0]) * a * t
    return {"Sq": Sq, "SqS": SqS, "SqG": SqG, "Drifting": Drifting}


_FWD = dict(check_forward_ad=True, check_batched_forward_grad=True)
BATCHED_FORWARD = {
    "exp": lambda m: gc(m, m.exp, data(m)[:1], **_FWD),
    "two_inputs": lambda m: gc(m, lambda a, b: (a @ b).sin(), data(m)[:2], **_FWD),
    "integer_output": lambda m: gc(m, lambda a: (a.sin(), a.argmax()), data(m)[:1], **_FWD),
    "scalar": lambda m: gc(m, lambda s: s.exp() * 2, data(m)[2:3], **_FWD),
    "constant_input": lambda m: gc(m, lambda a, b: a @ b, (data(m)[0], data(m)[1].detach()), **_FWD),
    "with_batched_grad": lambda m: gc(m, lambda a: a.tanh(), data(m)[:1], check_batched_grad=True, **_FWD),
    "fast": lambda m: gc(m, lambda a: a.sin(), data(m)[:1], fast_mode=True, **_FWD),
    "custom_function_ctx_forward": lambda m: gc(m, fwd_fns(m)["Sq"].apply, data(m)[:1], **_FWD),
    "custom_function_setup_context": lambda m: gc(m, fwd_fns(m)["SqS"].apply, data(m)[:1], **_FWD),
    "custom_function_generate_vmap_rule": lambda m: gc(m, fwd_fns(m)["SqG"].apply, data(m)[:1], **_FWD),
    "custom_function_batched_grad": lambda m: gc(m, fwd_fns(m)["SqG"].apply, data(m)[:1],
                                                 check_batched_grad=True),
    "drifting_tangent": lambda m: gc(m, fwd_fns(m)["Drifting"].apply, data(m)[:1], atol=1e-1, rtol=1e-1,
                                     nondet_tol=1, **_FWD),
    "data_dependent": lambda m: gc(m, lambda a: a * (2 if bool(a.sum() > 0) else 3), data(m)[:1], **_FWD),
    "needs_forward_ad": lambda m: gc(m, m.exp, data(m)[:1], check_batched_forward_grad=True),
}


@pytest.mark.parametrize("name", sorted(BATCHED_FORWARD))
def test_check_batched_forward_grad_as_torch(name):
    """check_batched_forward_grad: vmap over forward-mode AD against one JVP at a time. Same verdicts, same
    messages (the tangents drawn from the global generator, so the numbers printed on failure agree too)."""
    prog = BATCHED_FORWARD[name]

    def with_rng(m):
        m.manual_seed(0)
        r = prog(m)
        return r, m.rand(2).tolist()
    t, e = run(torch, with_rng), run(ember, with_rng)
    if t[0] == "raise" and "data-dependent control flow" in t[2]:
        # the message names the Tensor method torch ran into (`__bool__` ...); the head is PyTorch's text
        assert e[:2] == t[:2] and e[2].split(" We don't")[0] == t[2].split(" We don't")[0]
        return
    assert e == t
    if name == "drifting_tangent":
        assert t[:2] == ("raise", "GradcheckError")


# ----- complex inputs and outputs ---------------------------------------------------------------------
# PyTorch checks a complex output as two real functions (its imaginary part, then its real part) in reverse
# mode, and complex inputs as two real variables (imaginary parts, then real parts) in forward mode; the
# Jacobian w.r.t. a complex input is the conjugate Wirtinger form ds/dx + i ds/dy. Fast mode draws a pair
# (u_r, u_i) for a complex input. Same programs on both libraries: same verdicts, same messages.

@functools.lru_cache(maxsize=None)
def cfns(m):
    """Complex custom Functions (most deliberately wrong) defined against module ``m``."""
    class WrongConj(m.autograd.Function):        # z^2, gradient g * 2z: the conjugate is missing
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            z, = ctx.saved_tensors
            return g * 2 * z

    class MissingImag(m.autograd.Function):      # exp, gradient without its imaginary part
        @staticmethod
        def forward(ctx, z):
            r = z.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            r, = ctx.saved_tensors
            return m.complex((g * r.conj()).real, m.zeros_like(r.real))

    class WrongReal(m.autograd.Function):        # |z|^2 (complex -> real), real part of the gradient doubled
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return (z * z.conj()).real

        @staticmethod
        def backward(ctx, g):
            z, = ctx.saved_tensors
            gz = 2 * g * z
            return m.complex(2 * gz.real, gz.imag)

    class RealToComplexWrong(m.autograd.Function):   # x (1 + 2i) (real -> complex), gradient from Re only
        @staticmethod
        def forward(ctx, x):
            return x * (1 + 2j)

        @staticmethod
        def backward(ctx, g):
            return g.real

    class SquareDetachedBackward(m.autograd.Function):   # first derivative right, second one zero
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            z, = ctx.saved_tensors
            return g * 2 * z.detach().conj()

    class Noisy(m.autograd.Function):            # backward is not deterministic
        @staticmethod
        def forward(ctx, z):
            return z * 3

        @staticmethod
        def backward(ctx, g):
            return g * (3 + m.rand(g.shape, dtype=m.float64) * 1e-9)

    def wrong_tangent(z):
        """2z, whose tangent is conjugated: reverse mode stays right."""
        p, t = m.autograd.forward_ad.unpack_dual(z)
        if t is not None:
            return m.autograd.forward_ad.make_dual(p * 2, t.conj() * 2)
        return z * 2

    return dict(WrongConj=WrongConj, MissingImag=MissingImag, WrongReal=WrongReal, R2C=RealToComplexWrong,
                SquareDetachedBackward=SquareDetachedBackward, Noisy=Noisy, wrong_tangent=wrong_tangent)


def cdata(m):
    m.manual_seed(0)
    z = m.randn(3, 2, dtype=m.complex128, requires_grad=True)
    w = m.randn(2, 2, dtype=m.complex128, requires_grad=True)
    x = m.randn(3, 2, dtype=m.float64, requires_grad=True)
    return z, w, x


def _both_modes(programs: dict) -> dict:
    """Each program in slow and in fast mode."""
    return {f"{name}{'_fast' if fast else ''}": functools.partial(prog, fast_mode=fast)
            for name, prog in programs.items() for fast in (False, True)}


COMPLEX_PASSING = _both_modes({
    "exp": lambda m, **k: gc(m, m.exp, cdata(m)[:1], **k),
    "mul": lambda m, **k: gc(m, m.mul, cdata(m)[:1] + (cdata(m)[0].detach().flip(0).requires_grad_(),), **k),
    "abs": lambda m, **k: gc(m, m.abs, cdata(m)[:1], **k),
    "angle": lambda m, **k: gc(m, m.angle, cdata(m)[:1], **k),
    "matmul": lambda m, **k: gc(m, m.matmul, cdata(m)[:2], **k),
    "fft": lambda m, **k: gc(m, lambda z: m.fft.fft(z, dim=0), cdata(m)[:1], **k),
    "real_to_complex": lambda m, **k: gc(m, lambda x: m.fft.rfft(x, dim=0), cdata(m)[2:], **k),
    "complex_to_real": lambda m, **k: gc(m, lambda z: (z.abs() * z.real).sum(), cdata(m)[:1], **k),
    "mixed": lambda m, **k: gc(m, lambda z, x: (z * x, (z.abs() * x).sum()), (cdata(m)[0], cdata(m)[2]), **k),
    "forward_ad": lambda m, **k: gc(m, lambda z, x: (z.exp() * x, z.abs()), (cdata(m)[0], cdata(m)[2]),
                                    check_forward_ad=True, **k),
    "forward_ad_only": lambda m, **k: gc(m, m.exp, cdata(m)[:1], check_forward_ad=True, check_backward_ad=False,
                                         **k),
    "batched_grad": lambda m, **k: gc(m, m.matmul, cdata(m)[:2], check_batched_grad=True, **k),
    "nondet_tol": lambda m, **k: gc(m, cfns(m)["Noisy"].apply, cdata(m)[:1], nondet_tol=1e-6,
                                    check_undefined_grad=False, **k),
    "gradgrad": lambda m, **k: ggc(m, lambda z: z.exp() * z, cdata(m)[:1], **k),
    "gradgrad_abs": lambda m, **k: ggc(m, m.abs, cdata(m)[:1], **k),
    "gradgrad_noncontiguous": lambda m, **k: ggc(m, lambda z: z.exp() * z, cdata(m)[:1],
                                                 gen_non_contig_grad_outputs=True, **k),
    "gradgrad_given_grad_outputs": lambda m, **k: ggc(m, m.exp, cdata(m)[:1],
                                                      (m.ones(3, 2, dtype=m.complex128, requires_grad=True),), **k),
    "gradgrad_fwd_over_rev": lambda m, **k: ggc(m, lambda z: z.exp() * z, cdata(m)[:1], check_fwd_over_rev=True,
                                                **k),
    "gradgrad_wrong_conj": lambda m, **k: ggc(m, cfns(m)["WrongConj"].apply, cdata(m)[:1], **k),
})


@pytest.mark.parametrize("name", list(COMPLEX_PASSING))
def test_complex_passing_programs(name):
    t, e = run(torch, COMPLEX_PASSING[name]), run(ember, COMPLEX_PASSING[name])
    assert t == ("ok", True), t
    assert e == t


COMPLEX_BAD = _both_modes({
    "wrong_conj": lambda m, **k: gc(m, cfns(m)["WrongConj"].apply, cdata(m)[:1], **k),
    "missing_imag": lambda m, **k: gc(m, cfns(m)["MissingImag"].apply, cdata(m)[:1], **k),
    "wrong_real": lambda m, **k: gc(m, cfns(m)["WrongReal"].apply, cdata(m)[:1], **k),
    "real_to_complex": lambda m, **k: gc(m, cfns(m)["R2C"].apply, cdata(m)[2:], **k),
    "second_output": lambda m, **k: gc(m, lambda z, x: (z.abs() * x, cfns(m)["WrongConj"].apply(z)),
                                       (cdata(m)[0], cdata(m)[2]), **k),
    "forward": lambda m, **k: gc(m, cfns(m)["wrong_tangent"], cdata(m)[:1], check_forward_ad=True,
                                 check_backward_ad=False, **k),
    "forward_second_input": lambda m, **k: gc(m, lambda x, z: cfns(m)["wrong_tangent"](z) * x,
                                              (cdata(m)[2], cdata(m)[0]), check_forward_ad=True,
                                              check_backward_ad=False, **k),
    "gradgrad": lambda m, **k: ggc(m, cfns(m)["SquareDetachedBackward"].apply, cdata(m)[:1], **k),
})

# the part and element PyTorch names first in each failure
_COMPLEX_PREFIX = {
    "wrong_conj": "While considering the imaginary part of complex outputs only, ",
    "missing_imag": "While considering the imaginary part of complex outputs only, ",
    "wrong_real": "",   # a real output: no prefix
    "real_to_complex": "While considering the imaginary part of complex outputs only, ",
    "second_output": "While considering the imaginary part of complex outputs only, ",
    "forward": "While considering the imaginary part of complex inputs only, ",
    "forward_second_input": "While considering the imaginary part of complex inputs only, ",
    "gradgrad": "While considering the imaginary part of complex outputs only, ",   # the first-order grads
}


@pytest.mark.parametrize("name", [n for n in COMPLEX_BAD if not n.endswith("_fast")])
def test_complex_mismatch_message_matches_torch(name):
    """Slow mode: the same GradcheckError, message included (the part considered, both Jacobians)."""
    t, e = run(torch, COMPLEX_BAD[name]), run(ember, COMPLEX_BAD[name])
    assert t[:2] == ("raise", "GradcheckError")
    assert e == t
    assert e[2].startswith(_COMPLEX_PREFIX[name] + "Jacobian ")


@pytest.mark.parametrize("name", [n for n in COMPLEX_BAD if n.endswith("_fast")])
def test_complex_fast_mode_mismatch(name):
    """Fast mode: the same first line, the same projected values (to rounding: ember's float64 sum adds in
    another order), then the same text and slow-mode Jacobians of the failing pair."""
    t, e = run(torch, COMPLEX_BAD[name]), run(ember, COMPLEX_BAD[name])
    assert t[:2] == e[:2] == ("raise", "GradcheckError")
    assert e[2].startswith(_COMPLEX_PREFIX[name[:-len("_fast")]] + "Jacobian ")
    t_head, t_tail = t[2].split("\nanalytical:", 1)
    e_head, e_tail = e[2].split("\nanalytical:", 1)
    t_first, t_num = t_head.split("\nnumerical:", 1)
    e_first, e_num = e_head.split("\nnumerical:", 1)
    assert e_first == t_first
    t_ana, t_rest = t_tail.split("\n\nThe above quantities", 1)
    e_ana, e_rest = e_tail.split("\n\nThe above quantities", 1)
    for tv, ev in ((t_num, e_num), (t_ana, e_ana)):
        if tv.startswith("tensor"):
            assert ev == tv
        else:
            assert complex(ev) == pytest.approx(complex(tv), rel=1e-9, abs=1e-12)
    # The max difference: to rounding (central differences of ember's and PyTorch's complex products may
    # differ in the last bit, which eps magnifies).
    t_rest, t_max = t_rest.split("The max per-element difference (slow mode) is: ")
    e_rest, e_max = e_rest.split("The max per-element difference (slow mode) is: ")
    assert e_rest == t_rest
    assert float(e_max.split(".\n")[0]) == pytest.approx(float(t_max.split(".\n")[0]), rel=1e-6)
    assert e_max.split(".\n", 1)[1] == t_max.split(".\n", 1)[1]


@pytest.mark.parametrize("name", list(COMPLEX_BAD))
def test_complex_raise_exception_false_returns_false(name):
    def prog(m):
        return COMPLEX_BAD[name](_NoRaise(m))
    assert run(torch, prog) == run(ember, prog) == ("ok", False)


COMPLEX_ERRORS = {
    "not_reentrant": lambda m: gc(m, cfns(m)["Noisy"].apply, cdata(m)[:1]),
    "undefined_output_grad_unsupported": lambda m: gc(m, fns(m)["TwoOutNoneUnsafe"].apply, cdata(m)[:1]),
    "not_multiplied_by_grad_output": lambda m: gc(m, fns(m)["NotMulByGrad"].apply, cdata(m)[:1]),
    "depends_but_not_differentiable": lambda m: gc(m, lambda z: z.detach() * 2, cdata(m)[:1]),
    "depends_but_not_differentiable_fast": lambda m: gc(m, lambda z: z.detach() * 2, cdata(m)[:1],
                                                        fast_mode=True),
}


@pytest.mark.parametrize("name", list(COMPLEX_ERRORS))
def test_complex_errors_match_torch(name):
    t, e = run(torch, COMPLEX_ERRORS[name]), run(ember, COMPLEX_ERRORS[name])
    assert t[0] == "raise"
    assert e == t   # the whole message


def test_complex_check_batched_grad_failure_as_torch():
    """A drifting complex backward: the same message (PyTorch's text, the complex grad_outputs drawn from the
    global generator as torch's randn_like draws them); only "Got" differs (torch runs the backward once
    for the batch under vmap, ember once per row)."""
    def prog(m):
        calls = [0]

        class Drifting(m.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                return z * 3

            @staticmethod
            def backward(ctx, g):
                calls[0] += 1
                return g * (3 + 1e-3 * calls[0])
        return gc(m, Drifting.apply, cdata(m)[:1], check_batched_grad=True, nondet_tol=1, atol=1e-1, rtol=1e-1,
                  check_undefined_grad=False)
    t, e = run(torch, prog), run(ember, prog)
    assert t[:2] == e[:2] == ("raise", "GradcheckError")
    assert e[2].split("\nGot:\n")[0] == t[2].split("\nGot:\n")[0]
    assert e[2].split("Expected:")[1] == t[2].split("Expected:")[1]


def test_complex_undefined_tangent_checked_per_part():
    """Forward mode with check_undefined_grad on complex inputs: PyTorch checks the imaginary-part and the
    real-part functions; a tangent that is not zero for an undefined input tangent fails in both."""
    def prog(m):
        def f(z):
            p, t = m.autograd.forward_ad.unpack_dual(z)
            if t is None:   # an undefined tangent must act as zero: this one does not
                try:
                    return m.autograd.forward_ad.make_dual(p * 2, m.ones_like(p))
                except RuntimeError:   # outside a dual level
                    pass
            return z * 2
        return gc(m, f, cdata(m)[:1], check_forward_ad=True, check_backward_ad=False)
    t, e = run(torch, prog), run(ember, prog)
    assert t[:2] == e[:2] == ("raise", "GradcheckError")
    # PyTorch's message is the tuple of its arguments. (Its "Got" tangent prints a grad_fn: torch's mul JVP
    # records zeros * primal + tangent * 2 through the primal requiring grad; ember's records t * 2 alone.)
    assert e[2].split(" Got: ")[0] == t[2].split(" Got: ")[0]
    assert e[2].split("expected: ")[1] == t[2].split("expected: ")[1]
