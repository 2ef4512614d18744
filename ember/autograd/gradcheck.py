"""Gradient checking: ``gradcheck`` and ``gradgradcheck``, as PyTorch's ``torch.autograd.gradcheck``.

Analytical derivatives (reverse mode, and forward mode with ``check_forward_ad``) are compared with
central differences of the function itself. Slow mode compares whole Jacobians, built one column per
perturbed input element (numerical), one row per output element (reverse mode) or one column per
input element (forward mode). Fast mode compares the scalars ``v^T J u`` for random unit vectors
``u`` and ``v``: one directional difference, one VJP or JVP per input/output pair, however large.

As in PyTorch, inputs are perturbed in place through ``.data`` (no version bump, so the function
may save them) and Jacobians are laid out ``(input numel, output numel)``.
Complex inputs and outputs are checked as PyTorch checks them (see ``_gradcheck_real_imag``); sparse
inputs, which ember does not have, are not handled.
"""
from __future__ import annotations

import warnings
from itertools import product
from typing import Callable, Sequence

from ..ops import public as _torch   # the torch namespace of the op layer (the root imports this package)

from .._tensor import Tensor
from . import forward_ad as fwAD
from .engine import grad as _grad
from .function import LEGACY_VMAP, Function
from .grad_mode import no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` and :func:`gradgradcheck` when a check fails."""


# ----- small helpers ----------------------------------------------------------------------------

def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_float(t) -> bool:
    """A differentiable dtype: floating or complex."""
    return isinstance(t, Tensor) and (t.is_floating_point() or t.dtype.is_complex)


def _is_complex(t) -> bool:
    return isinstance(t, Tensor) and t.dtype.is_complex


def _needs_grad(t) -> bool:
    return isinstance(t, Tensor) and t.requires_grad


def _diff_positions(values) -> list[int]:
    """Positions of the tensors that require grad."""
    return [i for i, v in enumerate(values) if _needs_grad(v)]


def _differentiable_outputs(out) -> tuple:
    return tuple(o for o in _as_tuple(out) if _needs_grad(o))


def _indices(t: Tensor):
    """Every index of ``t``, in row-major (flattened) order."""
    return product(*[range(n) for n in t.shape])


def _allclose(a: Tensor, b: Tensor, rtol: float, atol: float) -> bool:
    dt = _torch.promote_types(a.dtype, b.dtype)
    return bool(_torch.allclose(a.to(dtype=dt), b.to(dtype=dt), rtol, atol))


def _stack_columns(cols: list, n_rows: int, like: Tensor, dtype) -> Tensor:
    """The matrix whose columns are ``cols`` (each flat, ``n_rows`` long); ``None`` columns are zero."""
    with no_grad():
        cols = [like.new_zeros((n_rows,), dtype=dtype) if c is None else c.reshape(-1).to(dtype=dtype)
                for c in cols]
        if not cols:
            return like.new_zeros((n_rows, 0), dtype=dtype)
        return _torch.stack(cols, dim=1)


def _stack_rows(rows: list, n_cols: int, like: Tensor, dtype) -> Tensor:
    with no_grad():
        if not rows:
            return like.new_zeros((0, n_cols), dtype=dtype)
        return _torch.stack([r.reshape(-1).to(dtype=dtype) for r in rows], dim=0)


def _notallclose_msg(analytical, numerical, output_idx: int, input_idx: int, complex_indices=None,
                     test_imag: bool = False, forward: bool = False) -> str:
    """PyTorch's message. A complex output (reverse mode) or input (forward mode) is checked as two real
    functions, its imaginary part then its real part; ``complex_indices`` are the positions of the complex
    ones (among the differentiable outputs, or among all inputs, as PyTorch indexes them)."""
    out_is_complex = not forward and complex_indices and output_idx in complex_indices
    inp_is_complex = forward and complex_indices and input_idx in complex_indices
    prefix = ""
    if out_is_complex or inp_is_complex:
        part = "imaginary" if test_imag else "real"
        element = "inputs" if forward else "outputs"
        prefix = f"While considering the {part} part of complex {element} only, "
    mode = "computed with forward mode " if forward else ""
    return (f"{prefix}Jacobian {mode}mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


# ----- input checks -------------------------------------------------------------------------------

def _check_inputs(inputs: tuple, eps: float, stacklevel: int) -> None:
    any_requires_grad = False
    for idx, inp in enumerate(inputs):
        if not _needs_grad(inp):
            continue
        if inp.dtype not in (_torch.float64, _torch.complex128):
            # PyTorch's warning, and (beyond it) why and what to do: this is the most common
            # cause of a gradcheck that fails on a correct function.
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point or complex. "
                "This check will likely fail if all the inputs are not of double precision floating point "
                f"or complex. Input #{idx} is {inp.dtype}: its rounding error (relative "
                f"{_torch.finfo(inp.dtype).eps:.1e}) limits the accuracy of central differences taken with "
                f"eps={eps:g}. "
                + ("Pass complex128 inputs, e.g. z.to(torch.complex128) or torch.randn(..., dtype=torch.complex128)."
                   if inp.dtype.is_complex else
                   "Pass float64 inputs, e.g. x.double() or torch.randn(..., dtype=torch.float64)."),
                stacklevel=stacklevel)
        # (An empty tensor overlaps nothing, whatever strides its array reports.)
        if inp.numel() and not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs that are "
                "non-overlapping to be able to compute the numerical gradients correctly. You should call "
                ".contiguous on the input before passing it to gradcheck.")
        any_requires_grad = True
    if not any_requires_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")


# ----- numerical derivatives (central differences) ----------------------------------------------------

def _evaluator(func: Callable, inputs: tuple) -> Callable[[], tuple]:
    """``func(*inputs)`` as a tuple of copies: an output may alias an input that is perturbed next."""
    def run():
        return tuple(o.detach().clone() if isinstance(o, Tensor) else o for o in _as_tuple(func(*inputs)))
    return run


def _check_same_dtype_and_shape(a: Tensor, b: Tensor, eps: float, idx=None) -> None:
    on_index = f"on index {idx} " if idx is not None else ""
    if a.shape != b.shape:
        raise AssertionError(f"Expected `func` to return outputs with the same shape when inputs are perturbed "
                             f"{on_index}by {eps}, but got: shapes {a.shape} and {b.shape}.")
    if a.dtype != b.dtype:
        raise AssertionError(f"Expected `func` to return outputs with the same dtype when inputs are perturbed "
                             f"{on_index}by {eps}, but got: dtypes {a.dtype} and {b.dtype}.")


def _central_difference(run: Callable, entry: Tensor, step, eps: float, idx=None) -> list:
    """(f(x + step) - f(x - step)) / (2 eps), flattened, for every output of ``run`` (None if not a float
    tensor), where ``entry`` is (a view of) the input's ``.data`` and is restored afterwards."""
    with no_grad():
        orig = entry.clone()
        entry.copy_(orig - step)
    try:
        before = run()
        with no_grad():
            entry.copy_(orig + step)
        after = run()
    finally:
        with no_grad():
            entry.copy_(orig)
    cols = []
    for a, b in zip(before, after):
        if not (_is_float(a) and _is_float(b)):
            cols.append(None)
            continue
        _check_same_dtype_and_shape(a, b, eps, idx)
        cols.append(((b - a) / (2 * eps)).reshape(-1))
    return cols


def _numerical_jacobians(func: Callable, inputs: tuple, outputs: tuple, eps: float) -> dict:
    """{(output position, input position): (input numel, output numel) Jacobian} for every float output
    and every input that requires grad, one input element at a time."""
    run = _evaluator(func, inputs)
    jac = {}
    for i in _diff_positions(inputs):
        x = inputs[i]
        data = x.data   # no version bump, and no graph: the function may have saved x
        if x.dtype.is_complex:
            # the conjugate Wirtinger form PyTorch's gradients take, for real outputs (complex ones are checked
            # as their real and imaginary parts): ds/dx + i ds/dy
            cols = [[None if a is None else a + b * 1j for a, b in zip(
                _central_difference(run, data[idx], eps, eps, idx),
                _central_difference(run, data[idx], eps * 1j, eps, idx))] for idx in _indices(x)]
        else:
            cols = [_central_difference(run, data[idx], eps, eps, idx) for idx in _indices(x)]
        for j, o in enumerate(outputs):
            if _is_float(o):
                jac[(j, i)] = _stack_rows([c[j] for c in cols], o.numel(), o,
                                          x.dtype if x.dtype.is_complex else o.dtype)
    return jac


# ----- analytical derivatives -------------------------------------------------------------------------

def _vjp_rows(output: Tensor, diff_inputs: list, grad_outputs) -> list[list]:
    """[input][k]: the gradients of ``output`` w.r.t. each input for each grad_output in turn."""
    per_input = [[] for _ in diff_inputs]
    for g in grad_outputs:
        res = _grad(output, diff_inputs, g, retain_graph=True, allow_unused=True)
        for lst, r in zip(per_input, res):
            lst.append(None if r is None else r.detach().clone())
    return per_input


def _check_vjps(rows: list[list], diff_inputs: list, check_grad_dtypes: bool) -> None:
    for inp, grads in zip(diff_inputs, rows):
        for g in grads:
            if g is None:
                continue
            if g.shape != inp.shape:
                raise GradcheckError("Analytical gradient has incorrect size")
            if g.dtype != inp.dtype and check_grad_dtypes:
                raise GradcheckError("Gradient has dtype mismatch")


_FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""   # PyTorch's text, word for word


def _analytical_reverse(inputs: tuple, output: Tensor, grad_outputs_fn: Callable, nondet_tol: float,
                        check_grad_dtypes: bool) -> list[Tensor]:
    """One (input numel, number of grad_outputs) matrix per input that requires grad, column k the VJP
    with the k-th grad_output; computed twice, and the two must agree within ``nondet_tol`` (reentrancy)."""
    diff_inputs = [inputs[i] for i in _diff_positions(inputs)]
    mats = []
    for _ in range(2):
        rows = _vjp_rows(output, diff_inputs, grad_outputs_fn())
        _check_vjps(rows, diff_inputs, check_grad_dtypes)
        mats.append([_stack_columns(r, x.numel(), x, x.dtype) for r, x in zip(rows, diff_inputs)])
    for a, b in zip(*mats):
        if a.numel() and float((a - b).abs().max()) > nondet_tol:
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                "times gives different values, although analytical gradient matches numerical gradient."
                f"The tolerance for nondeterminism was {nondet_tol}." + _FAILED_NONDET_MSG)
    return mats[0]


def _unit_grad_outputs(output: Tensor) -> Callable[[], list]:
    """The one-hot grad_outputs that pick each row of the Jacobian in turn."""
    def make():
        out = []
        for k in range(output.numel()):
            with no_grad():
                g = _torch.zeros(output.numel(), dtype=output.dtype)
                g[k] = 1.0
            out.append(g.reshape(output.shape))
        return out
    return make


def _analytical_jacobians(inputs: tuple, output: Tensor, nondet_tol: float,
                          check_grad_dtypes: bool) -> list[Tensor]:
    return _analytical_reverse(inputs, output, _unit_grad_outputs(output), nondet_tol, check_grad_dtypes)


def _forward_tangents(func: Callable, inputs: tuple, outputs_at: list[int], tangent_fill) -> list[list]:
    """Run ``func`` on dual inputs; ``tangent_fill(k, tangent)`` yields once per evaluation after filling
    the tangent of the k-th differentiable input in place. Returns [k][evaluation][output] tangents."""
    diff = _diff_positions(inputs)
    res = []
    with fwAD.dual_level():
        duals = list(inputs)
        tangents = []
        for i in diff:
            d = fwAD.make_dual(inputs[i].detach(), _torch.zeros_like(inputs[i]))
            duals[i] = d
            # As PyTorch: read the tangent back, the dual may not hold the very tensor we gave it.
            tangents.append(fwAD.unpack_dual(d).tangent)
        for k, t in enumerate(tangents):
            per_eval = []
            for _ in tangent_fill(k, t):
                outs = _as_tuple(func(*duals))
                cols = []
                for j in outputs_at:
                    tan = fwAD.unpack_dual(outs[j]).tangent
                    # Copy: a tangent may be a view of the input tangent we are about to refill. (Not detached:
                    # as in PyTorch, a tangent that depends on an input requiring grad carries a graph.)
                    cols.append(None if tan is None else tan.reshape(-1).clone())
                per_eval.append(cols)
            res.append(per_eval)
    return res


def _one_hot_fill(k: int, t: Tensor):
    for idx in _indices(t):
        with no_grad():
            t[idx] = 1.0
        yield
        with no_grad():
            t[idx] = 0.0


def _forward_jacobian(rows: list, out: Tensor) -> Tensor:
    """PyTorch's forward-mode Jacobian: zeros of ``out``'s dtype, each row (a tangent, None: zero) copied in
    with autograd recording, so that a tangent carrying a graph gives the Jacobian a ``grad_fn`` (its printed
    form in a failure message, as PyTorch's). One row: a vector (fast mode's ``J u``)."""
    jac = _torch.zeros((len(rows), out.numel()), dtype=out.dtype)
    if len(rows) == 1:
        jac.squeeze_(0)
        return jac.zero_() if rows[0] is None else jac.copy_(rows[0])
    for k, r in enumerate(rows):
        if r is None:
            jac[k].zero_()
        else:
            jac[k].copy_(r)
    return jac


def _forward_jacobians(func: Callable, inputs: tuple, outputs: tuple) -> dict:
    """{(output position, input position): Jacobian} by forward mode, one input element at a time."""
    float_at = [j for j, o in enumerate(outputs) if _is_float(o)]
    diff = _diff_positions(inputs)
    cols = _forward_tangents(func, inputs, float_at, _one_hot_fill)
    jac = {}
    for k, i in enumerate(diff):
        for n, j in enumerate(float_at):
            jac[(j, i)] = _forward_jacobian([ev[n] for ev in cols[k]], outputs[j])
    return jac


def _complex_outputs_as(func: Callable, part: Callable) -> Callable:
    """``func`` with each complex output replaced by ``part`` of it (its real or imaginary parts)."""
    def fn(*inputs):
        return tuple(part(o) if _is_complex(o) else o for o in _as_tuple(func(*inputs)))
    return fn


def _complex_inputs_as(func: Callable, inputs: tuple, cx_in: list, part: str):
    """``func`` as a function of the real (or imaginary) parts of the complex inputs at ``cx_in``, the other part
    held fixed, and those parts as real inputs (requiring grad where the complex input does)."""
    part_inputs = list(inputs)
    for i in cx_in:
        part_inputs[i] = getattr(inputs[i], part)   # a view, as PyTorch passes it (perturbed through .data)

    def fn(*args):
        full = list(args)
        for i in cx_in:
            orig = inputs[i]   # not detached, as PyTorch (a tangent through it carries a graph)
            full[i] = args[i] + orig.imag * 1j if part == "real" else orig.real + args[i] * 1j
        return _as_tuple(func(*full))
    return fn, tuple(part_inputs)


def _gradcheck_real_imag(check, func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol,
                         check_forward_ad, check_backward_ad, check_undefined_grad) -> None:
    """PyTorch's ``_gradcheck_real_imag``: reverse mode checks a complex output as two real functions (its
    imaginary part, then its real part); forward mode checks complex inputs as two real variables (the imaginary
    parts, then the real parts). The messages say which part failed."""
    # Without complex values, the reverse- and forward-mode checks share their central differences.
    cache: dict = {}
    if check_backward_ad:
        if any(_is_complex(o) for o in _as_tuple(func_out)):
            cx_out = [k for k, o in enumerate(outputs) if _is_complex(o)]
            for part, test_imag in ((_torch.imag, True), (_torch.real, False)):
                fn = _complex_outputs_as(func, part)
                check(fn, fn(*inputs), inputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, False, {},
                      cx_out, test_imag)
        else:
            check(func, func_out, inputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, False, cache)
    if check_forward_ad:
        cx_in = [i for i, x in enumerate(inputs) if _is_complex(x)]
        if cx_in:
            parts = []
            for part, test_imag in (("imag", True), ("real", False)):
                fn, part_inputs = _complex_inputs_as(func, inputs, cx_in, part)
                part_out = fn(*part_inputs)
                check(fn, part_out, part_inputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, True, {},
                      cx_in, test_imag)
                parts.append((fn, part_out, part_inputs))
            if check_undefined_grad:
                for fn, part_out, part_inputs in parts:
                    _test_undefined_forward_mode(fn, _differentiable_outputs(part_out), part_inputs)
        else:
            check(func, func_out, inputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, True, cache)
            if check_undefined_grad:
                _test_undefined_forward_mode(func, outputs, inputs)


# ----- slow mode ------------------------------------------------------------------------------------

def _check_no_differentiable_outputs(func, inputs, func_out, eps) -> None:
    for jac in _numerical_jacobians(func, inputs, func_out, eps).values():
        if bool((jac != 0).any()):
            raise GradcheckError("Numerical gradient for function expected to be zero")


def _slow_gradcheck(func, func_out, inputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, use_forward_ad,
                    cache: dict, complex_indices=None, test_imag: bool = False):
    func_out = _as_tuple(func_out)
    out_at = _diff_positions(func_out)
    if not out_at:
        _check_no_differentiable_outputs(func, inputs, func_out, eps)
        return
    # The reverse- and forward-mode checks compare with the same central differences: take them once
    # (one evaluation pair per input element, the bulk of a slow check's cost).
    if "numerical" not in cache:
        cache["numerical"] = _numerical_jacobians(func, inputs, func_out, eps)
    numerical = cache["numerical"]
    in_at = _diff_positions(inputs)
    if use_forward_ad:
        analytical = _forward_jacobians(func, inputs, func_out)
        for oi, j in enumerate(out_at):
            for ii, i in enumerate(in_at):
                a, n = analytical[(j, i)], numerical[(j, i)]
                if not _allclose(a, n, rtol, atol):
                    raise GradcheckError(_notallclose_msg(a, n, oi, ii, complex_indices, test_imag, forward=True))
        return
    for oi, j in enumerate(out_at):
        analytical = _analytical_jacobians(inputs, func_out[j], nondet_tol, check_grad_dtypes)
        for ii, (i, a) in enumerate(zip(in_at, analytical)):
            n = numerical[(j, i)]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, oi, ii, complex_indices, test_imag))


# ----- fast mode ------------------------------------------------------------------------------------

def _random_unit_vectors(inputs: tuple, outputs: tuple, use_forward_ad: bool):
    """PyTorch's u (one per differentiable input) and v (one per differentiable output): uniform [0, 1)
    draws from a fresh generator, normalised. A private generator leaves the user's RNG state alone,
    and the same seed gives the same vectors as PyTorch. A complex input gets a pair (u_r, u_i) of real
    vectors, drawn one after the other: it is perturbed along u_r and along i u_i."""
    g = _torch.Generator()

    def vec(t: Tensor, downcast_complex: bool = False) -> Tensor:
        dtype = t.dtype.to_real() if downcast_complex and t.dtype.is_complex else t.dtype
        v = _torch.rand(t.numel(), generator=g).to(dtype=dtype)
        return v / v.norm()

    all_u = []
    for i in _diff_positions(inputs):
        ur = vec(inputs[i], True)
        all_u.append((ur, vec(inputs[i], True)) if inputs[i].dtype.is_complex else ur)
    all_v = None if use_forward_ad else [vec(o) for o in outputs]
    return all_u, all_v


def _numerical_Ju(func, inputs: tuple, u, i: int, eps: float) -> list:
    """J u for every output of ``func`` w.r.t. input ``i``: one central difference along ``u``; for a complex
    input, ``u = (u_r, u_i)`` and J u is the conjugate Wirtinger form ds/dx u_r + i ds/dy u_i (as PyTorch)."""
    x = inputs[i]
    run = _evaluator(func, inputs)
    if isinstance(u, tuple):
        ds_dx = _central_difference(run, x.data, u[0].reshape(x.shape) * eps, eps)
        ds_dy = _central_difference(run, x.data, (u[1] * eps).reshape(x.shape) * 1j, eps)
        return [None if a is None else a + b * 1j for a, b in zip(ds_dx, ds_dy)]
    return _central_difference(run, x.data, u.reshape(x.shape) * eps, eps)


def _adjusted_atol(atol: float, u, v) -> float:
    """PyTorch's tolerance for ``v^T J u``: |v^T (A - N) u| may reach atol * sum(u) * sum(v) when every entry
    differs by atol; for a complex input, u = (u_r, u_i) counts sum(u_r) + sum(u_i)."""
    sum_v = 1.0 if v is None else float(v.sum())
    sum_u = float(u[0].sum()) + float(u[1].sum()) if isinstance(u, tuple) else float(u.sum())
    return atol * sum_u * sum_v


_FAST_FAIL_SLOW_OK_MSG = """
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:

If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `fast_mode=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_fast_mode=False`
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_fast_mode=False`
""".strip()


def _fast_fail_details(func, inputs, func_out, ii, j, rtol, atol, eps, use_forward_ad) -> str:
    """Slow mode's full Jacobians for the failing pair (``ii``-th differentiable input, output at
    position ``j``), so the message shows where they differ."""
    i = _diff_positions(inputs)[ii]
    numerical = _numerical_jacobians(func, inputs, func_out, eps)[(j, i)]
    if use_forward_ad:
        analytical = _forward_jacobians(func, inputs, func_out)[(j, i)]
    else:
        analytical = _analytical_jacobians(inputs, func_out[j], float("inf"), False)[ii]
    max_diff = (numerical - analytical).abs().max() if numerical.numel() else 0.0
    slow_allclose = bool(_torch.allclose(analytical, numerical, rtol, atol))
    msg = ("\nThe above quantities relating the numerical and analytical jacobians are computed \n"
           "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
           "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
           f"Numerical:\n {numerical}\n"
           f"Analytical:\n{analytical}\n\n"
           f"The max per-element difference (slow mode) is: {max_diff}.\n")
    if slow_allclose:
        msg += _FAST_FAIL_SLOW_OK_MSG   # slow mode would have passed
    return msg


def _fast_gradcheck(func, func_out, inputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, use_forward_ad,
                    cache: dict, complex_indices=None, test_imag: bool = False):
    func_out = _as_tuple(func_out)
    out_at = _diff_positions(func_out)
    outputs = tuple(func_out[j] for j in out_at)
    in_at = _diff_positions(inputs)
    all_u, all_v = _random_unit_vectors(inputs, outputs, use_forward_ad)

    # numerical[ii][oi]: J u (forward mode) or v^T J u (backward mode)
    numerical = []
    for i, u in zip(in_at, all_u):
        # u is the same draw in both modes (forward mode draws no v): share J u between them.
        if ("Ju", i) not in cache:
            cache[("Ju", i)] = _numerical_Ju(func, inputs, u, i, eps)
        Ju = cache[("Ju", i)]
        if not out_at and not use_forward_ad:
            for c in Ju:
                if c is not None and c.numel() and float(c.abs().max()) > nondet_tol:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        Ju = [Ju[j] for j in out_at]
        numerical.append(Ju if use_forward_ad else [(v * c).sum() for v, c in zip(all_v, Ju)])

    if use_forward_ad:
        def fill(k, t):
            with no_grad():
                t.copy_(all_u[k].reshape(t.shape))
            yield
            with no_grad():
                t.zero_()
        tans = _forward_tangents(func, inputs, out_at, fill)
        analytical = [[_forward_jacobian([c], func_out[j]) for c, j in zip(tans[k][0], out_at)]
                      for k in range(len(in_at))]
    else:
        analytical = [[None] * len(out_at) for _ in in_at]
        for oi, (j, v) in enumerate(zip(out_at, all_v)):
            o = func_out[j]
            vJ = _analytical_reverse(inputs, o, lambda: [v.reshape(o.shape)], nondet_tol, check_grad_dtypes)
            for ii, (m, u) in enumerate(zip(vJ, all_u)):
                m = m.reshape(-1)
                if m.dtype.is_complex:   # C -> R: Re(vJ) . u_r + i Im(vJ) . u_i, as the numerical side
                    analytical[ii][oi] = _torch.dot(m.real, u[0]) + 1j * _torch.dot(m.imag, u[1])
                else:
                    analytical[ii][oi] = _torch.dot(m, u)

    for ii, u in enumerate(all_u):
        for oi in range(len(out_at)):
            a, n = analytical[ii][oi], numerical[ii][oi]
            if not _allclose(a, n, rtol, _adjusted_atol(atol, u, None if all_v is None else all_v[oi])):
                raise GradcheckError(_notallclose_msg(a, n, oi, ii, complex_indices, test_imag,
                                                      forward=use_forward_ad) + _fast_fail_details(
                    func, inputs, func_out, ii, out_at[oi], rtol, atol, eps, use_forward_ad))


# ----- the other checks ------------------------------------------------------------------------------

def _test_backward_mul_by_grad_output(outputs: tuple, inputs: tuple) -> None:
    diff_inputs = [inputs[i] for i in _diff_positions(inputs)]
    if not outputs:
        return
    zeros = [_torch.zeros_like(o) for o in outputs]
    grads = _grad(outputs, diff_inputs, zeros, allow_unused=True)
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if not bool(gi.eq(0).all()):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")


class _UndefinedGrad(Function):
    """Identity whose backward passes no gradient at all: ember's undefined gradient (PyTorch's
    ``UndefinedGrad``), which every backward below must treat as zero."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return None


