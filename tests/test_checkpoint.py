"""torch.utils.checkpoint on ember, compared with PyTorch on the same programs.

Each test is written once as ``fn(lib)`` and run with torch and with ember (``same``); ember's random
stream is PyTorch's, so programs with random ops inside the checkpoint compare values too.
"""
import gc
import importlib
import warnings
import weakref

import pytest

import ember
from parity import raises_same, run, same, torch


def cp(lib):
    return importlib.import_module(lib.__name__ + ".utils.checkpoint")


def leaf(lib, data, rg=True, dtype="float32"):
    return lib.tensor(data, dtype=getattr(lib, dtype), requires_grad=rg)


X = [[1.5, -0.5, 2.0], [0.25, -1.25, 0.75]]
W = [[0.5, 1.0], [-2.0, 0.3], [0.7, -0.1]]
MODES = [False, True]


def block(lib, calls=None):
    """A small network piece with a random op inside (its mask must be the same when recomputed)."""
    def f(x, w, scale=1.0):
        if calls is not None:
            calls.append(1)
        h = (x @ w).tanh()
        mask = lib.bernoulli(lib.full_like(h, 0.5))
        return (h * mask + h.pow(2)).sin() * scale
    return f


def raises_checkpoint_error(fn, msg):
    """Both raise their library's CheckpointError (a RuntimeError) with ``msg`` in the message."""
    rt, re_ = run(fn, torch), run(fn, ember)
    assert rt[0] == re_[0] == "err", (rt, re_)
    assert rt[1] is torch.utils.checkpoint.CheckpointError and re_[1] is cp(ember).CheckpointError, (rt, re_)
    assert msg in rt[2] and msg in re_[2], (rt[2], re_[2])


# ----- gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reentrant", MODES)
def test_gradients_equal_with_and_without_checkpoint(reentrant):
    def f(lib):
        lib.manual_seed(0)
        x, w = leaf(lib, X), leaf(lib, W)
        y = cp(lib).checkpoint(block(lib), x, w, use_reentrant=reentrant)
        (y * y).sum().backward()
        got = (y, x.grad, w.grad)
        lib.manual_seed(0)
        x2, w2 = leaf(lib, X), leaf(lib, W)
        y2 = block(lib)(x2, w2)
        (y2 * y2).sum().backward()
        return got, (y2, x2.grad, w2.grad), bool((x.grad == x2.grad).all()), bool((w.grad == w2.grad).all())
    r = same(f)
    assert r[1][1][2] is True and r[1][1][3] is True   # torch: checkpointed == plain, exactly


@pytest.mark.parametrize("reentrant", MODES)
def test_recomputes_once(reentrant):
    def f(lib):
        calls = []
        x, w = leaf(lib, X), leaf(lib, W)
        y = cp(lib).checkpoint(block(lib, calls), x, w, use_reentrant=reentrant)
        n_fwd = len(calls)
        y.sum().backward()
        return n_fwd, len(calls)
    assert same(f)[1] == ("tuple", (1, 2))


def test_recomputes_once_per_backward_with_retain_graph():
    def f(lib):
        calls = []
        x, w = leaf(lib, X), leaf(lib, W)
        y = cp(lib).checkpoint(block(lib, calls), x, w, use_reentrant=False)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        return len(calls), x.grad
    same(f)


def test_autograd_grad_non_reentrant():
    def f(lib):
        lib.manual_seed(1)
        x, w = leaf(lib, X), leaf(lib, W)
        y = cp(lib).checkpoint(block(lib), x, w, use_reentrant=False)
        return lib.autograd.grad(y.sum(), (x, w))
    same(f)


def test_autograd_grad_reentrant_refused():
    def f(lib):
        x, w = leaf(lib, X), leaf(lib, W)
        y = cp(lib).checkpoint(block(lib), x, w, use_reentrant=True)
        lib.autograd.grad(y.sum(), x)
    raises_same(f, msg="When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing "
                       "an `inputs` parameter to .backward().")


