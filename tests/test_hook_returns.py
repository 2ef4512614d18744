"""What a hook returns is checked as PyTorch checks it (python_hook.cpp): the type, device, size and count of
the values, and None gradients that must stay None. Every kind of hook goes through the engine's one check
(``ember.autograd.graph.check_hook_value``); each case is compared with torch, message included."""
import functools

import pytest

from parity import raises_same, same


def _node_hook(ret):
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: ret(lib, gi))
        y.sum().backward()
        return x.grad
    return fn


def _node_prehook(ret):
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.grad_fn.register_prehook(lambda go: ret(lib, go))
        y.sum().backward()
        return x.grad
    return fn


def _tensor_hook(ret, leaf=False, create_graph=False):
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        (x if leaf else y).register_hook(lambda g: ret(lib, g))
        y.sum().backward(create_graph=create_graph)
        return x.grad
    return fn


def _module_hook(ret, shape=(1, 2), pre=False):
    def fn(lib):
        lib.manual_seed(0)
        m = lib.nn.Linear(2, 2)
        x = lib.ones(*shape, requires_grad=True)
        if pre:
            m.register_full_backward_pre_hook(lambda mod, go: ret(lib, go))
        else:
            m.register_full_backward_hook(lambda mod, gi, go: ret(lib, gi))
        m(x).sum().backward()
        return x.grad
    return fn


def _post_accumulate(ret):
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda p: ret(lib, p))
        (x * 2).sum().backward()
        return x.grad
    return fn


def _unpack(ret, op="mul"):
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: ret(lib, t)):
            y = x * x if op == "mul" else x.exp()   # exp saves its output
        y.sum().backward()
        return x.grad
    return fn