def _test_undefined_backward_mode(func, inputs: tuple) -> None:
    diff_inputs = [inputs[i] for i in _diff_positions(inputs)]

    def warn_bc():
        warnings.warn("Backwards compatibility: New undefined gradient support checking feature is enabled by "
                      "default, but it may break existing callers of this function. If this is true for you, you "
                      "can call this function with \"check_undefined_grad=False\" to disable the feature",
                      stacklevel=6)   # warn_bc < check < this < _gradcheck < gradcheck < the caller

    def check(outs):
        zeros = [_torch.zeros_like(o) for o in outs]
        try:
            grads = _grad(outs, diff_inputs, zeros, allow_unused=True)
        except RuntimeError as e:
            warn_bc()
            raise GradcheckError("Expected backward function to handle undefined output grads. "
                                 'Please look at "Notes about undefined output gradients" in '
                                 '"tools/autograd/derivatives.yaml"') from e
        for g in grads:
            if g is not None and not bool(g.eq(0).all()):
                warn_bc()
                raise GradcheckError("Expected all input grads to be undefined or zero when all output grads "
                                     'are undefined or zero. Please look at "Notes about undefined output '
                                     'gradients" in "tools/autograd/derivatives.yaml"')

    outs = [o for o in _differentiable_outputs(func(*inputs))]
    check([_UndefinedGrad.apply(o) for o in outs])
    if len(outs) > 1:
        # One undefined output gradient at a time must work too.
        for k in range(len(outs)):
            fresh = _differentiable_outputs(func(*inputs))
            check([_UndefinedGrad.apply(o) if n == k else o for n, o in enumerate(fresh)])