def test_backward_inputs_reentrant_refused():
    def f(lib):
        x, w = leaf(lib, X), leaf(lib, W)
        y = cp(lib).checkpoint(block(lib), x, w, use_reentrant=True)
        y.sum().backward(inputs=(w,))
    raises_same(f, msg="incompatible with .grad() or passing an `inputs` parameter")


def test_double_backward_non_reentrant():
    def f(lib):
        x, w = leaf(lib, X, dtype="float64"), leaf(lib, W, dtype="float64")

        def g(a, b):
            return ((a @ b).tanh() * a.sum(1, keepdim=True)).exp()
        y = cp(lib).checkpoint(g, x, w, use_reentrant=False)
        gx, = lib.autograd.grad(y.pow(2).sum(), x, create_graph=True)
        gw, = lib.autograd.grad(gx.sin().sum(), w, create_graph=True)
        gxx, = lib.autograd.grad(gw.sum(), x)
        return gx, gw, gxx
    same(f, rtol=1e-9)


def test_nested_checkpoints():
    def f(lib):
        calls = []
        x, w = leaf(lib, X), leaf(lib, W)
        c = cp(lib).checkpoint

        def inner(a):
            calls.append("inner")
            return a.sin() * a

        def outer(a, b):
            calls.append("outer")
            return c(inner, a @ b, use_reentrant=False).exp()
        y = c(outer, x, w, use_reentrant=False)
        y.sum().backward()
        return calls, x.grad, w.grad
    same(f)


def test_checkpoint_sequential():
    def f(lib):
        x = leaf(lib, X)
        fns = [lib.sin, lambda t: t * 2, lib.tanh, lib.exp, lambda t: t.pow(3), lib.cos]
        out = []
        for reentrant in MODES:
            x.grad = None
            y = cp(lib).checkpoint_sequential(fns, 3, x, use_reentrant=reentrant)
            y.sum().backward()
            out += [y, x.grad]
        return out
    same(f)


# ----- arguments and outputs ---------------------------------------------------------------------

def test_kwargs_and_non_tensor_args_and_outputs():
    def f(lib):
        x, w = leaf(lib, X), leaf(lib, W)

        def g(a, n, b, *, scale, tag):
            return {"tag": tag, "n": n}, (a @ b) * scale + n
        meta, y = cp(lib).checkpoint(g, x, 3, w, scale=0.5, tag="t", use_reentrant=False)
        y.sum().backward()
        return meta, y, x.grad, w.grad
    same(f)


def test_reentrant_non_tensor_args_and_outputs():
    def f(lib):
        x, w = leaf(lib, X), leaf(lib, W)

        def g(a, n, b):
            return (a @ b) * n, n + 1
        y, m = cp(lib).checkpoint(g, x, 3, w, use_reentrant=True)
        y.sum().backward()
        return m, y, x.grad, w.grad
    same(f)


def test_reentrant_rejects_kwargs():
    def f(lib):
        x = leaf(lib, X)
        cp(lib).checkpoint(lambda a, s: a * s, x, s=2, use_reentrant=True)
    raises_same(f, msg="Unexpected keyword arguments: s", exact_msg=True)


def test_reentrant_rejects_context_fn_and_debug():
    def f(lib):
        x = leaf(lib, X)
        cp(lib).checkpoint(lambda a: a * 2, x, use_reentrant=True, debug=True)
    raises_same(f, msg="Passing `context_fn` or `debug` is only supported when use_reentrant=False.", exact_msg=True)


def test_bad_determinism_check():
    def f(lib):
        x = leaf(lib, X)
        cp(lib).checkpoint(lambda a: a * 2, x, use_reentrant=False, determinism_check="strict")
    raises_same(f, msg="determinism_check should be one of ['default', 'none'], but got strict", exact_msg=True)


def test_no_input_requires_grad_reentrant_warns_and_output_has_no_grad():
    def f(lib):
        x = leaf(lib, X, rg=False)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            y = cp(lib).checkpoint(lambda a: a.sin(), x, use_reentrant=True)
        return [(r.category.__name__, str(r.message)) for r in rec], y.requires_grad, y
    same(f)


def test_under_no_grad():
    def f(lib):
        x, w = leaf(lib, X), leaf(lib, W)
        with lib.no_grad():
            y = cp(lib).checkpoint(lambda a, b: (a @ b).exp(), x, w, use_reentrant=False)
        return y.requires_grad, y.grad_fn is None, y
    same(f)


