"""The functional API: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp`` (``torch.autograd.functional``).

Each takes a function of Tensors and the point to differentiate at, and nests its results exactly as PyTorch
does: a single Tensor in (or out) gives a Tensor, a tuple gives a tuple (for ``jacobian``, a tuple per output
of a tuple per input). With ``create_graph=False`` the results are detached.

How they compute, as PyTorch does:
  * ``jvp`` and ``hvp`` use the double-backward trick (the VJP of a VJP with respect to its ``v``), so
    they need no forward mode;
  * ``jacobian(vectorize=True)`` computes every row in one backward pass with
    ``autograd.grad(is_grads_batched=True)`` over a batch of basis vectors; ``vectorize=False`` runs one
    backward per output element;
  * ``strategy="forward-mode"`` (``vectorize=True`` only, as in PyTorch) pushes one basis tangent per input
    element through ``forward_ad``: PyTorch maps them all at once with vmap, ember has no batched tangents
    and loops over them, so it gives PyTorch's values but not its speed.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable

from .. import _tensor
from . import forward_ad as fwAD
from . import grad_mode as _gm
from .engine import grad as _grad
from ..ops import public as _torch   # the torch namespace of the op layer (the root imports this package)

Tensor = _tensor.Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ----- argument handling ---------------------------------------------------------------------------

def _as_tuple(x, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether ``x`` was a tuple, ``x`` as a tuple); anything but Tensors is PyTorch's TypeError."""
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(el)}.")
    return is_tuple, items


