"""torch-level functions that are not ops of the derivative table: predicates and queries on tensors, the
default device, PyTorch's removed functions (which raise its removal errors), compile/control-flow entry points
run eagerly, DLPack exchange, and build facts. ``ops/public.py`` exports them as ``torch.<name>``."""
from __future__ import annotations

import builtins
import warnings
from typing import Any, Callable

from .. import _dtype as D
from .. import _device as _device_mod
from .._device import check_device, device as _device_type, device_namespace
from .._tensor import Tensor, make
from ..devices import NAMESPACES
from ..devices.cpu.namespace import backend as _cpu_backend
from ._registry import method
from .creation import arange, tensor

__all__ = ["typename", "is_nonzero", "is_same_size", "is_signed", "is_inference", "get_device", "detach", "detach_",
           "scalar_tensor", "range", "set_default_device", "get_default_device", "compile", "cond", "while_loop",
           "from_dlpack", "to_dlpack", "lstsq", "solve", "symeig", "eig", "matrix_rank", "has_lapack", "has_mkl",
           "has_openmp", "has_spectral"]

# Facts of the build that programs test before choosing a path. LAPACK: NumPy's linalg; MKL, OpenMP: not used by
# ember itself; spectral ops (torch.fft): not built yet.
has_lapack, has_mkl, has_openmp, has_spectral = True, False, False, False


