"""The declaration machinery itself: saves are checked, gradient shapes are checked, JVP kinds, promotion,
the registry. Each test declares a small primitive of its own (they are not part of the op table)."""
import numpy as np
import pytest

import ember
from ember.autograd._primitive import Unsaved, apply, defprim
from ember.ops._registry import EXPORTS, METHODS, SUBMODULES


def _x(*shape):
    return ember.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), requires_grad=True)


def test_a_rule_reading_an_unsaved_input_names_the_op_and_the_input():
    p = defprim("bad_square", lambda xp, a: a * a,
                vjp=lambda xp, g, out, a: g * 2 * a)               # reads a, but saves nothing
    y = apply(p, (_x(3),))
    with pytest.raises(RuntimeError, match=r"'bad_square' reads input 0, which its declaration does not save"):
        y.sum().backward()


def test_a_rule_reading_the_unsaved_output_says_so():
    p = defprim("bad_exp", lambda xp, a: xp.exp(a), vjp=lambda xp, g, out, a: g * out)
    with pytest.raises(RuntimeError, match=r"'bad_exp' reads the output, which its declaration does not save"):
        apply(p, (_x(2),)).sum().backward()


def test_unsaved_inputs_still_show_their_shape_and_dtype():
    seen = {}

    def rule(xp, g, out, a):
        seen["a"] = (type(a), a.shape, a.dtype, a.ndim)
        return xp.expand(xp.reshape(g, (1, 1)), a.shape)
    p = defprim("total", lambda xp, a: xp.sum(a), vjp=rule)
    x = _x(2, 3)
    apply(p, (x,)).backward()
    assert seen["a"] == (Unsaved, (2, 3), np.dtype("float64"), 2)
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))


def test_a_gradient_of_the_wrong_shape_names_the_op_and_both_shapes():
    p = defprim("bad_shape", lambda xp, a: a * 2, vjp=lambda xp, g, out, a: g[:1])
    with pytest.raises(RuntimeError, match=r"'bad_shape' returned a gradient of shape \[1\], but the input has "
                                           r"shape \[3\]"):
        apply(p, (_x(3),)).sum().backward()


def test_a_broadcast_gradient_is_summed_down_by_the_engine():
    p = defprim("bcast", lambda xp, a: xp.expand(a, (4, 3)), vjp=lambda xp, g, out, a: g)
    x = _x(3)
    apply(p, (x,)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 4.0))


def test_a_dict_saves_keeps_an_input_only_for_the_gradients_that_read_it():
    p = defprim("prod_pair", lambda xp, a, b: a * b,
                vjp=(lambda xp, g, out, a, b: g * b, lambda xp, g, out, a, b: g * a), saves={0: (1,), 1: (0,)})
    a, b = _x(3), ember.ones(3)            # only a needs a gradient: b is kept, a is not
    y = apply(p, (a, b))
    assert y.grad_fn._saved[0] is None and y.grad_fn._saved[1] is not None
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones(3))
    wrong = defprim("prod_wrong", lambda xp, a, b: a * b,   # declares b for b's own gradient: a's rule reads it
                    vjp=(lambda xp, g, out, a, b: g * b, lambda xp, g, out, a, b: g * a), saves={0: (1,), 1: (1,)})
    with pytest.raises(RuntimeError, match=r"rule for input 0 of primitive 'prod_wrong' reads input 1, which its "
                                           r"declaration does not save"):
        apply(wrong, (_x(3), ember.ones(3))).sum().backward()


def test_a_dict_saves_is_checked_when_declared():
    rules = (lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: g)
    with pytest.raises(ValueError, match="names inputs"):
        defprim("bad_saves", lambda xp, a, b: a + b, vjp=rules, saves={2: (0,)})
    with pytest.raises(ValueError, match="must be a tuple of input positions"):
        defprim("bad_saves", lambda xp, a, b: a + b, vjp=rules, saves={0: 1})


@pytest.mark.parametrize("kind", ["elementwise", "linear", "multilinear"])
def test_jvp_kinds(kind):
    import ember.autograd.forward_ad as fwAD
    prims = {
        "elementwise": defprim("cube", lambda xp, a: a * a * a,
                               vjp=lambda xp, g, out, a: g * 3 * a * a, jvp="elementwise", saves=(0,)),
        "linear": defprim("twice_sum", lambda xp, a, b: 2 * (a + b),
                          vjp=(lambda xp, g, out, a, b: 2 * g,) * 2, jvp="linear"),
        "multilinear": defprim("prod2", lambda xp, a, b: a * b,
                               vjp=(lambda xp, g, out, a, b: g * b, lambda xp, g, out, a, b: g * a),
                               jvp="multilinear", saves=(0, 1)),
    }
    p = prims[kind]
    a, b = ember.tensor([1.0, 2.0]), ember.tensor([3.0, -1.0])
    ta, tb = ember.tensor([0.5, 1.0]), ember.tensor([2.0, 0.25])
    with fwAD.dual_level():
        args = (fwAD.make_dual(a, ta),) if kind == "elementwise" else (fwAD.make_dual(a, ta), fwAD.make_dual(b, tb))
        t = fwAD.unpack_dual(apply(p, args)).tangent
    want = {"elementwise": 3 * a * a * ta, "linear": 2 * (ta + tb), "multilinear": ta * b + a * tb}[kind]
    np.testing.assert_allclose(t.numpy(), want.numpy())


def test_an_unknown_jvp_kind_is_refused():
    with pytest.raises(ValueError, match="unknown JVP kind"):
        defprim("x", lambda xp, a: a, vjp=lambda xp, g, out, a: g, jvp="affine")


def test_declared_promotion():
    p = defprim("plus", lambda xp, a, b: a + b, vjp=(lambda xp, g, out, a, b: g,) * 2,
                promote="standard")
    q = defprim("halve", lambda xp, a: a / 2, vjp=lambda xp, g, out, a: g / 2, promote="float")
    i32, f64 = ember.tensor([1, 2], dtype=ember.int32), ember.tensor([1.0], dtype=ember.float64)
    assert apply(p, (i32, f64)).dtype == ember.float64
    assert apply(p, (i32, 2.5)).dtype == ember.float32
    assert apply(p, (i32, 2)).dtype == ember.int32
    assert apply(q, (i32,)).dtype == ember.float32


def test_the_registry_is_what_ember_exports():
    for name, f in EXPORTS.items():
        assert getattr(ember, name) is f, name
    for name, f in METHODS.items():
        assert ember.Tensor.__dict__[name] is f, name
    for mod, table in SUBMODULES.items():
        sub = ember
        for part in mod.split("."):   # "nn.functional": ember.nn.functional
            sub = getattr(sub, part)
        for name, f in table.items():
            assert getattr(sub, name) is f, (mod, name)