def _test_undefined_forward_mode(func, outputs: tuple, inputs: tuple) -> None:
    """A tangent left undefined must act as a zero tangent."""
    diff = _diff_positions(inputs)
    all_u, _ = _random_unit_vectors(inputs, outputs, True)
    with fwAD.dual_level():
        duals = list(inputs)
        for i, u in zip(diff, all_u):
            duals[i] = fwAD.make_dual(inputs[i].detach(), u.reshape(inputs[i].shape).clone())
        for i in diff:
            keep = duals[i]
            duals[i] = fwAD.make_dual(inputs[i].detach(), _torch.zeros_like(inputs[i]))
            outs1 = [o for o in _as_tuple(func(*duals)) if _is_float(o)]
            duals[i] = inputs[i].detach()
            outs2 = [o for o in _as_tuple(func(*duals)) if _is_float(o)]
            duals[i] = keep
            for n, (o1, o2) in enumerate(zip(outs1, outs2)):
                t1, t2 = fwAD.unpack_dual(o1).tangent, fwAD.unpack_dual(o2).tangent
                if t1 is not None and t2 is not None and not _allclose(t1, t2, 1e-5, 1e-8):
                    # PyTorch's arguments: the message is the tuple they make
                    raise GradcheckError("Mismatch in tangent values for output with index: ", n, " when input: ",
                                         inputs[i], " has an undefined tangent value. ", " Got: ", t1,
                                         " but expected: ", t2)


