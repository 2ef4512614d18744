"""The toolkit's pieces together (checkpoint, saved-tensor hooks, forward mode, batched gradients, custom
Functions), against torch on the same programs: the cases a review of issue 6 found broken."""
import importlib

from parity import raises_same, same


def mod(lib, name):
    return importlib.import_module(f"{lib.__name__}.{name}")


def test_checkpoint_input_changed_in_place_after_the_forward():
    def f(lib):
        cp = mod(lib, "utils.checkpoint").checkpoint
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y0 = x * 1
        y = cp(lambda a: a.exp() * a, y0, use_reentrant=False)
        y0.mul_(2)
        y.sum().backward()
    raises_same(f, msg="has been modified by an inplace operation")


def test_forward_over_reverse_through_saved_tensor_hooks_and_checkpoint():
    def hooks(lib):
        F = mod(lib, "autograd.forward_ad")
        x = lib.tensor([0.3, 1.1], dtype=lib.float64, requires_grad=True)
        with F.dual_level(), lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            xd = F.make_dual(x, lib.tensor([1.0, 0.0], dtype=lib.float64))
            g, = lib.autograd.grad((xd.exp() * xd).sum(), x, create_graph=True)
            return F.unpack_dual(g).tangent
    same(hooks)

    def hessian(lib):
        cp = mod(lib, "utils.checkpoint").checkpoint
        fn = mod(lib, "autograd.functional")
        g = lambda x: cp(lambda a: (a.exp() * a).sum(), x, use_reentrant=False)  # noqa: E731
        return fn.hessian(g, lib.tensor([0.3, 1.1], dtype=lib.float64), vectorize=True,
                          outer_jacobian_strategy="forward-mode")
    same(hessian)


def test_checkpoint_under_batched_gradients_with_row_by_row_nodes():
    def f(lib):
        cp = mod(lib, "utils.checkpoint").checkpoint
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = cp(lambda a: a.cumprod(0), x, use_reentrant=False)
        return lib.autograd.grad(y, x, lib.eye(3), is_grads_batched=True)
    same(f)


def test_pack_hook_records_no_graph():
    def f(lib):
        calls = []

        def pack(t):
            calls.append(t.requires_grad)
            return t * 1   # an op inside the pack hook: must not be saved (or recorded) again

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = x.exp()
        y.sum().backward()
        return x.grad, len(calls)
    same(f)


def test_custom_function_refuses_to_save_an_inference_tensor():
    def f(lib):
        with lib.inference_mode():
            a = lib.ones(2)

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, a):
                ctx.save_for_backward(a)
                return x * a

            @staticmethod
            def backward(ctx, g):
                return g * ctx.saved_tensors[0], None

        F.apply(lib.ones(2, requires_grad=True), a)
    raises_same(f, msg="Inference tensors cannot be saved for backward")
