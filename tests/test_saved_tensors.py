"""Saved-tensor hooks and graph inspection (torch.autograd.graph), compared with PyTorch.

Each test is written once as ``fn(lib)`` and run with torch and with ember (``same``).
"""
import threading
import weakref

import ember
from parity import raises_same, same


def leaf(lib, data, rg=True):
    return lib.tensor(data, dtype=lib.float32, requires_grad=rg)


X = [1.5, -0.5, 2.0]
Y = [0.5, 1.0, -2.0]


def recorder(log, tag=""):
    def pack(t):
        log.append(("pack" + tag, tuple(t.shape)))
        return t

    def unpack(p):
        log.append(("unpack" + tag, tuple(p.shape)))
        return p
    return pack, unpack


# ----- saved_tensors_hooks -------------------------------------------------------------------

def test_pow_saves_self_once_and_unpacks_once():
    def f(lib):
        log = []
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(*recorder(log)):
            y = x.pow(2)
        before = list(log)
        y.sum().backward()
        return before, log, x.grad
    same(f)


def test_pack_and_unpack_order_over_a_chain():
    # ops that save one tensor each (input or output), so the order is the graph's, not a node's
    def f(lib):
        log = []
        x = leaf(lib, [[1.0, 2.0], [3.0, -1.0]])
        with lib.autograd.graph.saved_tensors_hooks(*recorder(log)):
            y = x.exp()                 # saves its result
            z = y.sin().sum(0) .pow(3)  # sin saves self; sum saves nothing; pow saves self
        z.sum().backward()
        return log, x.grad
    same(f)


def test_hooks_see_the_tensor_itself_and_outputs_with_their_grad_fn():
    def f(lib):
        got = []
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (got.append(t), t)[1], lambda p: p):
            y = x.pow(2)
            z = y.exp()
        return (got[0] is x, got[1] is z, got[1].grad_fn is z.grad_fn, type(z.grad_fn).__name__)
    same(f)


def test_nesting_innermost_wins_and_outer_resumes():
    def f(lib):
        log = []
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(*recorder(log, "-outer")):
            a = x.pow(2)
            with lib.autograd.graph.saved_tensors_hooks(*recorder(log, "-inner")):
                b = x.pow(3)
            c = x.pow(4)
        (a + b + c).sum().backward()
        return log, x.grad
    same(f)


def test_unpack_result_replaces_the_saved_value():
    # the unpack hook may return another tensor: backward uses it (here: 2x the saved input)
    def f(lib):
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 2, lambda p: p):
            y = x.pow(2)
        y.sum().backward()
        return x.grad
    same(f)


def test_pack_to_non_tensor_and_back():
    def f(lib):
        x = leaf(lib, X)
        store = {}

        def pack(t):
            store[len(store)] = t.detach().clone()
            return len(store) - 1
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda k: store.pop(k)):
            y = (x * x).exp()
        y.sum().backward()
        return x.grad, len(store)
    same(f)


def test_unpack_must_return_a_tensor():
    def f(lib):
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda p: p):
            y = x.pow(2)
        y.sum().backward()
    raises_same(f, msg="Output of saved tensor unpack_hook expected to be a Tensor but got result of type int",
                exact_msg=True)


def test_no_version_check_through_hooks():
    # PyTorch leaves the version check to the hooks: modifying the original after packing is allowed
    def f(lib):
        x = leaf(lib, X)
        y = x * 2
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
            z = y.pow(2)
        y.add_(1)
        z.sum().backward()
        return x.grad
    same(f)


def test_without_hooks_the_version_check_stays():
    def f(lib):
        x = leaf(lib, X)
        y = x * 2
        z = y.pow(2)
        y.add_(1)
        z.sum().backward()
    raises_same(f, msg="modified by an inplace operation")


def test_double_backward_through_hooks():
    def f(lib):
        log = []
        x = leaf(lib, X)
        w = leaf(lib, Y)
        with lib.autograd.graph.saved_tensors_hooks(*recorder(log)):
            y = (x.pow(3) * w).sin().sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        h, = lib.autograd.grad(g.sum(), w)
        return g, h, sorted(log)
    same(f)


def test_hooks_are_per_thread():
    def f(lib):
        log = []
        x = leaf(lib, X)
        other = []

        def work():
            other.append(x.pow(2))
        with lib.autograd.graph.saved_tensors_hooks(*recorder(log)):
            t = threading.Thread(target=work)
            t.start()
            t.join()
        other[0].sum().backward()
        return log, x.grad
    same(f)


