"""torch.testing.assert_close in a test-style script: failures and their messages."""
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
check("equal", a, a.clone())
check("close", a, a + 1e-7)
check("far", a, a + torch.tensor([0.0, 0.1, 0.0]))
check("many", torch.arange(10.0), torch.arange(10.0) * 1.01)
check("dtype", a, a.double())
check("dtype-ok", a, a.double(), check_dtype=False)
check("shape", a, a[:2])
check("int", torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]))
check("nan", torch.tensor([float("nan")]), torch.tensor([float("nan")]))
check("nan-eq", torch.tensor([float("nan")]), torch.tensor([float("nan")]), equal_nan=True)
check("tol", a, a + 0.01, rtol=0, atol=0.02)
check("msg", a, a + 1, msg="custom message")
check("scalar", 1.0, 1.0 + 1e-3)
check("list", [a, a], [a, a + 1])
check("dict", {"x": a}, {"x": a * 2})
check("device", a, a, check_device=True)
check("stride", a, a, check_stride=True)
check("2d", torch.ones(2, 3), torch.ones(2, 3).index_put((torch.tensor([1]), torch.tensor([2])), torch.tensor(5.0)))
check("bool", torch.tensor([True, False]), torch.tensor([True, True]))
check("req-grad", a.clone().requires_grad_(), a)
check("type", a, a.numpy())
check("f16", torch.ones(3, dtype=torch.float16), torch.ones(3, dtype=torch.float16) + 1e-3)
t = make_tensor((2, 3), dtype=torch.float32, device="cpu", low=-1, high=1)
print(t.shape, t.dtype, bool((t >= -1).all() and (t <= 1).all()))
print(make_tensor((4,), dtype=torch.int64, device="cpu", low=0, high=5).dtype)