ERRORS = {
    # grad_fn hooks: x * 2 has two inputs (the scalar's edge is None), as in PyTorch
    "node_size": _node_hook(lambda lib, gi: (lib.ones(3), None)),
    "node_count_1_of_2": _node_hook(lambda lib, gi: (lib.ones(3),)),
    "node_dtype_count": _node_hook(lambda lib, gi: (gi[0].double(),)),
    "node_dtype": _node_hook(lambda lib, gi: (gi[0].double(), None)),
    "node_replace_none": _node_hook(lambda lib, gi: (gi[0], gi[0])),
    "node_count_0": _node_hook(lambda lib, gi: ()),
    "node_list": _node_hook(lambda lib, gi: [gi[0], None]),
    "node_tensor": _node_hook(lambda lib, gi: gi[0]),
    "node_int_elem": _node_hook(lambda lib, gi: (1, None)),
    "node_int": _node_hook(lambda lib, gi: 5),
    "node_broadcastable": _node_hook(lambda lib, gi: (lib.ones(1), None)),
    "node_0d": _node_hook(lambda lib, gi: (lib.tensor(1.0), None)),
    "node_int64": _node_hook(lambda lib, gi: (lib.ones(2, dtype=lib.int64), None)),
    "node_bool": _node_hook(lambda lib, gi: (lib.ones(2, dtype=lib.bool), None)),
    "pre_size": _node_prehook(lambda lib, go: (lib.ones(3),)),
    "pre_dtype": _node_prehook(lambda lib, go: (go[0].double(),)),
    "pre_count": _node_prehook(lambda lib, go: (go[0], go[0])),
    "pre_tensor": _node_prehook(lambda lib, go: go[0]),
    "tensor_size": _tensor_hook(lambda lib, g: lib.ones(3)),
    "tensor_dtype": _tensor_hook(lambda lib, g: g.double()),
    "tensor_half": _tensor_hook(lambda lib, g: g.half()),
    "tensor_long": _tensor_hook(lambda lib, g: g.long()),
    "tensor_broadcastable": _tensor_hook(lambda lib, g: lib.ones(1)),
    "tensor_expanded": _tensor_hook(lambda lib, g: g.expand(3, 2)),
    "tensor_tuple": _tensor_hook(lambda lib, g: (g,)),
    "tensor_int": _tensor_hook(lambda lib, g: 3),
    "tensor_size_create_graph": _tensor_hook(lambda lib, g: lib.ones(3), create_graph=True),
    "leaf_size": _tensor_hook(lambda lib, g: lib.ones(3), leaf=True),
    "leaf_dtype": _tensor_hook(lambda lib, g: g.double(), leaf=True),
    "leaf_broadcastable": _tensor_hook(lambda lib, g: lib.ones(1), leaf=True),
    "module_size": _module_hook(lambda lib, gi: (lib.ones(3),)),
    "module_dtype": _module_hook(lambda lib, gi: (gi[0].double(),)),
    "module_broadcastable": _module_hook(lambda lib, gi: (lib.ones(2),), shape=(3, 2)),
    "module_count": _module_hook(lambda lib, gi: (gi[0], gi[0])),
    "module_tensor": _module_hook(lambda lib, gi: gi[0]),
    "module_pre_size": _module_hook(lambda lib, go: (lib.ones(3),), pre=True),
    "module_pre_dtype": _module_hook(lambda lib, go: (go[0].double(),), pre=True),
    "module_pre_broadcastable": _module_hook(lambda lib, go: (lib.ones(2),), shape=(3, 2), pre=True),
    "module_pre_count": _module_hook(lambda lib, go: (go[0], go[0]), pre=True),
    "module_pre_tensor": _module_hook(lambda lib, go: go[0], pre=True),
    "post_accumulate_size": _post_accumulate(lambda lib, p: lib.ones(3)),
    "post_accumulate_int": _post_accumulate(lambda lib, p: 5),
    "post_accumulate_dtype": _post_accumulate(lambda lib, p: lib.ones(2, dtype=lib.float64)),
    "post_accumulate_not_none": _post_accumulate(lambda lib, p: lib.ones(2) * 5),
    "unpack_size": _unpack(lambda lib, t: lib.ones(3)),
    "unpack_output_size": _unpack(lambda lib, t: lib.ones(3), op="exp"),
    "unpack_int": _unpack(lambda lib, t: 3),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_bad_hook_return_raises_as_torch(case):
    raises_same(ERRORS[case], exact_msg=True)


ACCEPTED = {
    "node_none_elem": _node_hook(lambda lib, gi: (None, None)),
    "node_scaled": _node_hook(lambda lib, gi: (gi[0] * 3, None)),
    "pre_none_elem": _node_prehook(lambda lib, go: (None,)),
    "tensor_transposed": None,   # below
    "module_scaled": _module_hook(lambda lib, gi: (gi[0] * 2,), shape=(3, 2)),
    "module_pre_scaled": _module_hook(lambda lib, go: (go[0] * 2,), shape=(3, 2), pre=True),
    # PyTorch does not check an unpacked saved tensor's dtype or a shape that broadcasts: the formula computes
    # with it and the gradient is reduced and cast back to the input's
    "unpack_broadcastable": _unpack(lambda lib, t: lib.ones(1)),
    "unpack_larger": _unpack(lambda lib, t: lib.ones(2, 2)),
    "unpack_dtype": _unpack(lambda lib, t: t.double()),
    "unpack_output_dtype": _unpack(lambda lib, t: t.double(), op="exp"),
}


def _transposed(lib):
    x = lib.ones(2, 2, requires_grad=True)
    y = x * lib.arange(4.0).reshape(2, 2)
    y.register_hook(lambda g: (g * lib.arange(4.0).reshape(2, 2)).t())
    y.sum().backward()
    return x.grad


ACCEPTED["tensor_transposed"] = _transposed


@pytest.mark.parametrize("case", ACCEPTED, ids=list(ACCEPTED))
def test_good_hook_return_accepted_as_torch(case):
    same(ACCEPTED[case])


def test_hook_names():
    """A hook without ``__name__`` (a callable object, a partial) is '<unknown>' in the message."""
    class Hook:
        def __call__(self, g):
            return g.new_ones(3)

    def named(g, k):
        return g.new_ones(3)

    for hook in (Hook(), functools.partial(named, k=1), lambda g: g.new_ones(3), named.__get__(1)):
        def fn(lib, hook=hook):
            x = lib.ones(2, requires_grad=True)
            y = x * 2
            y.register_hook(hook)
            y.sum().backward()
        raises_same(fn, exact_msg=True)


def test_multi_output_pre_hook_sees_every_output():
    """A pre-hook of a node with several outputs gets one gradient per output (None where none came), and the
    None rule applies to those."""
    def fn(lib):
        x = lib.ones(2, 3, requires_grad=True)
        a, b = x.unbind(0)
        seen = []
        a.grad_fn.register_prehook(lambda go: seen.append(tuple(g is None for g in go)))
        a.sum().backward()
        return seen
    same(fn)

    def replace(lib):
        x = lib.ones(2, 3, requires_grad=True)
        a, b = x.unbind(0)
        a.grad_fn.register_prehook(lambda go: (go[0], lib.ones(3)))
        a.sum().backward()
    raises_same(replace, exact_msg=True)


def test_custom_function_node_hook_sees_gradient_of_input_without_grad():
    """As PyTorch: a custom Function's node hooks see what backward returned for a tensor input that needs no
    gradient, and a wrong value there is refused."""
    def fn(lib, ret):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g, g
        a = lib.ones(2, requires_grad=True)
        y = F.apply(a, lib.ones(2))
        seen = []
        y.grad_fn.register_hook(lambda gi, go: seen.append(tuple(g is None for g in gi)) or ret(lib, gi))
        y.sum().backward()
        return seen, a.grad
    same(lambda lib: fn(lib, lambda lib, gi: None))
    same(lambda lib: fn(lib, lambda lib, gi: (gi[0] * 2, gi[1])))
    raises_same(lambda lib: fn(lib, lambda lib, gi: (gi[0], lib.ones(3))), exact_msg=True)


def test_hook_checks_under_autograd_grad():
    def fn(lib, create_graph):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: (lib.ones(3),))
        return lib.autograd.grad(y.sum(), x, create_graph=create_graph)
    raises_same(lambda lib: fn(lib, False), exact_msg=True)
    raises_same(lambda lib: fn(lib, True), exact_msg=True)


