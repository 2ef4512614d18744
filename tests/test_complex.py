"""Complex tensors: the dtypes, promotion, printing, views of the real and imaginary parts, and complex autograd
(PyTorch's conjugate Wirtinger convention, gradcheck on complex inputs and outputs), each snippet run on torch and
on ember with the same printed result (or the same exception type). The per-op complex checks are the sweep in
tests/test_complex_sweep.py."""
from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402

SNIPPETS = {
    # dtypes and promotion
    "dtypes": "print(torch.complex64, torch.cfloat, torch.complex128, torch.cdouble, torch.complex64.is_complex,"
              " torch.complex64.is_floating_point, torch.complex64.itemsize, torch.complex64.is_signed,"
              " torch.complex64.to_real(), torch.float64.to_complex())",
    "promote_types": "ds = [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float32,"
                     " torch.float64, torch.complex64, torch.complex128]\n"
                     "print([[torch.promote_types(a, b) for b in ds[-2:]] for a in ds])",
    "result_type": "print(torch.result_type(torch.ones(2), 1j), torch.result_type(torch.ones(2, dtype=torch.float64),"
                   " 1j), torch.result_type(torch.ones(2, dtype=torch.int64), 1j),"
                   " torch.result_type(torch.tensor(1j), torch.ones(2, dtype=torch.float64)),"
                   " torch.result_type(torch.ones(2, dtype=torch.int8), torch.tensor(1j, dtype=torch.complex128)))",
    "can_cast": "print(torch.can_cast(torch.complex64, torch.float64), torch.can_cast(torch.float64, torch.complex64),"
                " torch.can_cast(torch.int64, torch.complex64))",
    "finfo": "print(torch.finfo(torch.complex64).eps, torch.finfo(torch.complex128).max)",
    "default_complex": "torch.set_default_dtype(torch.float64)\nprint(torch.tensor([1j]).dtype, torch.tensor(2.5j))"
                       "\ntorch.set_default_dtype(torch.float32)",
    # creation and printing
    "print_1d": "print(torch.tensor([1+2j, 3-4j]), torch.tensor(1+2j), torch.zeros(2, dtype=torch.cfloat))",
    "print_widths": "print(torch.tensor([1.5+2j, -3.25-4j], dtype=torch.complex128))\n"
                    "print(torch.tensor([1+2j, 1+20j, -100.5j]))",
    "print_sci": "print(torch.tensor([[1e10+1j, 1e-5j], [1, 2]]))",
    "print_nonfinite": "print(torch.tensor([float('nan')+1j, complex(0, float('inf')), complex(float('-inf'), -1)]))",
    "print_long": "print(torch.arange(2000).reshape(2, 1000) * (1 + 0.5j))",
    "print_grad": "print(torch.tensor([1+1j], requires_grad=True) * 2)",
    "item_tolist": "z = torch.tensor([1+1j, 2])\nprint(z[0].item(), type(z[0].item()).__name__, z.tolist())",
    "numpy": "print(repr(torch.tensor([1+2j]).numpy()), torch.from_numpy(np.array([1+2j, 3j])).dtype)",
    "ones_full": "print(torch.ones(2, 3, dtype=torch.complex128), torch.full((2,), 1+1j), torch.full((2,), 1+1j).dtype)",
    "python_scalars": "x = torch.tensor([1., 2.])\nprint(x + 1j, 1j * x, x / (1 + 2j), (2 + 0j) - x,"
                      " torch.arange(3) * 1j)",
    "casts": "z = torch.tensor([1+2j])\nprint(z.to(torch.float32), z.float(), z.real.dtype,"
             " torch.tensor([1.5]).to(torch.complex64), z.cdouble().dtype, torch.tensor([1]).cfloat())",
    "is_complex": "print(torch.is_complex(torch.tensor([1j])), torch.tensor([1.]).is_complex(),"
                  " torch.tensor([1j]).is_floating_point())",
    # parts, views, conjugates
    "real_imag": "z = torch.tensor([1+2j, 3-1j])\nprint(z.real, z.imag, torch.real(z), torch.imag(z),"
                 " z.real._base is z, z.imag.stride())",
    "real_write": "z = torch.tensor([1+2j, 3-1j])\nz.real.mul_(2)\nz.imag[0] = 7\nprint(z)",
    "real_assign": "z = torch.tensor([1+2j, 3-1j])\nz.imag = torch.tensor([5., 6.])\nz.real = 0\nprint(z)",
    "real_of_real": "x = torch.tensor([1., 2.])\nprint(x.real is x)\nx.imag",
    "conj": "z = torch.tensor([1+2j, 3-1j])\nprint(z.conj(), z.conj_physical(), torch.conj(z),"
            " torch.tensor([1.]).conj(), z.resolve_conj(), z.resolve_neg(), z.is_neg())",
    "conj_physical_": "z = torch.tensor([1+2j, 3-1j])\nz.conj_physical_()\nprint(z)",
    "angle_abs_sgn": "z = torch.tensor([1+2j, -3, 0j])\nprint(z.abs(), z.angle(), z.sgn(), torch.angle(torch.tensor("
                     "[1., -2, float('nan'), -0.0])), torch.angle(torch.tensor([3, -4])))",
    "view_as_real": "z = torch.tensor([[1+2j, 3j], [1, 2-1j]])\nv = torch.view_as_real(z)\nv[0, 0, 1] = 9\n"
                    "print(v.shape, v.stride(), z)",
    "view_as_complex": "x = torch.tensor([[1., 2], [3, 4]])\nc = torch.view_as_complex(x)\nc[1] = 5j\nprint(c, x)",
    "view_as_complex_errors": "torch.view_as_complex(torch.ones(3, 3))",
    "view_as_complex_stride": "torch.view_as_complex(torch.ones(2, 4)[:, ::2])",
    "view_as_complex_int": "torch.view_as_complex(torch.ones(2, 2, dtype=torch.int64))",
    "view_as_real_real": "torch.view_as_real(torch.ones(2))",
    "complex_polar": "a = torch.tensor([1., 2]); b = torch.tensor([0.5, -1])\nprint(torch.complex(a, b),"
                     " torch.polar(a, b), torch.complex(a.double(), b.double()).dtype)",
    "complex_mixed": "torch.complex(torch.ones(2), torch.ones(2, dtype=torch.float64))",
    "complex_int": "torch.complex(torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64))",
    # autograd
    "requires_grad": "z = torch.tensor([1+2j], requires_grad=True)\nw = torch.zeros(2, dtype=torch.cdouble)"
                     ".requires_grad_()\nprint(z.requires_grad, w.requires_grad)",
    "backward_complex_scalar": "z = torch.tensor([1+2j], requires_grad=True)\n(z * 2).sum().backward()",
    "grad_abs": "z = torch.tensor([1+2j, -0.5+0.3j, 2-1j], dtype=torch.complex128, requires_grad=True)\n"
                "w = torch.tensor([0.3-0.7j, 1.1+0.2j, -1+1j], dtype=torch.complex128, requires_grad=True)\n"
                "(z * w).abs().sum().backward()\nprint(z.grad, w.grad)",
    "grad_holomorphic": "z = torch.tensor([1+2j, -0.5+0.3j], dtype=torch.complex128, requires_grad=True)\n"
                        "loss = (z.exp() / (z + 3) * z.sin() + z.sqrt().tanh()).abs().pow(2).sum()\n"
                        "loss.backward()\nprint(loss, z.grad)",
    "grad_parts": "z = torch.tensor([1+2j, -0.5+0.3j, 2-1j], dtype=torch.complex128, requires_grad=True)\n"
                  "(z.angle() + z.imag * 2 + z.conj().real).sum().backward()\nprint(z.grad)",
    "grad_real_to_complex": "x = torch.tensor([1., 2, 3], dtype=torch.float64, requires_grad=True)\n"
                            "(x * (1 + 2j)).exp().abs().sum().backward()\nprint(x.grad)",
    "grad_polar_complex": "x = torch.tensor([1., 2], dtype=torch.float64, requires_grad=True)\n"
                          "t = torch.tensor([0.5, -1.], dtype=torch.float64, requires_grad=True)\n"
                          "c = torch.polar(x, t) + torch.complex(t, x)\n"
                          "(c * c.conj() * (1j + c)).real.sum().backward()\nprint(x.grad, t.grad)",
    "grad_matmul": "A = torch.tensor([[1+2j, 3j], [1, 2-1j]], requires_grad=True)\n"
                   "B = torch.tensor([[1j, 2], [2, -1j]], requires_grad=True)\n"
                   "(A @ B).abs().sum().backward()\nprint(A.grad, B.grad)",
    "grad_views": "A = torch.tensor([[1+2j, 3j], [1, 2-1j]], requires_grad=True)\nv = torch.view_as_real(A)\n"
                  "(v ** 2).sum().backward()\nr = torch.tensor([[1., 2], [3, 4]], requires_grad=True)\n"
                  "c = torch.view_as_complex(r)\n(c * c).abs().sum().backward()\n"
                  "print(A.grad, r.grad, type(v.grad_fn).__name__, type(c.grad_fn).__name__)",
    "grad_output": "z = torch.tensor([1+2j, -0.5+0.3j], dtype=torch.complex128, requires_grad=True)\n"
                   "g, = torch.autograd.grad(z * z, z, torch.tensor([1+1j, 2-1j], dtype=torch.complex128))\n"
                   "print(g)",
    "double_backward": "z = torch.tensor([1+2j, -0.5+0.3j], dtype=torch.complex128, requires_grad=True)\n"
                       "g, = torch.autograd.grad((z.abs() ** 3).sum(), z, create_graph=True)\n"
                       "h, = torch.autograd.grad(g.abs().sum(), z)\n"
                       "g2, = torch.autograd.grad((z * z.exp()).real.sum(), z, create_graph=True)\n"
                       "h2, = torch.autograd.grad((g2 * g2).real.sum(), z)\nprint(g, h, g2, h2)",
    "node_names": "z = torch.tensor([1+2j], dtype=torch.complex128, requires_grad=True)\nprint([type(f.grad_fn).__name__"
                  " for f in (z * 2, z.sgn(), z.abs(), z.real, z.imag, z.conj(), z.conj_physical(), z.angle(),"
                  " torch.view_as_real(z))])",
    "forward_mode": "fw = torch.autograd.forward_ad\nz = torch.tensor([1+2j, -0.5+0.3j], dtype=torch.complex128)\n"
                    "t = torch.tensor([0.2+0.1j, -1+0.5j], dtype=torch.complex128)\nwith fw.dual_level():\n"
                    "    d = fw.make_dual(z, t)\n    a = (d.exp() * d).abs() + d.angle() + d.sgn().real\n"
                    "    b = d.conj() * d.sin() / (d + 1j)\n"
                    "    print(fw.unpack_dual(a).tangent, fw.unpack_dual(b).tangent)",
    "gradcheck": "z = torch.tensor([1+2j, -0.5+0.3j], dtype=torch.complex128, requires_grad=True)\n"
                 "x = torch.tensor([0.5, 2.], dtype=torch.float64, requires_grad=True)\n"
                 "gc, ggc = torch.autograd.gradcheck, torch.autograd.gradgradcheck\n"
                 "print(gc(lambda z: z.sgn(), (z,), check_forward_ad=True), ggc(lambda z: z.sgn(), (z,)),"
                 " gc(lambda z: (z * z.exp()).abs(), (z,), check_forward_ad=True),"
                 " gc(lambda z, x: (z * x, torch.polar(x, x)), (z, x), check_forward_ad=True),"
                 " ggc(lambda z, x: z.angle() * x, (z, x)), gc(lambda z: z.conj() * z, (z,), fast_mode=True))",
    "gradcheck_catches": "class Bad(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, z):\n"
                         "        ctx.save_for_backward(z)\n        return z * z\n    @staticmethod\n"
                         "    def backward(ctx, g):\n        z, = ctx.saved_tensors\n        return 2 * g * z\n"
                         "z = torch.tensor([1+2j, -0.5+0.3j], dtype=torch.complex128, requires_grad=True)\n"
                         "print(torch.autograd.gradcheck(Bad.apply, (z,), raise_exception=False))",
    # refusals
    "refused_relu": "torch.relu(torch.tensor([1j]))",
    "assign_complex_to_real": "x = torch.ones(2)\nx[0] = 1j\nprint(x)",
    "assign_complex": "z = torch.zeros(2, dtype=torch.cfloat)\nz[0] = 1j\nz[1:] = 2 - 1j\nprint(z)",
}