def test_context_fn():
    def f(lib):
        log = []

        class Ctx:
            def __init__(self, name):
                self.name = name

            def __enter__(self):
                log.append("enter " + self.name)

            def __exit__(self, *exc):
                log.append("exit " + self.name)
        x = leaf(lib, X)
        y = cp(lib).checkpoint(lambda a: a.sin().exp(), x, use_reentrant=False,
                               context_fn=lambda: (Ctx("forward"), Ctx("recompute")))
        y.sum().backward()
        return log, x.grad
    same(f)


# ----- the use_reentrant warning -----------------------------------------------------------------

def _warnings_of(call):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        call()
    return [(r.category.__name__, str(r.message)) for r in rec]


def test_use_reentrant_not_passed_warns_and_defaults_to_reentrant():
    def f(lib):
        x = leaf(lib, X)
        out = []
        ws = _warnings_of(lambda: out.append(cp(lib).checkpoint(lambda a: a.sin(), x)))
        return ws, out[0].grad_fn.name()
    r = same(f)
    assert "use_reentrant parameter should be passed explicitly" in r[1][1][0][1][0][1][1]


def test_checkpoint_sequential_use_reentrant_not_passed_warns():
    def f(lib):
        x = leaf(lib, X)
        return _warnings_of(lambda: cp(lib).checkpoint_sequential([lib.sin, lib.cos], 2, x))
    same(f)