def test_hook_checks_with_batched_grads():
    """autograd.grad(is_grads_batched=True) runs hooks on one row at a time, and checks each row's return."""
    def fn(lib, ret):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: ret(lib, g))
        return lib.autograd.grad(y, x, lib.eye(2), is_grads_batched=True)
    same(lambda lib: fn(lib, lambda lib, g: g * 3))
    raises_same(lambda lib: fn(lib, lambda lib, g: g.double()), exact_msg=True)


def _acc_node_hook(kind, ret):
    def fn(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        node = y.grad_fn.next_functions[0][0]   # the leaf's AccumulateGrad
        if kind == "pre":
            node.register_prehook(lambda go: ret(lib, go))
        else:
            node.register_hook(lambda gi, go: ret(lib, gi))
        y.sum().backward()
        return x.grad
    return fn


def _copy_slices_hook(kind, ret):
    def fn(lib):
        x = lib.ones(4, requires_grad=True)
        y = x * 1
        y[:2].mul_(2)
        if kind == "pre":
            y.grad_fn.register_prehook(lambda go: ret(lib, go))
        else:
            y.grad_fn.register_hook(lambda gi, go: ret(lib, gi))
        y.sum().backward()
        return x.grad
    return fn


MORE = {
    "accumulate_pre_size": _acc_node_hook("pre", lambda lib, go: (lib.ones(3),)),
    "accumulate_pre_dtype": _acc_node_hook("pre", lambda lib, go: (go[0].double(),)),
    "accumulate_pre_scaled": _acc_node_hook("pre", lambda lib, go: (go[0] * 5,)),
    "accumulate_post_empty": _acc_node_hook("post", lambda lib, gi: ()),
    "accumulate_post_count": _acc_node_hook("post", lambda lib, gi: (lib.ones(2),)),
    "copy_slices_count": _copy_slices_hook("post", lambda lib, gi: (lib.ones(3),)),
    "copy_slices_pre_size": _copy_slices_hook("pre", lambda lib, go: (lib.ones(3),)),
}


@pytest.mark.parametrize("case", MORE, ids=list(MORE))
def test_more_node_hooks_as_torch(case):
    same(MORE[case], exact_msg=True)


def test_custom_function_pre_hook_sees_every_output():
    """One gradient per output of a custom Function (non-tensor and non-differentiable outputs included)."""
    def fn(lib, replace):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                i = lib.ones(2, dtype=lib.int64)
                ctx.mark_non_differentiable(i)
                return x * 2, 5, x * 3, i

            @staticmethod
            def backward(ctx, a, n, b, i):
                return a + b
        x = lib.ones(2, requires_grad=True)
        a, n, b, i = F.apply(x)
        seen = []
        a.grad_fn.register_prehook(lambda go: seen.append(tuple(None if g is None else (str(g.dtype), tuple(g.shape))
                                                                for g in go)) or replace(lib, go))
        a.sum().backward()
        return seen, x.grad
    same(lambda lib: fn(lib, lambda lib, go: None))
    same(lambda lib: fn(lib, lambda lib, go: (go[0] * 2, None, None, None)))
    raises_same(lambda lib: fn(lib, lambda lib, go: (go[0], None, lib.ones(2), None)), exact_msg=True)
