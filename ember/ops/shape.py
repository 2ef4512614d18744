"""Shape ops: reshape/view, permute/transpose, squeeze/unsqueeze, expand, cat, stack, clone, casts.

View ops return tensors that share memory and the version counter with their input.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._device import check_device
from .._tensor import Tensor, make, wrap_dim
from ..autograd.graph import node_class
from ._primitive import PrimNode, apply, defprim
from ._registry import graph, method, register
from ._util import check_tensor

reshape_p = defprim("reshape", "ViewBackward0", lambda xp, a, shape: xp.reshape(a, shape),
                    vjp=lambda xp, g, out, a, shape: xp.reshape(g, a.shape), jvp="linear", is_view=True)

permute_p = defprim("permute", "PermuteBackward0", lambda xp, a, dims: xp.permute(a, dims),
                    vjp=lambda xp, g, out, a, dims: xp.permute(g, _inverse(dims)), jvp="linear", is_view=True)

expand_p = defprim("expand", "ExpandBackward0", lambda xp, a, shape: xp.expand(a, shape),
                   vjp=lambda xp, g, out, a, shape: xp.sum_to(g, a.shape), jvp="linear", is_view=True)

clone_p = defprim("clone", "CloneBackward0", lambda xp, a: xp.clone(a), vjp=lambda xp, g, out, a: g, jvp="linear")

# The engine casts every gradient back to its input's dtype, so a cast's own rules are identities.
cast_p = defprim("to", "ToCopyBackward0", lambda xp, a, dtype: xp.cast(a, dtype),
                 vjp=lambda xp, g, out, a, dtype: g, jvp="linear")


def _inverse(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def _cat_vjp(i):
    def rule(xp, g, out, *inputs, dim, bounds, legacy):
        gi = xp.getitem(g, (slice(None),) * dim + (slice(bounds[i], bounds[i + 1]),))
        return xp.reshape(gi, (0,)) if i in legacy else gi   # a skipped legacy (0,) input
    return rule


def _stack_vjp(i):
    return lambda xp, g, out, *inputs, dim: xp.getitem(g, (slice(None),) * dim + (i,))


def _node(name):
    return node_class(name, PrimNode)


# ----- shape parsing -------------------------------------------------------------------------

def _shape_arg(shape, op="view"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        out.append(int(s))
    return tuple(out)


def _infer_shape(shape, numel):
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return tuple(numel // known if s == -1 else s for s in shape)
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# ----- public functions ------------------------------------------------------------------------

@register(method=True, graph=True)
def reshape(input, *shape):
    check_tensor(input, "reshape")
    shape = _infer_shape(_shape_arg(shape, "reshape"), input._data.size)
    node = None if input._data.flags.c_contiguous else _node("UnsafeViewBackward0")
    return apply(reshape_p, (input,), {"shape": shape}, node)


@register(module=False, method=True)
def view(input, *shape):
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        raise NotImplementedError("ember: view(dtype) is not supported yet")
    shape = _infer_shape(_shape_arg(shape, "view"), input._data.size)
    if not input._data.flags.c_contiguous and input._data.size > 1:
        try:
            np.reshape(input._data, shape, copy=False)
        except ValueError:
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
                               ) from None
    return apply(reshape_p, (input,), {"shape": shape})


@register(method=True)
def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, 1)
    s, e = wrap_dim(start_dim, nd, "flatten"), wrap_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    return reshape(input, shp[:s] + (-1,) + shp[e + 1:])


def _squeeze_like(input, shape, name):
    return apply(reshape_p, (input,), {"shape": shape}, _node(name))


@register(method=True, graph=True)
def squeeze(input, dim=None):
    check_tensor(input, "squeeze")
    shp = input._data.shape
    if dim is None:
        return _squeeze_like(input, tuple(s for s in shp if s != 1), "SqueezeBackward0")
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    dims = {wrap_dim(d, len(shp), "squeeze") for d in dims}
    new = tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))
    return _squeeze_like(input, new, "SqueezeBackward1" if not isinstance(dim, (tuple, list)) else
                         "SqueezeBackward2")


@register(method=True, graph=True)
def unsqueeze(input, dim):
    check_tensor(input, "unsqueeze")
    shp = input._data.shape
    d = wrap_dim(dim, len(shp) + 1, "unsqueeze")
    return _squeeze_like(input, shp[:d] + (1,) + shp[d:], "UnsqueezeBackward0")


@register(method=True)
def permute(input, *dims):
    check_tensor(input, "permute")
    dims = _shape_arg(dims, "permute")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
                           f"to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _permute(input, dims, None)


def _permute(input, dims, node):
    return apply(permute_p, (input,), {"dims": dims}, node)


@register(method=True, aliases=("swapaxes", "swapdims"), graph=True)
def transpose(input, dim0, dim1):
    check_tensor(input, "transpose")
    nd = input._data.ndim
    if nd == 0:
        wrap_dim(dim0, 0, "transpose"), wrap_dim(dim1, 0, "transpose")
        return _permute(input, (), _node("TransposeBackward0"))
    d0, d1 = wrap_dim(dim0, nd, "transpose"), wrap_dim(dim1, nd, "transpose")
    dims = list(range(nd))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return _permute(input, tuple(dims), _node("TransposeBackward0"))


@register(method=True)
def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return _permute(input, tuple(range(nd))[::-1], _node("TBackward0"))


def _T(self):
    nd = self._data.ndim
    if nd not in (0, 2):
        import warnings
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                      "deprecated and it will throw an error in a future release. Consider `x.mT` to transpose "
                      "batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                      "dimensions of a tensor.", UserWarning, stacklevel=2)
    return _permute(self, tuple(range(nd))[::-1], None)


def _mT(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(self, -2, -1)


@register(module=False, method=True)
def expand(input, *sizes):
    check_tensor(input, "expand")
    sizes = _shape_arg(sizes, "expand")
    shp = input._data.shape
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand({input.type()}{{{list(shp)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(shp)})")
    lead = len(sizes) - len(shp)
    new = list(sizes)
    for i, s in reversed(tuple(enumerate(shp))):   # PyTorch reports the last mismatching dim
        want = sizes[lead + i]
        if want == -1:
            new[lead + i] = s
        elif s != 1 and want != s:
            raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing size ({s}) at "
                               f"non-singleton dimension {lead + i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(shp)}")
    return apply(expand_p, (input,), {"shape": tuple(new)})


@register(module=False, method=True)
def expand_as(input, other):
    return expand(input, other._data.shape)


@register(method=True)
def broadcast_to(input, shape):
    return expand(input, shape)


def _as_tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return tuple(tensors)


_cat_nodes: dict = {}


def _variadic(name, node_name, forward, rule, n):
    """The primitive of ``name`` for ``n`` inputs (one VJP rule per input), made once per n."""
    key = (name, n)
    p = _cat_nodes.get(key)
    if p is None:
        p = _cat_nodes[key] = defprim(name, node_name, forward, vjp=tuple(rule(i) for i in range(n)), jvp="linear",
                                      promote="standard")
    return p


@register(aliases=("concat", "concatenate"))
def cat(tensors, dim=0):
    tensors = _as_tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    # PyTorch skips legacy empty 1-d tensors of shape (0,) in cat.
    ref = next((x for x in tensors if x._data.shape != (0,)), tensors[0])
    if ref._data.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, ref._data.ndim, "cat")
    for i, x in enumerate(tensors):
        if x._data.shape == (0,) and ref._data.shape != (0,):
            continue
        if x._data.ndim != ref._data.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref._data.ndim} and "
                               f"{x._data.ndim}")
        for k in range(ref._data.ndim):
            if k != d and x._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._data.shape[k]} but got size {x._data.shape[k]} for tensor number {i} "
                                   f"in the list.")
    bounds = [0]
    for x in tensors:
        bounds.append(bounds[-1] + (x._data.shape[d] if x._data.ndim == ref._data.ndim else 0))
    n = len(tensors)
    p = _variadic("cat", "CatBackward0",
                  lambda xp, *arrays, dim, bounds, legacy: xp.cat([a for a in arrays if a.shape != (0,) or
                                                                   len(arrays) == 1], dim), _cat_vjp, n)
    legacy = tuple(i for i, x in enumerate(tensors) if x._data.ndim != ref._data.ndim)
    return apply(p, tensors, {"dim": d, "bounds": tuple(bounds), "legacy": legacy})


@register
def stack(tensors, dim=0):
    tensors = _as_tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shp = tensors[0]._data.shape
    for i, x in enumerate(tensors):
        if x._data.shape != shp:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shp)} at entry 0 and "
                               f"{list(x._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(shp) + 1, "stack")
    p = _variadic("stack", "StackBackward0", lambda xp, *arrays, dim: xp.stack(arrays, dim), _stack_vjp,
                  len(tensors))
    return apply(p, tensors, {"dim": d})


@register(method=True, graph=True)
def clone(input, *, memory_format=None):
    check_tensor(input, "clone")
    return apply(clone_p, (input,))


@register(module=False, method=True)
def contiguous(input, memory_format=None):
    if input._data.flags.c_contiguous:
        return input
    return apply(clone_p, (input,))


def to_dtype(input, dtype: D.dtype, copy=False):
    if dtype is input.dtype and not copy:
        return input
    return apply(cast_p, (input,), {"dtype": dtype.np})


graph("expand", lambda x, shape: expand(x, shape))
graph("permute", lambda x, dims: permute(x, dims))
graph("cast", lambda x, dtype: apply(cast_p, (x,), {"dtype": dtype}))
graph("cat", lambda xs, dim: cat(xs, dim))
graph("stack", lambda xs, dim: stack(xs, dim))
method("T", property(_T))
method("mT", property(_mT))
method("H", property(_T))
method("mH", property(_mT))


# ----- conversions -------------------------------------------------------------------------------

@register(module=False, method=True)
def view_as(input, other):
    return view(input, other._data.shape)


@register(module=False, method=True)
def reshape_as(input, other):
    return reshape(input, other._data.shape)


@register(module=False, method=True)
def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``; ``copy=``."""
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif a is not None and not isinstance(a, bool):
            device = a
    if device is not None:
        check_device(device)
    if dtype is None:
        return clone(self) if copy else self
    return to_dtype(self, dtype, copy)


def _caster(dtype):
    def fn(self, memory_format=None):
        return to_dtype(self, dtype)
    return fn


for _name, _dt in (("float", D.float32), ("double", D.float64), ("half", D.float16), ("long", D.int64),
                   ("int", D.int32), ("bool", D.bool), ("short", D.int16)):
    method(_name, _caster(_dt))


@register(name="type", module=False, method=True)
def type_(self, dtype=None):
    if dtype is None:
        return "torch." + D.type_word(self._data.dtype) + "Tensor"
    return to_dtype(self, dtype)


def _new_like(fill):
    def fn(self, *size, dtype=None, requires_grad=False, device=None):
        return fill(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)
    return fn


def _bind_new_like():
    from .. import _creation as C
    for _name, _fill in (("new_zeros", C.zeros), ("new_ones", C.ones), ("new_empty", C.empty)):
        method(_name, _new_like(_fill))


_bind_new_like()