_BATCHED_MSG = """
gradcheck or gradgradcheck failed while testing batched gradient computation.
This could have been invoked in a number of ways (via a test that calls
gradcheck/gradgradcheck directly or via an autogenerated test).

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `check_batched_grad=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `check_batched_grad=False` and/or `check_batched_gradgrad=False`.

If you're modifying an existing operator that supports batched grad computation,
or wish to make a new operator work with batched grad computation, please read
the following.

To compute batched grads (e.g., jacobians, hessians), we vmap over the backward
computation. The most common failure case is if there is a 'vmap-incompatible
operation' in the backward pass. Please see
NOTE: [How to write vmap-compatible backward formulas]
in the codebase for an explanation of how to fix this.
""".strip()   # PyTorch's text, word for word

_BATCHED_FWD_MSG = """
gradcheck failed while testing batched gradient computation with forward-mode AD.
This test is enabled automatically when both `check_batched_grad=True`
and `check_forward_ad=True`, but can be disabled in the following ways
dependong on how the test was invoked (via a test that calls gradcheck
directly or via an autogenerated test).

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `check_batched_forward_grad=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `check_batched_forward_grad=False`
"""   # PyTorch's text, word for word (typo and surrounding newlines included)


def _vmapped(fn, batch: Tensor):
    """``vmap(fn)(batch)``, the fallback's performance warnings silenced (they are expected here)."""
    from ..func import vmap   # torch.func sits in this module's layer, above autograd: loaded when first needed
    # (PyTorch's gradcheck uses its older vmap, torch._vmap_internals', no torch.func transform: a custom Function
    # runs there as it is, without setup_context or a vmap rule)
    LEGACY_VMAP[0] += 1
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="There is a performance drop")
            return vmap(fn, randomness="different")(batch)
    finally:
        LEGACY_VMAP[0] -= 1