def test_disable_saved_tensors_hooks():
    def f(lib):
        with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
                pass
    raises_same(f, msg="no hooks here", exact_msg=True)


def test_disable_inside_hooks():
    def f(lib):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
            with lib.autograd.graph.disable_saved_tensors_hooks("cannot disable now"):
                pass
    raises_same(f, msg="cannot disable now", exact_msg=True)


def test_disable_nested_restores_the_outer_message():
    def f(lib):
        with lib.autograd.graph.disable_saved_tensors_hooks("outer"):
            with lib.autograd.graph.disable_saved_tensors_hooks("inner"):
                pass
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
                pass
    raises_same(f, msg="outer", exact_msg=True)


def test_disable_then_enable_again():
    def f(lib):
        log = []
        x = leaf(lib, X)
        with lib.autograd.graph.disable_saved_tensors_hooks("off"):
            pass
        with lib.autograd.graph.saved_tensors_hooks(*recorder(log)):
            x.pow(2)
        return log
    same(f)


def test_save_on_cpu_is_transparent():
    def f(lib):
        x = leaf(lib, X)
        with lib.autograd.graph.save_on_cpu(pin_memory=False):
            y = (x * x.exp()).tanh().sum()
        y.backward()
        return x.grad
    same(f)


def test_custom_function_saved_tensors_go_through_hooks():
    def f(lib):
        class SqExp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                y = (x * x).exp()
                ctx.save_for_backward(x, y)   # an input and an output
                return y * k

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * 2 * x * y * 3, None
        log = []
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(*recorder(log)):
            z = SqExp.apply(x, 3)
        packed = list(log)
        z.sum().backward()
        return packed, log, x.grad
    same(f)


def test_custom_function_unpack_result_is_used():
    def f(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * x * g
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 10, lambda p: p):
            y = Sq.apply(x)
        y.sum().backward()
        return x.grad
    same(f)


# ----- raw saved tensors: register_hooks ---------------------------------------------------------

def test_raw_saved_register_hooks():
    def f(lib):
        calls = []
        x = leaf(lib, X)
        y = x.pow(2)
        r = y.grad_fn._raw_saved_self
        r.register_hooks(lambda t: (calls.append("pack"), t * 1)[1], lambda p: (calls.append("unpack"), p)[1])
        after_register = list(calls)
        y.sum().backward()
        return after_register, calls, x.grad
    same(f)


def test_raw_saved_register_hooks_twice():
    def f(lib):
        x = leaf(lib, X)
        y = x.pow(2)
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda p: p)
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda p: p)
    raises_same(f, msg="Calling register_hooks on a saved tensor whose hooks have already been set")


def test_raw_saved_register_hooks_after_free():
    def f(lib):
        x = leaf(lib, X)
        y = x.pow(2)
        r = y.grad_fn._raw_saved_self
        y.sum().backward()
        r.register_hooks(lambda t: t, lambda p: p)
    raises_same(f, msg="Calling register_hooks on a saved tensor after it has been freed")


def test_raw_saved_with_default_hooks_already_set():
    def f(lib):
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
            y = x.exp()
        y.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda p: p)
    raises_same(f, msg="whose hooks have already been set")


# ----- _saved_<name> -----------------------------------------------------------------------------

def test_saved_input_is_the_same_tensor_saved_output_a_new_one():
    def f(lib):
        x = leaf(lib, X)
        y = x * 2
        p = y.pow(2)
        e = x.exp()
        return (p.grad_fn._saved_self is y, p.grad_fn._saved_exponent, type(p.grad_fn._saved_exponent).__name__,
                e.grad_fn._saved_result is e, e.grad_fn._saved_result.grad_fn is e.grad_fn,
                e.grad_fn._saved_result, p.grad_fn._saved_self)
    same(f)


def test_saved_params():
    def f(lib):
        x = leaf(lib, [[1.0, 2.0], [3.0, 4.0]])
        s = x.sum(1, keepdim=True)
        m = x * leaf(lib, [[2.0, 1.0], [0.5, 3.0]])
        return (s.grad_fn._saved_dim, s.grad_fn._saved_keepdim, m.grad_fn._saved_self, m.grad_fn._saved_other)
    same(f)


