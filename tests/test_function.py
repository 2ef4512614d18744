"""Custom autograd Functions, the full API, against PyTorch on the same programs (tests/parity.py)."""
import gc
import warnings
import weakref

import pytest

import ember
from parity import raises_same, same


def names(fn):
    """next_functions of a node as names (comparable across libraries)."""
    return tuple((None if n is None else type(n).__name__, nr) for n, nr in fn.next_functions)


def caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(x.category.__name__, str(x.message)) for x in w]


# ----- inputs and outputs ------------------------------------------------------------------------

def test_non_tensor_and_none_outputs():
    def f(lib):
        seen = []

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, 3, x * 3, None

            @staticmethod
            def backward(ctx, g1, g2, g3, g4):
                seen.append((g1, g2, g3, g4))
                return g1 * 2 + g3 * 3

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b, c, d = F.apply(x)
        a.sum().backward()
        return seen, x.grad, b, d, c.grad_fn is a.grad_fn, a.output_nr, c.output_nr, names(a.grad_fn)
    same(f)


def test_non_tensor_inputs_have_no_edge_and_kwargs():
    def f(lib):
        class KW(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k, y, scale=2.0, w=None):
                ctx.scale = scale
                log.append(ctx.needs_input_grad)
                return x * scale * k + y + w

            @staticmethod
            def backward(ctx, g):
                return g * ctx.scale, None, g, None, g * 10

        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([1.0, 1.0], requires_grad=True)
        w = lib.tensor([1.0, 1.0], requires_grad=True)
        z = KW.apply(x, 3, y, w=w, scale=0.5)
        z.sum().backward()
        return z, x.grad, y.grad, w.grad, names(z.grad_fn), log
    same(f)