def _batched_mismatch(output_idx: int, input_idx: int, res, exp, forward: bool = False) -> GradcheckError:
    msg = _BATCHED_FWD_MSG if forward else _BATCHED_MSG
    return GradcheckError(f"For output {output_idx} and input {input_idx}:\n\n{msg}\n\nGot:\n{res}\n\n"
                          f"Expected:\n{exp}".strip())


def _test_batched_grad(inputs: tuple, output: Tensor, output_idx: int) -> None:
    """Two VJPs one at a time must equal the same two VJPs computed by one vmap over the backward pass."""
    diff_inputs = [inputs[i] for i in _diff_positions(inputs)]

    def vjp(v):
        res = _grad(output, diff_inputs, v, retain_graph=True, allow_unused=True)
        return tuple(_torch.zeros((), dtype=x.dtype).expand(x.shape) if r is None else r
                     for r, x in zip(res, diff_inputs))

    # As PyTorch, from the global generator.
    grad_outputs = [_torch.randn_like(output) for _ in range(2)]
    expected = [_torch.stack(shards) for shards in zip(*[vjp(g) for g in grad_outputs])]
    try:
        result = _vmapped(vjp, _torch.stack(grad_outputs))
    except RuntimeError as ex:   # NotImplementedError is one too
        raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{_BATCHED_MSG}") from ex
    for input_idx, (res, exp) in enumerate(zip(result, expected)):
        if not _torch.allclose(res, exp):
            raise _batched_mismatch(output_idx, input_idx, res, exp)