def _run(mod, code: str) -> str:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(code, {"torch": mod, "np": np})
    except Exception as e:  # noqa: BLE001
        return out.getvalue() + f"!{type(e).__name__}"
    return out.getvalue()


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_complex_prints_as_torch(name):
    code = SNIPPETS[name]
    try:
        expected = _run(torch, code)
    finally:
        torch.set_default_dtype(torch.float32)
    try:
        got = _run(ember, code)
    finally:
        ember.set_default_dtype(ember.float32)
    assert got == expected


def test_conj_is_eager():
    """ember's conj is a new tensor, not PyTorch's lazily conjugated view: is_conj() is False and a write into
    the conjugate does not reach the input (documented in ember/ops/complex.py and the README)."""
    z = ember.tensor([1 + 2j])
    c = z.conj()
    assert not c.is_conj() and c.resolve_conj() is c
    c[0] = 5
    assert z.tolist() == [1 + 2j]


def test_complex_gradient_descends_a_real_loss():
    """PyTorch's convention: the gradient of a real loss is conj Wirtinger, so plain SGD converges."""
    target = ember.tensor([3 - 1j, -2 + 0.5j], dtype=ember.complex128)
    z = ember.zeros(2, dtype=ember.complex128, requires_grad=True)
    opt = ember.optim.SGD([z], lr=0.1)
    for _ in range(200):
        opt.zero_grad()
        loss = (z - target).abs().pow(2).sum()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(z.detach().numpy(), target.numpy(), atol=1e-8)