def _tensor_arg(x, op: str, arg: str = "input", pos: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def typename(obj: Any) -> str:
    """The type of ``obj`` as a string: a tensor's legacy type (``'torch.FloatTensor'``), else the class's
    module and qualified name (``'ember.nn.modules.linear.Linear'``)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if module in ("", "builtins", "__builtin__"):
        return type(obj).__name__ if not isinstance(obj, type) else obj.__name__
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{name}"


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is not zero (PyTorch's errors for none or several elements)."""
    return _tensor_arg(input, "is_nonzero").is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    _tensor_arg(input, "is_same_size")
    return input.is_same_size(other)


def is_signed(input: Tensor) -> bool:
    return _tensor_arg(input, "is_signed").is_signed()


def is_inference(input: Tensor) -> bool:
    return _tensor_arg(input, "is_inference").is_inference()


def get_device(input: Tensor) -> int:
    return _tensor_arg(input, "get_device").get_device()


def detach(input: Tensor) -> Tensor:
    return _tensor_arg(input, "detach").detach()


def detach_(input: Tensor) -> Tensor:
    return _tensor_arg(input, "detach_").detach_()


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor of the number ``s`` in the default float dtype (whatever the number's type), as PyTorch."""
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, (builtins.bool, builtins.int, builtins.float)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    D.check_layout(layout, "scalar_tensor")
    return tensor(s, dtype=dtype or D.get_default_dtype(), device=device, requires_grad=requires_grad)


def range(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False, layout=None,
          out=None) -> Tensor:
    """Deprecated in PyTorch (with its warning): ``start, start + step, ...`` up to ``end`` included, in the default
    float dtype unless ``dtype`` is given. Each value is ``start + i * step`` in float64, then cast, as PyTorch's
    kernel computes it."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    if out is not None:
        raise NotImplementedError("ember: range(out=...) is not supported yet")
    if not step or step != step:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = builtins.int((end - start) / step) + 1
    values = arange(n, dtype=D.float64, device=device) * step + start
    t = values.to(dtype or D.get_default_dtype())
    return t._set_requires_grad(True) if requires_grad else t


# ----- the default device --------------------------------------------------------------------------------------

_default_device: list = [None]


def set_default_device(device) -> None:
    """The device factory functions use when given none: 'cpu', or 'cuda' where CuPy sees a GPU ('cuda' raises
    what a CPU-only PyTorch raises without one); other devices raise NotImplementedError rather than be silently
    ignored. None resets it to the cpu."""
    if device is None:
        _default_device[0] = _device_mod.DEFAULT[0] = None
        return
    d = check_device(device, creation=True)
    if d.type not in ("cpu", "cuda"):
        raise NotImplementedError(f"ember: set_default_device({str(d)!r}): only the 'cpu' default is built yet "
                                  "(and 'cuda'); pass device= to the factory functions instead")
    _default_device[0] = d
    _device_mod.DEFAULT[0] = None if d.type == "cpu" else d


def get_default_device() -> _device_type:
    return _default_device[0] or _device_type("cpu")


# ----- torch.compile and the control-flow operators, run eagerly -----------------------------------------------

def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable = "inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False):
    """``torch.compile``'s argument checks, with PyTorch's errors, and a pass-through (``compile(f)`` is ``f``; without
    a model, a decorator). ``ember.compile`` is ember.compiler's (this layer is below nn): it calls this first for
    the checks."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(model):
        raise RuntimeError("torch.compile() expected a callable model")
    return model


def _pred_value(pred) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
        return builtins.bool(pred.item())
    if isinstance(pred, (builtins.bool, builtins.int)):
        return builtins.bool(pred)
    raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")


def cond(pred, true_fn: Callable, false_fn: Callable, operands: tuple | list = ()) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, run eagerly (PyTorch traces both
    branches for its compiler; eagerly the result is the same)."""
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple of possibly nested dict/list/tuple that only consists "
                           f"of tensor leaves, but got {operands}.")
    return (true_fn if _pred_value(pred) else false_fn)(*operands)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> tuple:
    """``while cond_fn(*vals): vals = body_fn(*vals)``, run eagerly; returns the final values as a tuple."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got {type(carried_inputs)}")
    vals = tuple(carried_inputs)
    while _pred_value(cond_fn(*vals)):
        out = body_fn(*vals)
        vals = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return vals


# ----- DLPack ----------------------------------------------------------------------------------------------------

def to_dlpack(tensor: Tensor):
    """A DLPack capsule of the tensor's memory (shared, not copied), for other libraries' ``from_dlpack``."""
    _tensor_arg(tensor, "to_dlpack", "tensor")
    return NAMESPACES[type(tensor._data)].backend.to_dlpack(tensor._data)


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing the memory of any object with ``__dlpack__`` (a NumPy array, a torch tensor, ...) or of
    a DLPack capsule; GPU memory (a CuPy array, a torch.cuda or JAX tensor) becomes a 'cuda' tensor (a CPU-only
    PyTorch's AssertionError without CuPy or a GPU). A capsule is read as CPU memory."""
    from ..devices import cuda as _cuda
    if _cuda.is_cuda_dlpack(ext_tensor):
        check_device("cuda")   # a CPU-only PyTorch's AssertionError without CuPy or a GPU
        return make(device_namespace("cuda").backend.from_dlpack(ext_tensor))
    return make(_cpu_backend.from_dlpack(ext_tensor))


# ----- functions PyTorch removed: calling them raises its error ---------------------------------------------------

def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\n"
        "Please use the `torch.linalg.matrix_rank` function instead. "
        "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")


def solve(input, A, *, out=None):
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. "
        "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
        "`torch.linalg.solve` has its arguments reversed and does not return the LU factorization.\n\n"
        "To get the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
        "X = torch.solve(B, A).solution should be replaced with:\nX = torch.linalg.solve(A, B)")


def lstsq(input, A, *, out=None):
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. "
        "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
        "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
        "the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, "
        "the residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
        "should be replaced with:\nX = torch.linalg.lstsq(A, B).solution")


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. "
        "The default behavior has changed from using the upper triangular portion of the matrix by default "
        "to using the lower triangular portion.\n\n"
        "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
        "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
        "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
        "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")


def eig(self, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. "
        "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
        "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\n"
        "L_complex = torch.linalg.eigvals(A)\n\nand\n\n"
        "L, V = torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)")


for _name, _fn in (("lstsq", lstsq), ("solve", solve), ("symeig", symeig), ("eig", eig)):
    method(_name, _fn)   # Tensor.lstsq, ...: the same removal errors