def _test_batched_grad_forward_ad(func, inputs: tuple) -> None:
    """For each input, two JVPs one at a time must equal the same two JVPs computed by one vmap over forward-mode
    AD (the other inputs held constant)."""
    for input_idx, current in enumerate(inputs):
        if not (isinstance(current, Tensor) and current.requires_grad):
            continue

        def jvp(tangent, input_idx=input_idx, current=current):
            with fwAD.dual_level():
                dual = fwAD.make_dual(current.detach(), tangent)
                args = tuple(dual if i == input_idx else (a.detach() if isinstance(a, Tensor) else a)
                             for i, a in enumerate(inputs))
                ret = []
                for o in _as_tuple(func(*args)):
                    if o is None:
                        continue
                    primal, tangent_out = fwAD.unpack_dual(o)
                    ret.append(tangent_out if tangent_out is not None else
                               _torch.zeros((), dtype=primal.dtype).expand(primal.shape))
                return tuple(ret)

        if not _is_float(current):
            continue
        tangents = [_torch.randn_like(current) for _ in range(2)]
        expected = [_torch.stack(shards) for shards in zip(*[jvp(t) for t in tangents])]
        try:
            result = _vmapped(jvp, _torch.stack(tangents))
        except RuntimeError as ex:
            raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{_BATCHED_FWD_MSG}") from ex
        for k, (res, exp) in enumerate(zip(result, expected)):
            if not _torch.allclose(res, exp):
                raise _batched_mismatch(k, k, res, exp, forward=True)   # (PyTorch names output k input k too)