def test_input_returned_as_is_is_a_view():
    def f(lib):
        class Id(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = lib.ones(2)
        y = Id.apply(x)
        r1 = (y is x, y._base is x, y.requires_grad)
        x = lib.ones(2, requires_grad=True)
        y = Id.apply(x)
        r2 = (y is x, y._base is x, type(y.grad_fn).__name__, y._version)
        y.sum().backward()
        return r1, r2, x.grad
    same(f)


def test_mark_non_differentiable_and_integer_outputs():
    def f(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                m = x * 2
                ctx.mark_non_differentiable(m)
                return x * 3, m, (x > 0).long()

            @staticmethod
            def backward(ctx, g1, g2, g3):
                return g1 * 3 + g2

        x = lib.tensor([1.0, -2.0], requires_grad=True)
        a, m, i = F.apply(x)
        (a.sum()).backward()
        return x.grad, m.requires_grad, m.grad_fn, i.requires_grad, a.requires_grad
    same(f)


# ----- what backward returns --------------------------------------------------------------------

def _returning(lib, value_fn, n_inputs=1):
    class R(lib.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            return args[0] * 2

        @staticmethod
        def backward(ctx, g):
            return value_fn(lib, g)
    return R


def test_gradient_for_tensor_that_needs_none_is_dropped():
    def f(lib):
        a = lib.ones(2, requires_grad=True)
        b = lib.ones(2)
        _returning(lib, lambda L, g: (g, g)).apply(a, b).sum().backward()
        return a.grad, b.grad
    same(f)


def test_gradient_for_non_tensor_input():
    def f(lib):
        a = lib.ones(2, requires_grad=True)
        _returning(lib, lambda L, g: (g, g)).apply(a, 2.0).sum().backward()
    raises_same(f, msg="returned a gradient different than None at position 2, but the corresponding forward input "
                       "was not a Variable")


@pytest.mark.parametrize("case", ["wrong-shape", "broadcast", "float64", "int64", "float", "too-many", "too-few",
                                  "extra-nones"])
def test_returned_gradient_checks(case):
    makers = {
        "wrong-shape": lambda L, g: L.ones(3),
        "broadcast": lambda L, g: L.ones(4, 2),
        "float64": lambda L, g: L.ones(2, dtype=L.float64),
        "int64": lambda L, g: L.ones(2, dtype=L.int64),
        "float": lambda L, g: 3.0,
        "too-many": lambda L, g: (g, g),
        "too-few": lambda L, g: (),
        "extra-nones": lambda L, g: (g, None, None),
    }

    def f(lib):
        a = lib.ones(2, requires_grad=True)
        _returning(lib, makers[case]).apply(a).sum().backward()
        return a.grad, a.grad.dtype
    same(f)


def test_returned_gradient_messages_name_the_function():
    def shape(lib):
        a = lib.ones(2, requires_grad=True)
        _returning(lib, lambda L, g: L.ones(3)).apply(a).sum().backward()
    raises_same(shape, msg="Function RBackward returned an invalid gradient at index 0 - got [3] but expected shape "
                           "compatible with [2]")

    def count(lib):
        a = lib.ones(2, requires_grad=True)
        _returning(lib, lambda L, g: (g, g)).apply(a).sum().backward()
    raises_same(count, msg="function RBackward returned an incorrect number of gradients (expected 1, got 2)")


def test_gradient_cast_is_differentiable_under_create_graph():
    def f(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 2

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return (2 * x * g).double().expand(3, 2)

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        g, = lib.autograd.grad(F.apply(x).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg
    same(f)


def test_materialize_grads():
    def f(lib, materialize):
        seen = []

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x.clone(), x.clone()

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1, g2))
                return g1 if g2 is None else g1 + g2

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, _ = F.apply(x)
        a.sum().backward()
        return seen, x.grad
    same(lambda lib: f(lib, True))
    same(lambda lib: f(lib, False))


# ----- saved tensors --------------------------------------------------------------------------------

def test_saved_tensors_freed_and_retained():
    def f(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 2

        x = lib.ones(2, requires_grad=True)
        y = F.apply(x)
        y.sum().backward()
        return y.grad_fn.saved_tensors
    raises_same(f, msg="Trying to backward through the graph a second time")

    def g(lib):
        x = lib.ones(2, requires_grad=True)
        y = lib.autograd.Function  # noqa: F841
        return x
    same(g)


def test_saving_intermediates_and_non_tensors_rejected():
    def f(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                e = x.exp()
                ctx.save_for_backward(e, None)
                return e * 2

            @staticmethod
            def backward(ctx, g):
                e, n = ctx.saved_tensors
                return g * 2 * e

        x = lib.tensor([0.5, 1.0], requires_grad=True)
        F.apply(x).sum().backward()
        return x.grad
    same(f)

    def bad(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        F.apply(lib.ones(2, requires_grad=True))
    raises_same(bad, msg="save_for_backward can only save variables, but argument 1 is of type int")


# ----- once_differentiable ----------------------------------------------------------------------------

def make_once(lib):
    from importlib import import_module
    once = import_module(lib.__name__ + ".autograd.function").once_differentiable

    class O(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 2

        @staticmethod
        @once
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 2 * a
    return O


def test_once_differentiable():
    def plain(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        g, = lib.autograd.grad(make_once(lib).apply(a).sum(), a, create_graph=True)
        return g, g.grad_fn, g.requires_grad
    same(plain)

    def delayed(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        go = lib.ones(2, requires_grad=True)
        g, = lib.autograd.grad(make_once(lib).apply(a), a, go, create_graph=True)
        return g, type(g.grad_fn).__name__, g.grad_fn.name(), names(g.grad_fn), str(g)
    same(delayed)

    def twice(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        go = lib.ones(2, requires_grad=True)
        g, = lib.autograd.grad(make_once(lib).apply(a), a, go, create_graph=True)
        g.sum().backward()
    raises_same(twice, msg="trying to differentiate twice a function that was marked with @once_differentiable")


def test_instantiating_a_function():
    def f(lib):
        O = make_once(lib)
        o, w = caught(lambda: O())
        try:
            o(lib.ones(1))
        except RuntimeError as e:
            return w[0][0], w[0][1][-80:], str(e)
    same(f)


def test_backward_and_vjp_both_defined():
    def f(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vjp(ctx, g):
                return g
        F.apply(lib.ones(1, requires_grad=True)).backward()
    raises_same(f, msg="Implementing both 'backward' and 'vjp'")

    def vjp_only(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def vjp(ctx, g):
                return g * 5
        x = lib.ones(1, requires_grad=True)
        F.apply(x).backward()
        return x.grad
    same(vjp_only)


# ----- setup_context style -----------------------------------------------------------------------------

def make_linear(lib, log):
    class LinearFunction(lib.autograd.Function):
        @staticmethod
        def forward(input, weight, bias=None):
            out = input @ weight.t()
            if bias is not None:
                out = out + bias
            return out

        @staticmethod
        def setup_context(ctx, inputs, output):
            log.append((len(inputs), [type(i).__name__ for i in inputs], lib.is_grad_enabled(),
                        output.requires_grad))
            input, weight, bias = inputs
            ctx.save_for_backward(input, weight, bias)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            gi = gw = gb = None
            if ctx.needs_input_grad[0]:
                gi = grad_output @ weight
            if ctx.needs_input_grad[1]:
                gw = grad_output.t() @ input
            if bias is not None and ctx.needs_input_grad[2]:
                gb = grad_output.sum(0)
            return gi, gw, gb
    return LinearFunction


def test_setup_context_linear_with_optional_bias():
    def f(lib):
        log = []
        Lin = make_linear(lib, log)
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        w = lib.arange(8.0).reshape(2, 4).requires_grad_()
        Lin.apply(x, w).sum().backward()
        r = [x.grad.clone(), w.grad.clone()]
        b = lib.zeros(2, requires_grad=True)
        y = Lin.apply(x, w, bias=b)
        y.sum().backward()
        return log, r, b.grad, names(y.grad_fn), type(y.grad_fn).__name__
    same(f)


def test_setup_context_double_backward():
    def f(lib):
        Lin = make_linear(lib, [])
        x = lib.tensor([[1.0, 2.0]], requires_grad=True)
        w = lib.tensor([[0.5, -1.0], [2.0, 1.0]], requires_grad=True)
        y = Lin.apply(x, w)
        g, = lib.autograd.grad((y ** 2).sum(), w, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg
    same(f)


# ----- mark_dirty -------------------------------------------------------------------------------------

def make_inplace(lib, log=None):
    class Inplace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, xt):
            xt.mul_(2)
            return xt
    return Inplace


def test_mark_dirty():
    def leaf(lib):
        make_inplace(lib).apply(lib.ones(2, requires_grad=True))
    raises_same(leaf, msg="a leaf Variable that requires grad has been used in an in-place operation.")

    def ok(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a.clone()
        c = make_inplace(lib).apply(b)
        r = (c is b, type(b.grad_fn).__name__, b._version, b)
        c.sum().backward()
        return r, a.grad
    same(ok)

    def version_check(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a.clone()
        e = b.sin()
        make_inplace(lib).apply(b)
        e.sum().backward()
    raises_same(version_check, msg="which is output 0 of Inplace, is at version 2; expected version 0 instead.")

    def view(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a.clone()
        v = b[:1]
        r = make_inplace(lib).apply(v)
        out = (r is v, type(b.grad_fn).__name__, b)
        b.sum().backward()
        return out, a.grad
    same(view)

    def no_grad_version(lib):
        x = lib.ones(2)
        make_inplace(lib).apply(x)
        return x, x._version
    same(no_grad_version)

    def not_returned(lib):
        class D(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x * 1

            @staticmethod
            def backward(ctx, g):
                return g
        D.apply(lib.ones(2, requires_grad=True).clone())
    raises_same(not_returned, msg="Some elements marked as dirty during the forward method were not returned")


# ----- forward mode -----------------------------------------------------------------------------------

def make_square_jvp(lib, log):
    class Sq(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            ctx.k = k
            return x ** 2 * k

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x * ctx.k, None

        @staticmethod
        def jvp(ctx, xt, kt):
            x, = ctx.saved_tensors
            log.append((xt, kt, lib.is_grad_enabled()))
            return 2 * x * xt * ctx.k
    return Sq


def fw(lib):
    from importlib import import_module
    return import_module(lib.__name__ + ".autograd.forward_ad")


def test_jvp():
    def f(lib):
        log = []
        F = fw(lib)
        with F.dual_level():
            x = F.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 1.0]))
            y = make_square_jvp(lib, log).apply(x, 3.0)
            return log, F.unpack_dual(y).tangent
    same(f)

    def reverse_over_forward(lib):
        F = fw(lib)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with F.dual_level():
            xd = F.make_dual(x, lib.ones(2))
            t = F.unpack_dual(make_square_jvp(lib, []).apply(xd, 2.0)).tangent
            t.sum().backward()
            return t, x.grad
    same(reverse_over_forward)


def test_jvp_zero_tangent_for_plain_tensor_input():
    def f(lib):
        log = []
        F = fw(lib)

        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_forward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g, g

            @staticmethod
            def jvp(ctx, at, bt):
                log.append((at, bt))
                a, b = ctx.saved_tensors
                return at * b + a * bt

        with F.dual_level():
            x = F.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 1.0]))
            y = Mul.apply(x, lib.tensor([5.0, 6.0]))
            return log, F.unpack_dual(y).tangent
    same(f)


def test_jvp_errors():
    def missing(lib):
        F = fw(lib)

        class NoJ(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        with F.dual_level():
            NoJ.apply(lib.ones(2))   # no tangent: fine
            NoJ.apply(F.make_dual(lib.ones(2), lib.ones(2)))
    raises_same(missing, msg="You must implement the jvp function for custom autograd.Function to use it with "
                             "forward mode AD.")

    def shape(lib):
        F = fw(lib)

        class B(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def jvp(ctx, at):
                return lib.ones(3)

        with F.dual_level():
            B.apply(F.make_dual(lib.ones(2), lib.ones(2)))
    raises_same(shape, msg="Trying to set a forward gradient that has a different size")

    def count(lib):
        F = fw(lib)

        class B(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2, a * 3

            @staticmethod
            def backward(ctx, g, h):
                return g

            @staticmethod
            def jvp(ctx, at):
                return at

        with F.dual_level():
            B.apply(F.make_dual(lib.ones(2), lib.ones(2)))
    raises_same(count, msg="Function's jvp returned an invalid number of forward gradients (expected 2 but got 1)")


def test_jvp_mark_dirty():
    def f(lib):
        F = fw(lib)
        with F.dual_level():
            x = F.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 1.0]))
            y = make_inplace(lib).apply(x)
            return F.unpack_dual(y), y is x
    same(f)


def test_forward_over_reverse_through_a_function_saving_its_output():
    def f(lib):
        F = fw(lib)

        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                r = a.exp()
                ctx.save_for_backward(r)
                return r

            @staticmethod
            def backward(ctx, g):
                r, = ctx.saved_tensors
                return g * r

            @staticmethod
            def jvp(ctx, at):
                return at * ctx.out

        class Exp2(Exp):
            @staticmethod
            def forward(ctx, a):
                r = a.exp()
                ctx.save_for_backward(r)
                ctx.out = r
                return r

        x = lib.tensor([0.5, 1.0], requires_grad=True)
        with F.dual_level():
            xd = F.make_dual(x, lib.tensor([1.0, 0.0]))
            y = Exp2.apply(xd).sum()
            g, = lib.autograd.grad(y, x, create_graph=True)
            return F.unpack_dual(g).tangent   # H v = exp(x) * v
    same(f)


# ----- double backward through Functions (PyTorch's tutorial cases) ----------------------------------

def test_function_returning_intermediates_as_outputs():
    def f(lib):
        class ExpWithIntermediate(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                e = x.exp()
                out = e * 2
                ctx.save_for_backward(e)
                ctx.mark_non_differentiable(e)
                return out, e

            @staticmethod
            def backward(ctx, g_out, g_e):
                e, = ctx.saved_tensors
                return g_out * 2 * e

        x = lib.tensor([0.1, 0.2], requires_grad=True)
        out, e = ExpWithIntermediate.apply(x)
        g, = lib.autograd.grad(out.sum(), x, create_graph=True)
        return g, g.requires_grad, e.requires_grad
    same(f)


def test_function_whose_backward_is_another_function():
    def f(lib):
        class CubeBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, grad_output, x):
                ctx.save_for_backward(x, grad_output)
                return grad_output * 3 * x ** 2

            @staticmethod
            def backward(ctx, grad_output):
                x, dout = ctx.saved_tensors
                return grad_output * 3 * x ** 2, grad_output * dout * 6 * x

        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, grad_output):
                x, = ctx.saved_tensors
                return CubeBackward.apply(grad_output, x)

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        g, = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg, type(g.grad_fn).__name__
    same(f)


# ----- no reference cycles ----------------------------------------------------------------------------

def test_ctx_attribute_holding_the_output_is_no_cycle():
    class F(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.out = out
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g * ctx.out

    gc.collect()
    gc.disable()
    try:
        x = ember.tensor([0.5, 1.0], requires_grad=True)
        y = F.apply(x)
        node_ref, out_ref = weakref.ref(y.grad_fn), weakref.ref(y)
        y.sum().backward()
        assert x.grad.tolist() == pytest.approx(y.detach().tolist())
        del y
        assert node_ref() is None and out_ref() is None, "a ctx attribute holding the output leaks a cycle"
    finally:
        gc.enable()


# ----- Variable ----------------------------------------------------------------------------------------

def test_variable():
    def f(lib):
        V = lib.autograd.Variable
        t = lib.ones(2)
        v = V(t, requires_grad=True)
        r = (v, v is t, v.requires_grad, t.requires_grad, isinstance(t, V), type(v) is type(t))
        u = lib.ones(2, requires_grad=True) * 2
        w = V(u)
        vol, warn = caught(lambda: V(t, volatile=True))
        return r, w.grad_fn, w.requires_grad, warn, vol.requires_grad, V().shape
    same(f)

    raises_same(lambda lib: lib.autograd.Variable([1, 2]), msg="Variable data has to be a tensor, but got list")


# ----- forward-mode levels ------------------------------------------------------------------------------

def test_dual_levels():
    def nested(lib):
        F = fw(lib)
        with F.dual_level():
            with F.dual_level():
                pass
    raises_same(nested, msg="Nested forward mode AD is not supported at the moment")

    def outlive(lib):
        F = fw(lib)
        with F.dual_level():
            d = F.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 1.0]))
            y = d.sin()
            z = y * 2
            z.mul_(3)
            w = z[:1]
        with F.dual_level():
            return [F.unpack_dual(t).tangent for t in (d, y, z, w)], F.unpack_dual(y * 2).tangent
    same(outlive)

    def plain(lib):
        F = fw(lib)
        x = lib.ones(2)
        out = F.unpack_dual(x).primal is x
        with F.dual_level() as lvl:
            u = F.unpack_dual(x)
            return out, lvl, u.primal is x, u.primal._base is x, u.tangent
    same(plain)

    def exits(lib):
        F = fw(lib)
        lvl = F.enter_dual_level()
        try:
            F.exit_dual_level(level=lvl + 3)
        finally:
            F.exit_dual_level(level=lvl)
    raises_same(exits, msg="Trying to exit a forward AD level that was not the last one that was created")

    raises_same(lambda lib: fw(lib).make_dual(lib.ones(1), lib.ones(1)), msg="no level exists")

    def dual_of_dual(lib):
        F = fw(lib)
        with F.dual_level():
            d = F.make_dual(lib.ones(2), lib.ones(2))
            F.make_dual(d, lib.ones(2))
    raises_same(dual_of_dual, msg="Making a dual Tensor based on a Tensor that already has a forward gradient")


def test_tangents_through_in_place_ops_and_stale_views():
    def f(lib):
        F = fw(lib)
        with F.dual_level():
            ad = F.make_dual(lib.ones(3), lib.arange(3.0))
            b = lib.full((3,), 2.0)
            b.mul_(ad)
            base = lib.zeros(4)
            v = base[1:3]
            v.copy_(F.make_dual(lib.ones(2), lib.tensor([5.0, 7.0])))
            # (torch's tangents alias each other and change with later in-place ops: keep copies)
            r = [F.unpack_dual(t).tangent.clone() for t in (b, base, v)]
            w = base[:2]
            base.add_(F.make_dual(lib.ones(4), lib.ones(4)))
            r.append(F.unpack_dual(w).tangent.clone())
            ww = base[2:]
            ww.mul_(F.make_dual(lib.full((2,), 3.0), lib.ones(2)))
            r += [F.unpack_dual(base).tangent.clone(), F.unpack_dual(w).tangent.clone(),
                  F.unpack_dual((w * 1).sin()).tangent]
            with lib.no_grad():
                base.add_(F.make_dual(lib.ones(4), lib.ones(4)))
                r.append(F.unpack_dual(w * 2).tangent)
            return r
    same(f)


def test_forward_over_reverse_hessian_vector_products():
    def f(lib):
        F = fw(lib)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with F.dual_level():
            xd = F.make_dual(x, lib.tensor([1.0, 0.0]))
            out = []
            for fn in (lambda t: (t ** 3).sum(), lambda t: (t.exp() * t.sin()).sum(),
                       lambda t: t.tanh().prod(), lambda t: (t.sigmoid() @ t.sqrt()).log()):
                g, = lib.autograd.grad(fn(xd), x, create_graph=True)
                out.append(F.unpack_dual(g).tangent)
            return out
    same(f)


# ----- numpy() inside forward, and ctx attributes (issue 16, item 3) -------------------------------

def test_numpy_of_input_that_requires_grad_where_grad_mode_is_off():
    """PyTorch refuses numpy() of a tensor that requires grad only while grad mode is on: inside a custom
    Function's forward (PyTorch's docs on ctx.mark_dirty), under no_grad and inference_mode it works."""
    def dirty(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                x_npy = x.numpy()   # as PyTorch's docs: x_npy shares storage with x
                x_npy *= 2
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2
        a = lib.ones(2, requires_grad=True)
        y = Twice.apply(a.clone())
        y.sum().backward()
        return y.detach(), a.grad
    same(dirty)

    def modes(lib):
        import numpy as np
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            a, b = x.numpy(), np.asarray(x)
        with lib.inference_mode():
            c = x.numpy()
        return a, b, c
    same(modes)
    raises_same(lambda lib: lib.ones(2, requires_grad=True).numpy(), exact_msg=True)


def _exp_with_result_attr(lib):
    class Fn(lib.autograd.Function):   # PyTorch's forward-mode AD tutorial
        @staticmethod
        def forward(ctx, foo):
            result = lib.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, gI):
            gO = gI * ctx.result
            del ctx.result
            return gO

        @staticmethod
        def backward(ctx, g):
            return g * ctx.result
    return Fn


def test_del_ctx_attribute_holding_the_output_in_jvp():
    def fn(lib, requires_grad):
        fwAD = lib.autograd.forward_ad
        primal = lib.arange(3.0, dtype=lib.double).requires_grad_(requires_grad)
        with fwAD.dual_level():
            out = _exp_with_result_attr(lib).apply(fwAD.make_dual(primal, lib.ones(3, dtype=lib.double)))
            return fwAD.unpack_dual(out).tangent.detach()
    same(lambda lib: fn(lib, False))
    same(lambda lib: fn(lib, True))


def test_ctx_attributes_set_read_deleted_everywhere():
    """Attributes set in forward or setup_context (outputs, inputs, plain values) read, deleted, set again and
    deleted in backward, vjp, once_differentiable backward and outside, as PyTorch."""
    def setup_style(lib):
        seen = []

        class G(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.out, ctx.inp, ctx.k = output, inputs[0], 3

            @staticmethod
            def backward(ctx, g):
                r = [hasattr(ctx, "out"), hasattr(ctx, "inp"), ctx.k, ctx.out.requires_grad]
                del ctx.out, ctx.inp, ctx.k
                r += [hasattr(ctx, "out"), hasattr(ctx, "inp"), hasattr(ctx, "k")]
                for action in ("read", "del"):
                    try:
                        ctx.out if action == "read" else delattr(ctx, "out")
                    except AttributeError as e:
                        r.append(str(e))
                ctx.out = 5
                r.append(ctx.out)
                del ctx.out
                r.append(hasattr(ctx, "out"))
                seen.append(r)
                return g * 2
        x = lib.ones(2, requires_grad=True)
        G.apply(x).sum().backward()
        return seen, x.grad
    same(setup_style)

    def kinds(lib, kind):
        from importlib import import_module
        once_differentiable = import_module(lib.__name__ + ".autograd.function").once_differentiable

        def back(ctx, g):
            r = (ctx.a.requires_grad, ctx.b.requires_grad, ctx.a.grad_fn is None)
            del ctx.a, ctx.b
            return g * 2

        class M(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                a, b = x * 2, x * 3
                ctx.mark_non_differentiable(b)
                ctx.a, ctx.b = a, b
                del ctx.a   # deleted and set again in forward
                ctx.a = a
                return a, b
        if kind == "vjp":
            M.vjp = staticmethod(lambda ctx, ga, gb: back(ctx, ga))
        elif kind == "once":
            M.backward = staticmethod(once_differentiable(lambda ctx, ga, gb: back(ctx, ga)))
        else:
            M.backward = staticmethod(lambda ctx, ga, gb: back(ctx, ga))
        x = lib.ones(2, requires_grad=True)
        a, b = M.apply(x)
        r = [hasattr(a.grad_fn, "a"), hasattr(a.grad_fn, "b")]
        a.sum().backward()
        return r, x.grad
    for kind in ("backward", "vjp", "once"):
        same(lambda lib: kinds(lib, kind))

    def outside(lib):
        class H(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.y = ctx.z = y
                return y

            @staticmethod
            def backward(ctx, g):
                return g
        y = H.apply(lib.ones(2, requires_grad=True))
        node = y.grad_fn
        r = [hasattr(node, "z"), type(node.z).__name__]
        del node.z
        r.append(hasattr(node, "z"))
        try:
            del node.z
        except AttributeError as e:
            r.append(str(e))
        return r
    same(outside)


def test_del_ctx_attribute_with_save_for_forward():
    def fn(lib, requires_grad):
        fwAD = lib.autograd.forward_ad

        class SF(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_forward(y)
                ctx.y, ctx.n = y, 1
                return y

            @staticmethod
            def jvp(ctx, t):
                y, = ctx.saved_tensors
                del ctx.y, ctx.n
                return t * y

            @staticmethod
            def backward(ctx, g):
                return g
        with fwAD.dual_level():
            d = fwAD.make_dual(lib.ones(2, requires_grad=requires_grad), lib.ones(2))
            return fwAD.unpack_dual(SF.apply(d)).tangent.detach()
    same(lambda lib: fn(lib, False))
    same(lambda lib: fn(lib, True))