def test_warning_points_at_the_caller():
    x = ember.tensor(X, requires_grad=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cp(ember).checkpoint(lambda a: a.sin(), x)
    assert rec[0].filename == __file__


# ----- random ops --------------------------------------------------------------------------------

@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("preserve", [True, False])
def test_rng_state(reentrant, preserve):
    # with preserve_rng_state the recomputed mask is the first one: the gradient is the plain gradient;
    # without it, the recomputation draws the next numbers (same in both libraries: the same stream)
    def f(lib):
        lib.manual_seed(3)
        x = leaf(lib, [[0.1 * i for i in range(8)]])

        def g(a):
            return a * lib.bernoulli(lib.full_like(a, 0.5)) + lib.rand_like(a)
        y = cp(lib).checkpoint(g, x, use_reentrant=reentrant, preserve_rng_state=preserve)
        after_forward = lib.rand(2)
        y.sum().backward()
        after_backward = lib.rand(2)
        return y, x.grad, after_forward, after_backward
    same(f)


# ----- errors ------------------------------------------------------------------------------------

def test_recomputation_saving_a_different_number_of_tensors():
    def f(lib):
        x = leaf(lib, X)
        state = {"n": 0}

        def g(a):
            state["n"] += 1
            return a.sin().exp() if state["n"] == 1 else a.exp()   # the rerun saves fewer tensors
        y = cp(lib).checkpoint(g, x, use_reentrant=False)
        y.sum().backward()
    raises_checkpoint_error(f, "torch.utils.checkpoint: A different number of tensors was saved during the "
                               "original forward and recomputation.\nNumber of tensors saved during forward: 2\n"
                               "Number of tensors saved during recomputation: 1.")


def test_recomputation_with_different_metadata():
    def f(lib):
        x = leaf(lib, X)
        state = {"n": 0}

        def g(a):
            state["n"] += 1
            return a.exp() if state["n"] == 1 else a[:1].exp()
        y = cp(lib).checkpoint(g, x, use_reentrant=False)
        y.sum().backward()
    raises_checkpoint_error(f, "Recomputed values for the following tensors have different metadata than during "
                               "the forward pass.")


def test_recomputation_saving_more_tensors_stops_early():
    # with early stop (the default) the rerun stops once it has saved as many tensors as the forward:
    # PyTorch does not notice that they are other tensors (same metadata): ember does the same
    def f(lib):
        x = leaf(lib, X)
        state = {"n": 0}

        def g(a):
            state["n"] += 1
            return a.exp() if state["n"] == 1 else a.sin().exp()
        y = cp(lib).checkpoint(g, x, use_reentrant=False)
        y.sum().backward()
        return x.grad
    same(f)


def test_recomputation_saving_more_tensors_without_early_stop():
    def f(lib):
        x = leaf(lib, X)
        state = {"n": 0}

        def g(a):
            state["n"] += 1
            return a.exp() if state["n"] == 1 else a.sin().exp()
        with cp(lib).set_checkpoint_early_stop(False):
            y = cp(lib).checkpoint(g, x, use_reentrant=False)
        y.sum().backward()
    raises_checkpoint_error(f, "torch.utils.checkpoint: trying to save more tensors during recomputation than "
                               "during the original forward pass.")


def test_determinism_check_none_skips_metadata():
    def f(lib):
        x = leaf(lib, X)
        state = {"n": 0}

        def g(a):
            state["n"] += 1
            return a.exp() if state["n"] == 1 else (a + 1).exp()
        y = cp(lib).checkpoint(g, x, use_reentrant=False, determinism_check="none")
        y.sum().backward()
        return x.grad   # the recomputed (different) result is what backward uses
    same(f)


def test_checkpoint_error_class():
    assert issubclass(cp(ember).CheckpointError, RuntimeError)


# ----- memory ------------------------------------------------------------------------------------

def _alive_intermediates(lib, reentrant):
    """Weak references to the tensors the checkpointed function makes in its first run, taken after
    the forward returns: how many are still alive (held for backward)."""
    refs = []

    def g(a, b):
        h1 = (a @ b)
        h2 = h1.tanh()
        h3 = h2.exp()
        h4 = h3 * h2
        if not refs:
            refs.extend(weakref.ref(t) for t in (h1, h2, h3))
        return h4.sum(1)
    x, w = leaf(lib, X), leaf(lib, W)
    if reentrant is None:
        y = g(x, w)
    else:
        y = cp(lib).checkpoint(g, x, w, use_reentrant=reentrant)
    gc.collect()
    alive = sum(r() is not None for r in refs)
    y.sum().backward()
    return alive, x.grad


@pytest.mark.parametrize("reentrant", [None] + MODES)
def test_intermediates_are_not_kept(reentrant):
    def f(lib):
        return _alive_intermediates(lib, reentrant)
    alive = same(f)[1][1][0]
    # plain: tanh's and exp's outputs are saved (their backward reads them); checkpointed: nothing is kept
    assert alive == (2 if reentrant is None else 0)


def test_saved_values_are_holders_released_after_backward():
    # inside the checkpoint each saved tensor is replaced by a small holder; backward frees it
    from ember.autograd.graph import FREED
    x = ember.tensor(X, requires_grad=True)
    w = ember.tensor(W, requires_grad=True)
    y = cp(ember).checkpoint(lambda a, b: (a @ b).tanh().exp(), x, w, use_reentrant=False)
    fn = y.grad_fn
    assert type(fn._out._packed).__name__ == "_Holder"   # exp's saved result
    holder = weakref.ref(fn._out._packed)
    y.sum().backward()
    assert fn._saved is FREED and fn._out is None and holder() is None

@pytest.mark.parametrize("reentrant", MODES)
def test_custom_function_inside_checkpoint(reentrant):
    def f(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 3 * x * x * g
        calls = []
        x, w = leaf(lib, X), leaf(lib, W)

        def g(a, b):
            calls.append(1)
            return Cube.apply((a @ b).sin()).sum(0)
        y = cp(lib).checkpoint(g, x, w, use_reentrant=reentrant)
        y.sum().backward()
        return len(calls), x.grad, w.grad
    same(f)


@pytest.mark.parametrize("reentrant", MODES)
def test_parameters_captured_by_the_function(reentrant):
    # only the closure's weight requires grad: non-reentrant gives its gradient; reentrant (as in PyTorch)
    # builds no graph when no input requires grad
    def f(lib):
        x = leaf(lib, X, rg=False)
        w = leaf(lib, W)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = cp(lib).checkpoint(lambda a: (a @ w).tanh().exp(), x, use_reentrant=reentrant)
        if not y.requires_grad:
            return "no graph", y
        y.sum().backward()
        return y, w.grad
    same(f)
