"""More assert_close failures a test suite meets; make_tensor options."""
import torch
from torch.testing import assert_close, make_tensor


def check(name, *args, **kw):
    try:
        assert_close(*args, **kw)
        print(name, "ok")
    except Exception as e:
        print(name, type(e).__name__)
        print(str(e))


a = torch.tensor([1.0, 2.0, 3.0])
check("zero-ref", torch.zeros(3), torch.tensor([0.0, 1e-3, 0.0]))
check("inf", torch.tensor([float("inf")]), torch.tensor([1.0]))
check("inf-eq", torch.tensor([float("inf"), -1.0]), torch.tensor([float("inf"), -1.0]))
check("complex", torch.tensor([1 + 1j]), torch.tensor([1 + 1.1j]))
check("cplx-real", torch.tensor([1 + 1j]), torch.tensor([1.0]))
check("rtol-only", a, a * 1.001, rtol=1e-2, atol=None) if False else check("rtol-no-atol", a, a, rtol=1e-2)
check("0d", torch.tensor(1.0), torch.tensor(1.5))
check("int64-big", torch.tensor([2**40]), torch.tensor([2**40 + 1]))
check("uint8", torch.tensor([250], dtype=torch.uint8), torch.tensor([5], dtype=torch.uint8))
check("seq-len", [a], [a, a])
check("mapping-keys", {"a": a}, {"b": a})
check("nested", {"x": [a, (a, a)]}, {"x": [a, (a, a + 1)]})
check("numpy-both", a.numpy(), (a + 1).numpy())
check("py-int", 1, 2)
check("py-mixed", 1, 1.0)
check("none", None, None)
check("bool-py", True, False)
check("msg-callable", a, a + 1, msg=lambda m: "CUSTOM: " + m.splitlines()[0])
check("bf16", torch.ones(3, dtype=torch.bfloat16), torch.ones(3, dtype=torch.bfloat16) * 1.01)
check("f64-tight", torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64) + 1e-9)
check("layout", a, a.to_sparse()) if False else None
check("3d", torch.zeros(2, 2, 2), torch.zeros(2, 2, 2).index_fill(2, torch.tensor([1]), 1.0))
t = make_tensor((3, 4), dtype=torch.float64, device="cpu", low=-2, high=2, requires_grad=True)
print(t.requires_grad, t.dtype, bool(t.abs().max() <= 2))
print(make_tensor((5,), dtype=torch.int64, device="cpu", low=1, high=3, exclude_zero=True).dtype)
print(make_tensor((2, 3), dtype=torch.float32, device="cpu", noncontiguous=True).is_contiguous())
print(make_tensor((), dtype=torch.bool, device="cpu").shape, make_tensor((2,), dtype=torch.complex64, device="cpu").dtype)
try:
    make_tensor((2,), dtype=torch.float32, device="cpu", low=3, high=1)
except ValueError as e:
    print("ValueError", e)