def test_saved_after_backward_is_freed():
    def f(lib):
        x = leaf(lib, X)
        e = x.exp()
        e.sum().backward()
        return e.grad_fn._saved_result
    raises_same(f, msg="Trying to backward through the graph a second time")


def test_saved_through_hooks():
    def f(lib):
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() + 1, lambda p: p):
            p = x.pow(2)
        s = p.grad_fn._saved_self
        return s, s is x, s.requires_grad
    same(f)


# ----- register_multi_grad_hook ------------------------------------------------------------------

def test_multi_grad_hook_all():
    def f(lib):
        seen = []
        a = leaf(lib, X)
        b = leaf(lib, Y)
        c = a * b
        d = a * b
        lib.autograd.graph.register_multi_grad_hook(
            (a, b, c, d), lambda grads: seen.append(tuple(g is not None for g in grads)))
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        (c + d).sum().backward()
        return seen
    same(f)


def test_multi_grad_hook_all_gets_the_grads_and_runs_once_per_backward():
    def f(lib):
        seen = []
        x = leaf(lib, X)
        a, b = x * 2, x.exp()
        y = (a * b).sum() + a.pow(2).sum()
        lib.autograd.graph.register_multi_grad_hook((a, b), lambda grads: seen.append(list(grads)))
        lib.autograd.grad(y, (a, b), retain_graph=True)
        lib.autograd.grad(y, (b,), retain_graph=True)
        y.backward()
        return seen
    same(f)


def test_multi_grad_hook_all_on_leaves_under_grad():
    def f(lib):
        a = leaf(lib, X)
        lib.autograd.graph.register_multi_grad_hook((a,), print)
        lib.autograd.grad(a.pow(2).sum(), a)
    raises_same(f, msg="A leaf node was passed to _will_engine_execute_node", exact_msg=True)


def test_multi_grad_hook_any_and_remove():
    def f(lib):
        seen = []
        a = leaf(lib, X)
        b = leaf(lib, Y)
        h = lib.autograd.graph.register_multi_grad_hook((a, b), lambda g: seen.append(g), mode="any")
        # b's gradient is computed first (a's needs one more node); two leaves ready at once run in an order
        # that differs between the engines, which this test does not pin down
        ((a * 2).exp() * b).sum().backward()
        (a * 3).sum().backward()
        h.remove()
        (a * b).sum().backward()
        return [len(seen)] + seen
    same(f)


def test_multi_grad_hook_bad_mode():
    def f(lib):
        a = leaf(lib, X)
        lib.autograd.graph.register_multi_grad_hook((a,), print, mode="some")
    raises_same(f, msg="Expects mode to be one of ('all', 'any') but got some", exact_msg=True)


# ----- increment_version, metadata -------------------------------------------------------------

def test_increment_version():
    def f(lib):
        x = leaf(lib, X)
        y = x * 2
        z = y.pow(2)
        v0 = y._version
        lib.autograd.graph.increment_version(y)
        v1 = y._version
        z.sum().backward()
        return v0, v1
    raises_same(f, msg="is at version 1; expected version 0 instead")


def test_increment_version_value():
    def f(lib):
        x = leaf(lib, X)
        y = x * 2
        lib.autograd.graph.increment_version(y)
        lib.autograd.graph.increment_version(y)
        return y._version, x._version
    same(f)


def test_node_metadata():
    def f(lib):
        x = leaf(lib, X)
        y = x.exp()
        y.grad_fn.metadata["k"] = 1
        return dict(y.grad_fn.metadata)
    same(f)


def test_packed_values_die_with_the_graph():
    x = ember.tensor(X, requires_grad=True)
    refs = []

    class Box:
        pass

    def pack(t):
        b = Box()
        b.t = t
        refs.append(weakref.ref(b))
        return b
    with ember.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
        y = x.pow(2).exp().sum()
    assert len(refs) == 2 and all(r() is not None for r in refs)
    y.backward()
    assert all(r() is None for r in refs)   # released with the nodes' saved values


def test_custom_function_saving_its_output_through_hooks():
    def f(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * y
        got = []
        x = leaf(lib, X)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (got.append(t), t)[1], lambda p: p):
            y = Exp.apply(x)
        same_object = got[0] is y
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        g2, = lib.autograd.grad(g.sum(), x)
        return same_object, g, g2
    same(f)