# ----- public API -------------------------------------------------------------------------------------

def gradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Tensor],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against central differences.

    Every input tensor with ``requires_grad=True`` (use float64) is checked; the comparison is
    ``allclose(analytical, numerical, rtol, atol)``. Raises :class:`GradcheckError` showing both
    Jacobians on failure, or returns False with ``raise_exception=False``. ``masked`` concerns sparse
    tensors, which ember does not have, and is ignored.
    """
    return _gradcheck(func, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                      nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                      check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                      check_batched_forward_grad=check_batched_forward_grad, check_forward_ad=check_forward_ad,
                      check_backward_ad=check_backward_ad, fast_mode=fast_mode, stacklevel=4)


def _gradcheck(func, inputs, *, eps, atol, rtol, raise_exception, nondet_tol, check_undefined_grad,
               check_grad_dtypes, check_batched_grad, check_batched_forward_grad, check_forward_ad,
               check_backward_ad, fast_mode, stacklevel) -> bool:
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    try:
        inputs = _as_tuple(inputs)
        _check_inputs(inputs, eps, stacklevel)
        func_out = func(*inputs)
        outputs = _differentiable_outputs(func_out)
        check = _fast_gradcheck if fast_mode else _slow_gradcheck
        _gradcheck_real_imag(check, func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol,
                             check_forward_ad, check_backward_ad, check_undefined_grad)
        if check_batched_forward_grad:
            _test_batched_grad_forward_ad(func, inputs)
        if not check_backward_ad:
            return True
        if check_batched_grad:
            for k, o in enumerate(outputs):
                _test_batched_grad(inputs, o, k)
        _test_backward_mul_by_grad_output(outputs, inputs)
        if check_undefined_grad:
            _test_undefined_backward_mode(func, inputs)
        return True
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _random_grad_output(x: Tensor, noncontiguous: bool) -> Tensor:
    """``torch.testing.make_tensor(x.shape, dtype=..., low=-1, high=1, requires_grad=True,
    noncontiguous=...)``: uniform [-1, 1) from the global generator, in the same draw order (complex: the real and
    imaginary parts, interleaved)."""
    dtype = x.dtype if _is_float(x) else _torch.float64
    shape = tuple(x.shape)
    noncontiguous = noncontiguous and x.numel() > 1
    if noncontiguous:
        shape = shape[:-1] + (2 * shape[-1],)   # the odd elements below: non-contiguous, not identical
    t = _torch.empty(shape, dtype=dtype)
    with no_grad():
        (_torch.view_as_real(t) if dtype.is_complex else t).uniform_(-1, 1)
    if noncontiguous:
        t = t[..., 1::2]
    return t.requires_grad_(True)


def gradgradcheck(
    func: Callable[..., Tensor | Sequence[Tensor]],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: :func:`gradcheck` of ``(inputs, grad_outputs) -> d<func, grad_outputs>/d inputs``
    computed with ``create_graph=True``. Without ``grad_outputs``, random ones are drawn (uniform in
    [-1, 1), from the global generator, as PyTorch draws them)."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs) for o in outs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    n_out = len(tupled_grad_outputs)
    # Remember which arguments require grad: the forward-mode check passes detached copies, and
    # the first-order gradient must still be taken with respect to them.
    diff_in = set(_diff_positions(tupled_inputs))
    diff_go = set(_diff_positions(tupled_grad_outputs))

    def first_order_grads(*args):
        xs = tuple(x.requires_grad_() if i in diff_in else x for i, x in enumerate(args[:len(args) - n_out]))
        outs = _differentiable_outputs(func(*xs))
        gos = tuple(g.requires_grad_() if i in diff_go else g for i, g in enumerate(args[len(args) - n_out:]))
        wrt = tuple(x for i, x in enumerate(xs) if i in diff_in)
        grads = _grad(outs, wrt, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return _gradcheck(first_order_grads, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                      raise_exception=raise_exception, nondet_tol=nondet_tol,
                      check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                      check_batched_grad=check_batched_grad, check_batched_forward_grad=False,
                      check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                      fast_mode=fast_mode, stacklevel=4)