def _nest(res, is_tuple):
    """Undo the tuple wrapping: ``is_tuple`` is one flag, or (outputs were a tuple, inputs were a tuple)."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        return res if outer else res[0]
    return res if is_tuple else res[0]


def _preprocess(inputs, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensors to differentiate with respect to: a view keeps the caller's graph for create_graph,
    a detached copy cuts it otherwise."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in inputs)


def _postprocess(res, create_graph: bool):
    if create_graph:
        return res
    return tuple(_postprocess(r, create_graph) if isinstance(r, tuple) else r.detach() for r in res)


def _validate_v(v, other, other_is_tuple: bool) -> None:
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.shape != b.shape:
            prefix = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.shape} but got {a.shape}.")


_STRICT = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be "
               "computed in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
                "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                "would be violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice "
               "differentiable and that the hessian depends on the inputs.",
}


def _check_requires_grad(tensors, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_STRICT[kind].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False) -> tuple:
    """``autograd.grad`` over the outputs that require grad (None for every input if none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad(tuple(o for o, _ in pairs), inputs, tuple(g for _, g in pairs), allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph, is_grads_batched=is_grads_batched)


_FILL_STRICT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros (shaped like ``refs``) for the None gradients, or strict mode's errors."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_STRICT[stage].format(i=i))
            g = _torch.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _v_or_single_element(v, against, against_is_tuple, fn_name, create_graph, what):
    """``v`` checked against ``against`` (the inputs or the outputs); None only for one one-element tensor."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _preprocess(v, create_graph, need_graph=False)
        _validate_v(v, against, against_is_tuple)
        return v
    if len(against) != 1 or against[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a single element.")
    return None


# ----- vjp, jvp -------------------------------------------------------------------------------------

def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``."""
    with _gm.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _v_or_single_element(v, outputs, out_tuple, "vjp", create_graph,
                                 "the user-provided function returns")
    with _gm.set_grad_enabled(True if create_graph else _gm.is_grad_enabled()):
        res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "back")
    return _nest(_postprocess(outputs, create_graph), out_tuple), _nest(_postprocess(res, create_graph), in_tuple)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: the Jacobian-vector product, by the double-backward trick (as PyTorch)."""
    with _gm.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        v = _v_or_single_element(v, inputs, in_tuple, "jvp", create_graph,
                                 "the input to the user-provided function is")
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # u -> J^T u is linear in u; differentiating it with respect to u along v gives J v.
        us = tuple(_torch.zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, us, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with _gm.set_grad_enabled(True) if create_graph else nullcontext():
        res = _autograd_grad(grad_inputs, us, v, create_graph=create_graph)
        res = _fill_in_zeros(res, outputs, strict, create_graph, "back_trick")
    return _nest(_postprocess(outputs, create_graph), out_tuple), _nest(_postprocess(res, create_graph), out_tuple)


# ----- jacobian ---------------------------------------------------------------------------------------

def _standard_basis(tensors, numels) -> tuple:
    """For each tensor, a (sum(numels), numel) block of the identity: row r is basis vector r of the
    concatenated (flattened) tensors, restricted to this tensor."""
    total = sum(numels)
    chunks = []
    start = 0
    for t, n in zip(tensors, numels):
        parts = [t.new_zeros((start, n)), _torch.eye(n, dtype=t.dtype), t.new_zeros((total - start - n, n))]
        chunks.append(_torch.cat(parts, 0))
        start += n
    return tuple(chunks)


def _jacfwd(func, inputs, strict: bool, vectorize: bool):
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                  "implemented for `vectorize=True`.")
    numels = tuple(t.numel() for t in inputs)
    basis = _standard_basis(inputs, numels)
    columns = None   # per output: one tangent per input element
    out_tuple = primals = None
    # One forward pass per basis tangent (PyTorch maps them with vmap; ember has no batched tangents).
    for k in range(sum(numels)):
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(t, b[k].view_as(t)) for t, b in zip(inputs, basis))
            out_tuple, outs = _as_tuple(func(*duals), "outputs", "jacobian")
            unpacked = [fwAD.unpack_dual(o) for o in outs]
            tangents = [u.tangent if u.tangent is not None else _torch.zeros_like(u.primal) for u in unpacked]
            if columns is None:
                columns = [[] for _ in outs]
                primals = [u.primal for u in unpacked]
            for col, tg in zip(columns, tangents):
                col.append(tg)
    # Lists, not tuples, as PyTorch's forward mode returns them (its nesting otherwise as reverse mode's).
    res = []
    for col, out in zip(columns, primals):
        stacked = _torch.stack(col, 0)   # (sum(numels), *out.shape)
        per_input = []
        for jac, t in zip(stacked.split(numels, 0), inputs):
            per_input.append(jac.permute(*range(1, jac.ndim), 0).reshape(tuple(out.shape) + tuple(t.shape)))
        res.append(per_input)
    return _nest(res, (out_tuple, in_tuple))


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with _gm.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                                   "supported together. Please either set `strict=False` or `vectorize=False`.")
            # Every row at once: a batch of basis vectors through one backward pass.
            numels = tuple(o.numel() for o in outputs)
            basis = _standard_basis(outputs, numels)
            flat = tuple(o.reshape(-1) for o in outputs)
            rows = list(_autograd_grad(flat, inputs, basis, create_graph=create_graph, is_grads_batched=True))
            total = sum(numels)
            for i, r in enumerate(rows):
                if r is None:
                    rows[i] = _torch.zeros_like(inputs[i]).expand((total,) + tuple(inputs[i].shape))
            per_input = []
            for r, t in zip(rows, inputs):
                per_input.append(tuple(jac.view(tuple(o.shape) + tuple(t.shape))
                                       for jac, o in zip(r.split(numels, 0), outputs)))
            res = tuple(zip(*per_input))
            return _nest(_postprocess(res, create_graph), (out_tuple, in_tuple))
        res = []
        for i, out in enumerate(outputs):
            cols = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for k in range(out.numel()):
                row = _autograd_grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, t) in enumerate(zip(row, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is independent of "
                                               f"input {i}. This is not allowed in strict mode when "
                                               "create_graph=True.")
                        cols[j].append(g)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        cols[j].append(_torch.zeros_like(t))
            res.append(tuple(_stack_rows(c, t).view(tuple(out.shape) + tuple(t.shape))
                             for c, t in zip(cols, inputs)))
        return _nest(_postprocess(tuple(res), create_graph), (out_tuple, in_tuple))


def _stack_rows(rows, like):
    if not rows:   # an output with no elements
        return _torch.zeros((0,) + tuple(like.shape), dtype=like.dtype)
    return _torch.stack(rows, 0)


# ----- hessian, vhp, hvp -------------------------------------------------------------------------------

def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient, nested per pair of inputs."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*inp):
        out = func(*inp)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if is_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def gradient(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(scalar_func, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _nest(res, (in_tuple, in_tuple))


def _scalar_output(func, inputs, fn_name, strict):
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if out_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return out_tuple, outputs


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)`` for a scalar function."""
    with _gm.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        v = _v_or_single_element(v, inputs, in_tuple, "vhp", create_graph,
                                 "the input to the user-provided function is")
        out_tuple, outputs = _scalar_output(func, inputs, "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with _gm.set_grad_enabled(True if create_graph else _gm.is_grad_enabled()):
        res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back")
    return _nest(_postprocess(outputs, create_graph), out_tuple), _nest(_postprocess(res, create_graph), in_tuple)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)`` for a scalar function, by the double-backward trick (as PyTorch)."""
    with _gm.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        v = _v_or_single_element(v, inputs, in_tuple, "hvp", create_graph,
                                 "the input to the user-provided function is")
        out_tuple, outputs = _scalar_output(func, inputs, "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        us = tuple(_torch.zeros_like(t, requires_grad=True) for t in inputs)
        double_back = _autograd_grad(jac, inputs, us, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with _gm.set_grad_enabled(True if create_graph else _gm.is_grad_enabled()):
        res = _autograd_grad(double_back, us, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back_trick")
    return _nest(_postprocess(outputs, create_graph), out_tuple), _nest(_postprocess(res, create_graph), in_tuple)
