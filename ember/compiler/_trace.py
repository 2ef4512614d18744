"""The tracer: run a function eagerly once while recording the primitives it applies.

The call runs as plain eager ember (its results are returned as they are); around it, ``_primitive._result`` is
swapped for an observer that writes one step per op result (the forward function, where each input came from,
the cast apply made, the params, the node it recorded). Everything the recording cannot replay exactly marks the
trace as failed with a reason (the call itself still completes eagerly): a value read back to Python, a tensor made
outside the primitives from data, printing, randomness, in-place writes, module attribute assignment, tensors that
escape into outside state, graph nodes that are not plain primitive nodes. Nothing here runs on the eager hot path:
every swap is undone when the trace ends.
"""
from __future__ import annotations

import builtins
import sys
import types
import weakref

from .._tensor import Tensor
from .. import _tensor, _util
from ..autograd import _primitive
from ..autograd._primitive import PrimNode, _ndarray
from ..autograd.graph import grad_accumulator

_CREATION_FILE = "creation.py"
CURRENT: list = []   # the tracers running (torch.compiler.disable's graph break reaches the innermost)


class TraceFailed(Exception):
    """A trace that cannot be replayed exactly; ``reason`` says why (``torch._dynamo.explain``'s break reason)."""

    def __init__(self, reason: str, fullgraph_error=None):
        super().__init__(reason)
        self.reason = reason
        self.fullgraph_error = fullgraph_error


def tensor_edge(t: Tensor):
    """The graph edge an op records for input ``t`` (``_primitive._record``'s rule), or None."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad and not (t._base is not None and t._view_nograd):
        return (grad_accumulator(t), 0)
    return None


def _template_refs(tpl, out: set) -> None:
    """The refs a param template (``("ref", r)``, ``("expand"/"reshape", r, shape)``, tuples/lists of them) reads."""
    if tpl[0] in ("ref", "expand", "reshape"):
        out.add(tpl[1])
    elif tpl[0] in ("tuple", "list"):
        for t in tpl[1]:
            _template_refs(t, out)


class _Array:
    """Stands for an array argument in ``Step.arg_values`` (its values change from call to call)."""


ARRAY = _Array()


class Step:
    """One op of a recording: ``out = forward(xp, *args, **params)``."""

    __slots__ = ("kind", "forward", "xp", "args", "casts", "params", "param_refs", "asarray", "node", "prim",
                 "saved", "saves_out", "edges", "seq", "in_meta", "tensor", "out_vc", "in_meta_shape",
                 "node_prim", "node_params", "extra", "n_out", "dead", "arg_dtypes", "arg_values", "out_dtype",
                 "out_size")


class Tracer:
    """Records one eager call; ``flat_inputs`` are the call's tensor arguments (refs ``("in", k)``)."""

    # the Tensor methods that read values back to Python: swapped while tracing
    READBACKS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "numpy", "__array__",
                 "__repr__", "__format__", "__str__", "data_ptr", "__complex__")

    def __init__(self, inputs: list, fullgraph: bool):
        self.fullgraph = fullgraph
        self.steps: list = []
        self.ref: dict = {}          # id(tensor) -> ref: ("in", k) | ("step", j) | ("cap", k) | ("const", k)
        self.keep: list = []         # every tensor given a ref (kept alive so that ids stay unique)
        self.inputs = inputs
        self.captured: list = []     # tensors read from outside (parameters, buffers, globals)
        self.consts: list = []       # arrays of tensors made from Python values inside the call
        self.born: dict = {}         # id -> tensor made outside the primitives during the call
        self.fail: str | None = None
        self.seen_vc: list = []      # (tensor, version when first seen)
        self.node_step: dict = {}    # id(node) -> step index
        self.arr_ref: dict = {}      # id(array) -> the ref of a tensor whose data it is
        self.born_arr: dict = {}     # id(array) -> a tensor made outside the primitives with that data
        self.arr_owner: dict = {}    # id(array) -> the tensor whose data it is
        self.written: set = set()    # refs written into
        self.const_tensors: list = []
        self.rng_draws = 0
        self.depth = 0               # >0 inside a primitive's forward or a recorded kernel call
        self.side_effect = False
        self.cache_hits: dict = {}   # id(cast) -> its weight: casts autocast's cache gave during the call
        self.cache_casts: dict = {}  # captured index -> (cast, weight): fetched from autocast's cache per replay
        self.hoisted: set = set()   # steps the replay runs first (checks after a draw or an outside write)
        self.unchecked: list = []   # checks on arrays the recording does not know (the trace fails)
        self.forward_codes: set = set()    # the primitives' forward codes (a fast path calls them itself)
        self.writes: dict = {}       # id(version counter) -> writes recorded into its tensors
        for k, t in enumerate(inputs):
            self._give(t, ("in", k))

    # ----- bookkeeping -------------------------------------------------------------------------
    def _give(self, t, r) -> None:
        self.ref[id(t)] = r
        old = self.arr_ref.get(id(t._data))
        if old is None or old[0] == "step" and self.steps[old[1]].kind in ("xcall", "unpack") and r != old:
            self.arr_ref[id(t._data)] = r   # a tensor's ref before a kernel call's (a fast path's own kernel)
        self.arr_owner.setdefault(id(t._data), weakref.ref(t))
        self.keep.append(t)
        self.seen_vc.append((t, t._vc[0], self.writes.get(id(t._vc), 0), t.grad_fn, t._requires_grad))

    def failed(self, reason: str, error=None) -> None:
        """Mark the trace as not replayable; under fullgraph raise torch's error at once."""
        if self.fail is None:
            self.fail = reason
        if self.fullgraph:
            from ._exc import Unsupported
            raise error if error is not None else Unsupported(reason)

    def ref_of(self, a: Tensor):
        r = self.ref.get(id(a))
        if r is not None:
            return r
        b = self.born.get(id(a))
        if b is not None:
            where, src = b
            if where == "alias":   # detach() / .data of a known tensor: the same array, no graph
                r = src
            elif where != "creation":
                self.failed(f"a tensor made outside the traced primitives ({where}) is used")
                return None
            elif a._requires_grad:
                self.failed("a tensor created inside the function requires grad (a new leaf each call)")
                return None
            elif id(a._data) in self.arr_ref:   # its array comes from a recorded kernel call (zeros_like(x))
                r = self.arr_ref[id(a._data)]
            else:
                k = len(self.consts)
                self.const_tensors.append(a)
                self.consts.append(_primitive._NP_NS.backend.copy(a._data) if type(a._data) is _ndarray
                                   else a._data)
                r = ("const", k)
        else:
            if a._base is not None:
                self.failed("a view made outside the function is read (captured view)")
                return None
            k = len(self.captured)
            self.captured.append(a)
            r = ("cap", k)
            leaf = self.cache_hits.get(id(a))
            if leaf is not None:   # autocast's cast of a weight, from the region's cache: fetched at each replay
                self.cache_casts[k] = (a, leaf)
                self.ref_of(leaf)   # (its shape, dtype and requires_grad are guarded)
        self._give(a, r)
        return r

    def on_cache_insert(self, leaf, c) -> None:
        """Autocast cached its cast ``c`` of ``leaf`` (a weight), made by the cast step just recorded: a replay gets
        the cast from the region's cache as eager does (made and cached at the replay if not there yet), so the
        step becomes a captured tensor fetched at each replay."""
        r = self.ref.get(id(c))
        if r is None or r[0] != "step":
            self.failed("autocast cached a cast the recording does not know")
            return
        s = self.steps[r[1]]
        if s.node is not None:
            self.node_step.pop(id(s.node), None)
        s.kind, s.dead, s.tensor, s.node = "cachecast", True, None, None
        k = len(self.captured)
        self.captured.append(c)
        self.cache_casts[k] = (c, leaf)
        self.ref[id(c)] = ("cap", k)
        self.arr_ref[id(c._data)] = ("cap", k)

    # ----- the observer ------------------------------------------------------------------------
    def observe(self, inner):
        tracer = self

        def observed(prim, args, params, node_cls, xp, out, datas, rg):
            is_array = type(out) is _ndarray or type(out) in xp.backend.array_types
            t = inner(prim, args, params, node_cls, xp, out, datas, rg)
            if tracer.fail is None or tracer.fullgraph:
                tracer.record(prim, args, params, node_cls, xp, datas, is_array, t)
            return t
        return observed

    def record(self, prim, args, params, node_cls, xp, datas, is_array, t) -> None:
        s = Step()
        s.kind = "prim"
        s.forward = getattr(prim.forward, "_ember_orig", prim.forward)
        s.xp = xp
        refs = []
        casts = []
        dtypes = []
        values = []
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                r = self.ref_of(a)
                if r is None:
                    return
                d = a._data if datas is None else datas[i]
                dtypes.append(d.dtype)
                values.append(ARRAY)
                casts.append(None if d is a._data else d.dtype)
                if d is not a._data and d.dtype == a._data.dtype:
                    self.failed(f"'{prim.name}': an input array was replaced before the op (stale view)")
                    return
                refs.append(r)
            else:
                v = a if datas is None else datas[i]
                refs.append(("py", v))
                dtypes.append(None)
                values.append(v)
                casts.append(None)
        s.args = tuple(refs)
        s.arg_dtypes = tuple(dtypes)
        s.arg_values = tuple(values)
        s.out_dtype = t._data.dtype
        s.out_size = getattr(t._data, "size", None)
        s.casts = tuple(casts)
        s.params = params
        s.extra = ()
        s.dead = False
        s.param_refs = self.param_refs(prim, params)
        if s.param_refs is False:
            return
        s.asarray = not is_array
        s.tensor = t
        s.out_vc = t._vc[0]
        s.prim = prim
        node = t.grad_fn
        s.node = None
        if node is not None:
            if not isinstance(node, PrimNode) or type(node).apply is not PrimNode.apply:
                self.failed(f"'{prim.name}' records a node of its own ({type(node).__name__})")
                return
            s.node = node
            self.node_step[id(node)] = len(self.steps)
        j = len(self.steps)
        self.steps.append(s)
        self._give(t, ("step", j))

    def param_refs(self, prim, params):
        """Params must be plain values (replayed as they are); an array in them (an index taken from a tensor) is
        replayed from the ref of the tensor whose data it is, else the trace fails. Returns None (all plain) or
        {name: template} for the params that hold arrays (``("ref", r)``, or a tuple/list of templates)."""
        refs = None
        for k, v in params.items():
            if _plain(v):
                continue
            tpl = self._template(v)
            if tpl is None:
                self.failed(f"'{prim.name}': a parameter of type {type(v).__name__} holds data computed outside "
                            "the traced primitives")
                return False
            if refs is None:
                refs = {}
            refs[k] = tpl
        return refs

    def _template(self, v):
        if type(v) is _ndarray:
            r = self._arr(v)
            if r is None:
                return self._expanded(v)
            return ("ref", r)
        if type(v) in (tuple, list):
            out = []
            for x in v:
                if _plain(x):
                    out.append(("plain", x))
                else:
                    tx = self._template(x)
                    if tx is None:
                        return None
                    out.append(tx)
            return (type(v).__name__, out)
        return None

    # ----- writes and random draws ---------------------------------------------------------------
    def _arr(self, a):
        """The ref of array ``a`` (a tensor's data, or an array a recorded step made), or None."""
        r = self.arr_ref.get(id(a))
        if r is None:
            t = self.born_arr.get(id(a))
            if t is not None:
                r = self.ref_of(t)
        return r

    def _pseudo(self, kind, forward, refs, out=None, tensor=None):
        s = Step()
        s.kind = kind
        s.forward = forward
        s.xp = None
        s.args = tuple(refs)
        s.casts = (None,) * len(refs)
        s.params = {}
        s.param_refs = None
        s.asarray = False
        s.node = None
        s.prim = None
        s.tensor = tensor
        s.extra = ()
        s.dead = False
        s.arg_dtypes = ()
        s.arg_values = ()
        j = len(self.steps)
        self.steps.append(s)
        if out is not None:
            self.arr_ref[id(out)] = ("step", j)
            self.keep.append(out)
        return j

    def on_write(self, dst, src, copyto) -> None:
        """``backend.copyto(dst, src)`` (an in-place op's write, a random fill): a write step into dst's slot."""
        if self.fail is not None and not self.fullgraph:
            return
        rd = self._arr(dst)
        rs = self._arr(src) if type(src) is _ndarray else ("py", src)
        if rd is None or rs is None:
            self.failed("a write into memory the recording does not know (copyto)")
            return
        self._pseudo("write", copyto, (rd, rs))
        owner = self.arr_owner.get(id(dst))
        owner = owner() if owner is not None else None
        if owner is None:
            self.failed("a write into an array no tensor owns")
            return
        self.writes[id(owner._vc)] = self.writes.get(id(owner._vc), 0) + 1
        self.written.add(rd)
        if rd[0] in ("in", "cap"):
            self.side_effect = True

    def ref_tensor(self, r):
        kind = r[0]
        if kind == "in":
            return self.inputs[r[1]]
        if kind == "cap":
            return self.captured[r[1]]
        if kind == "const":
            return self.const_tensors[r[1]]
        if kind == "step":
            return self.steps[r[1]].tensor
        return None

    def on_kernel(self, name, f, args, kwargs, out) -> None:
        """A call of the device namespace from the ops' own code (outside any primitive's forward): an index or
        mask computed from a tensor's values, or a check on them. Replayed as the same call; a result that is no
        array (a check's answer) becomes a guard: a replay that computes another answer runs the call eagerly."""
        if self.fail is not None and not self.fullgraph:
            return
        refs = []
        for a in list(args) + list(kwargs.values()):
            if type(a) is _ndarray:
                r = self._arr(a)
                if r is None:
                    r = self._expanded(a)
                    if r is None:
                        if type(out) is not _ndarray and type(out) is not tuple:
                            # a check on an array computed with the array's own operators (idx < 0) cannot be
                            # repeated by a replay (which would compute where eager raises): no replay
                            self.unchecked.append(name)
                            self.failed(f"a check on values ('{name}') of an array computed outside the "
                                        "recording (NumPy's operators in an op's wrapper)")
                            return
                        self.failed(f"the device kernel '{name}' reads an array the recording does not know")
                        return
                    j = self._pseudo(r[0], None, (r[1],))
                    self.steps[j].params = {"shape": r[2]}
                    r = ("step", j)
                refs.append(r)
            elif _plain(a) or callable(a) and type(a).__module__.startswith("numpy"):
                refs.append(("py", a))
            else:
                self.failed(f"the device kernel '{name}' gets a {type(a).__name__}")
                return
        kw = tuple(kwargs)
        if type(out) is _ndarray:
            if id(out) in self.arr_ref:   # (the kernel gave back one of its inputs)
                return
            j = self._pseudo("xcall", f, refs, out)
            self.steps[j].params = {"kw": kw}
        elif type(out) is tuple and all(type(o) is _ndarray or _plain(o) for o in out):
            plain = tuple(k for k, o in enumerate(out) if type(o) is not _ndarray)
            hoist = self._hoist(refs, name) if plain and self.side_effect else ()
            if hoist is None:
                return
            j = self._pseudo("xcall", f, refs, None)
            self.steps[j].params = {"kw": kw}
            for k, o in enumerate(out):
                if type(o) is _ndarray and id(o) not in self.arr_ref:
                    u = self._pseudo("unpack", None, (("step", j),), o)
                    self.steps[u].params = {"k": k}
            if plain:   # values read back to Python (one_hot's (min, max)): a guard on them
                g = self._pseudo("guard_parts", None, (("step", j),))
                self.steps[g].params = {"parts": plain, "expect": tuple(out[k] for k in plain)}
                if self.side_effect:
                    self.hoisted.update(hoist)
                    self.hoisted.update(range(j, g + 1))
        elif _plain(out) and not isinstance(out, (list, tuple)) or out is None:
            hoist = self._hoist(refs, name) if self.side_effect else ()
            if hoist is None:
                return
            j = self._pseudo("guard", f, refs, None)
            self.steps[j].params = {"kw": kw, "expect": out}
            if self.side_effect:
                self.hoisted.update(hoist)
                self.hoisted.add(j)
        else:
            self.failed(f"the device kernel '{name}' returns a {type(out).__name__}")

    _HOISTABLE = ("prim", "xcall", "unpack", "expand", "reshape", "opcall")

    def _hoist(self, refs, name):
        """A check after a random draw or a write into outside state: a replay whose check fails runs the call
        eagerly, which must find the state as it was. The check (and the steps it reads) therefore runs first in
        the replay, where it reads nothing written or drawn so far: the steps to move first, or None (failed)."""
        need = set()
        todo = [r for r in refs]
        while todo:
            r = todo.pop()
            if r in self.written:
                need = None
                break
            if r[0] != "step" or r[1] in need:
                continue
            s = self.steps[r[1]]
            if s.kind not in self._HOISTABLE:
                need = None
                break
            need.add(r[1])
            todo.extend(s.args)
            if s.param_refs:
                more = set()
                for tpl in s.param_refs.values():
                    _template_refs(tpl, more)
                todo.extend(more)
        if need is None:
            self.failed(f"a check on values ('{name}') of what a random draw or a write into outside state made")
        return need

    def on_check(self, pred, arrays) -> bool:
        """``_util.holds(pred, *arrays)`` (a check on values in an op's wrapper): a guard calling ``pred`` again
        (its own kernel calls are not recorded)."""
        f = _as_bool(pred)
        self.depth += 1
        try:
            ok = f(*arrays)
        finally:
            self.depth -= 1
        if self.depth == 0:   # (inside a primitive's forward, the replay calls that forward, which checks again)
            self.on_kernel(getattr(pred, "__qualname__", "check"), f, arrays, {}, ok)
        return ok

    def on_compute(self, fn, arrays, params):
        """``_util.compute(fn, *arrays, **params)``: a step calling ``fn`` again (its own kernel calls are not
        recorded)."""
        if self.depth == 0 and (self.fail is None or self.fullgraph):
            for a in arrays:
                if a is not None:
                    self.ref_of(a)   # (a running statistic: a captured buffer)
        arrays = [None if a is None else a._data for a in arrays]
        self.depth += 1
        try:
            out = fn(*arrays, **params)
        finally:
            self.depth -= 1
        if self.depth == 0:
            self.on_kernel(getattr(fn, "__qualname__", "compute"), fn, arrays, params, out)
        return out

    def on_rng(self, f, args, kwargs, out) -> None:
        """A draw from the device's generator: replayed as the same call on the default generator's state."""
        if self.fail is not None and not self.fullgraph:
            return
        from ..ops import random as _random
        gen = _random.default_generator
        refs = []
        for a in list(args) + list(kwargs.values()):
            if a is gen._state:
                refs.append(("gen",))
            elif type(a) is _ndarray:
                r = self._arr(a)
                if r is None:
                    self.failed("a random draw reads an array the recording does not know")
                    return
                refs.append(r)
            elif _plain(a):
                refs.append(("py", a))
            else:
                self.failed(f"a random draw with a {type(a).__name__} argument (another generator?)")
                return
        if type(out) is not _ndarray:
            self.failed("a random draw that returns no array")
            return
        s_j = self._pseudo("call", f, refs, out)
        self.steps[s_j].params = {"kw": tuple(kwargs)}
        self.rng_draws += 1
        self.side_effect = True

    def _expanded(self, v):
        """``xp.expand(a, v.shape)`` of a known array ``a`` (a mask broadcast to the result's shape), or None."""
        base = v.base
        if type(base) is not _ndarray:
            return None
        r = self._arr(base)
        if r is None:
            return None
        xp = _primitive._NP_NS
        be = xp.backend
        for how in ("expand", "reshape"):   # (a mask broadcast to a result's shape; an index flattened)
            try:
                e = getattr(xp, how)(base, v.shape)
            except Exception:   # noqa: BLE001
                continue
            if e.shape == v.shape and e.strides == v.strides and e.dtype == v.dtype and \
                    be.data_ptr(e) == be.data_ptr(v):
                return (how, r, v.shape)
        return None

    def on_opcall(self, f, args, kwargs, out) -> None:
        """A non-differentiable op whose result was made outside the primitives: a step calling the op again."""
        refs = []
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Tensor):
                r = self.ref_of(a)
                if r is None:
                    return
                refs.append(r)
            elif _plain(a):
                refs.append(("py", a))
            else:
                return   # (the result stays unknown: using it fails the trace)
        j = self._pseudo("opcall", f, refs, None, out)
        self.steps[j].params = {"kw": tuple(kwargs), "tensor": tuple(isinstance(a, Tensor) for a in
                                                                   list(args) + list(kwargs.values()))}
        del self.born[id(out)]
        if self.born_arr.get(id(out._data)) is out:
            del self.born_arr[id(out._data)]
        self._give(out, ("step", j))

    # ----- tensors made outside the primitives ---------------------------------------------------
    def on_init(self, t) -> None:
        """``_tensor._init`` during the trace: a new tensor from an array (a factory, or an op computing outside
        the primitives: indices of max, nonzero...)."""
        f = sys._getframe(2)
        while f is not None and f.f_code.co_filename.endswith(("_tensor.py", "parameter.py")):
            f = f.f_back
        where = "creation" if f is not None and f.f_code.co_filename.endswith(_CREATION_FILE) else (
            f.f_code.co_name if f is not None else "?")
        if where == "apply_inplace" and f.f_code.co_filename.endswith("_views.py"):
            # the snapshot of self's value before the write, which the node saves: a copy step
            src = f.f_locals.get("self")
            r = self.ref.get(id(src)) if src is not None else None
            if r is None and src is not None and (self.fail is None or self.fullgraph):
                r = self.ref_of(src)
            if r is not None:
                j = self._pseudo("copy", None, (r,), None, t)
                self._give(t, ("step", j))
                return
        self.born[id(t)] = (where, None)
        self.born_arr.setdefault(id(t._data), t)
        self.arr_owner.setdefault(id(t._data), weakref.ref(t))
        self.keep.append(t)

    def on_alias(self, src, t) -> None:
        r = self.ref.get(id(src))
        if r is None:
            r = self.ref_of(src) if id(src) not in self.born else None
        self.born[id(t)] = ("alias", r) if r is not None else ("detach() of an unknown tensor", None)
        self.keep.append(t)


_PLAIN = (int, float, bool, complex, str, type(None), bytes, slice, type(Ellipsis), type)


def _plain(v) -> bool:
    if isinstance(v, _PLAIN):
        return True
    if type(v) in (tuple, list):
        return all(_plain(x) for x in v)
    mod = type(v).__module__
    if mod.startswith("numpy") and hasattr(v, "itemsize") and not hasattr(v, "shape"):
        return True   # a NumPy dtype object
    if mod == "numpy" and type(v).__name__ == "dtype" or type(v).__name__.endswith("DType"):
        return True
    if mod.startswith("numpy") and getattr(v, "shape", None) == ():   # a NumPy scalar
        return True
    if mod in ("ember._dtype", "ember._device", "ember._tensor"):
        return type(v).__name__ in ("dtype", "device", "Size", "memory_format", "layout")
    return False


class Tracing:
    """Context manager: the swaps that let ``tracer`` see the call (undone on exit, whatever happens)."""

    def __init__(self, tracer: Tracer):
        self.tracer = tracer
        self.saved = []

    def __enter__(self):
        tr = self.tracer
        CURRENT.append(tr)
        _util.RAW_OBSERVERS.append(tr)
        self.saved_result = _primitive._result
        _primitive._result = tr.observe(_primitive._result)
        init = _tensor._init

        def traced_init(t, data):
            init(t, data)
            tr.on_init(t)
        self._swap(_tensor, "_init", traced_init)
        detach = Tensor.detach

        def traced_detach(self):
            t = detach(self)
            tr.on_alias(self, t)
            return t
        self._swap(Tensor, "detach", traced_detach)
        for name in Tracer.READBACKS:
            orig = Tensor.__dict__.get(name)
            if orig is not None:
                self._swap(Tensor, name, _readback(tr, name, orig))
        real_print = builtins.print

        def traced_print(*a, **k):
            tr.failed("print() inside the function (a side effect the replay cannot repeat)")
            return real_print(*a, **k)
        self._swap(builtins, "print", traced_print)
        from ..nn.modules import module as _module
        setattr_ = _module.Module.__setattr__

        def traced_setattr(mod, name, value):
            tr.failed(f"assignment to module attribute '{name}' inside the function")
            return setattr_(mod, name, value)
        self._swap(_module.Module, "__setattr__", traced_setattr)
        for name in NONDIFF:
            orig = Tensor.__dict__.get(name)
            if orig is not None:
                self._swap(Tensor, name, _opcall(tr, orig))
        root = sys.modules.get(__name__.split(".")[0])   # the public functions (torch.eq, torch.argmax, ...)
        for name in NONDIFF:
            orig = getattr(root, name, None) if root is not None else None
            if orig is not None and callable(orig):
                self._swap(root, name, _opcall(tr, orig))
        from ..autograd import engine as _engine
        run_backward = _engine.run_backward

        def traced_backward(*a, **k):
            tr.failed("backward() inside the function")
            return run_backward(*a, **k)
        self._swap(_engine, "run_backward", traced_backward)
        codes = set()
        for p in _primitive.PRIMITIVES:
            code = getattr(p.forward, "__code__", None)
            if code is not None:
                codes.add(code)
            self._swap(p, "forward", _inside(tr, p.forward))
        tr.forward_codes = codes
        ns = _primitive._NP_NS
        for name, f in list(vars(ns).items()):
            if name.startswith("_") or isinstance(f, (type, types.ModuleType)) or not callable(f):
                continue
            self._swap(ns, name, _kernel(tr, name, f))
        from ..amp import autocast_mode as _amp
        self.amp_cache = _amp._state.cache
        self._swap(_amp._state, "cache", _ObservedCache(tr, self.amp_cache))
        be = _primitive._NP_NS.backend
        copyto = be.copyto

        def traced_copyto(dst, src):
            copyto(dst, src)
            tr.on_write(dst, src, copyto)
        self._swap(be, "copyto", traced_copyto)
        rng = be.random
        for name in dir(rng):
            f = getattr(rng, name)
            if name.startswith("_") or not callable(f) or isinstance(f, type) or name in _RNG_QUIET:
                continue
            self._swap(rng, name, _rng_call(tr, name, f))
        return self

    def _swap(self, owner, name, value) -> None:
        d = getattr(owner, "__dict__", None)
        self.saved.append((owner, name, d.get(name, _MISSING) if d is not None else getattr(owner, name)))
        setattr(owner, name, value)

    def __exit__(self, *exc) -> None:
        from ..amp import autocast_mode as _amp
        seen = _amp._state.cache
        if type(seen) is _ObservedCache:   # (what autocast cached during the call stays cached)
            self.amp_cache.clear()
            self.amp_cache.update(seen)
        CURRENT.pop()
        _util.RAW_OBSERVERS.pop()
        _primitive._result = self.saved_result
        for owner, name, v in reversed(self.saved):
            if v is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, v)


class _ObservedCache(dict):
    """Autocast's weight cache while tracing (a copy of the region's): hits and inserts go to the tracer."""

    def __init__(self, tr: Tracer, entries: dict):
        super().__init__(entries)
        self.tr = tr

    def get(self, key, default=None):
        hit = super().get(key, default)
        if hit is not None and hit is not default:
            self.tr.cache_hits[id(hit[1])] = hit[0]
        return hit

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.tr.on_cache_insert(value[0], value[1])


_MISSING = object()
# Ops that make their results outside the primitives (no gradient: comparisons, logical ops, arg-extrema...): called
# from the program, each is recorded as a call of the op itself on the replay's arrays.
NONDIFF = ("eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
           "logical_not", "logical_and", "logical_or", "logical_xor", "__invert__", "__and__", "__or__", "__xor__",
           "__rand__", "__ror__", "__rxor__", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "argmax",
           "argmin", "argsort", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isclose", "signbit",
           "any", "all", "count_nonzero", "greater", "less", "greater_equal", "less_equal", "not_equal")


def _opcall(tr: Tracer, orig):
    def call(*args, **kwargs):
        out = orig(*args, **kwargs)
        if type(out) is Tensor and (tr.fail is None or tr.fullgraph):
            b = tr.born.get(id(out))
            if b is not None and b[0] not in ("alias", "creation") and not out._requires_grad:
                tr.on_opcall(orig, args, kwargs, out)
        return out
    call.__name__ = getattr(orig, "__name__", "op")
    return call
_RNG_QUIET = ("mt_key", "check_std", "fma64", "annotations")   # no draw: called as they are
_RNG_REPLAYED = ("bernoulli", "uniform", "normal", "write", "random", "exponential", "geometric", "cauchy",
                 "log_normal", "normal_like")


def _as_bool(pred):
    def check(*arrays):
        return bool(pred(*arrays))
    return check


def _inside(tr: Tracer, f):
    """A primitive's forward while tracing: the kernels it calls are its own business (not recorded)."""
    def forward(*a, **k):
        tr.depth += 1
        try:
            return f(*a, **k)
        finally:
            tr.depth -= 1
    forward._ember_orig = f
    forward.__wrapped__ = getattr(f, "__wrapped__", f)
    return forward


def _kernel(tr: Tracer, name: str, f):
    def kernel(*args, **kwargs):
        if tr.depth or sys._getframe(1).f_code in tr.forward_codes:   # (a fast path calls the forward itself)
            return f(*args, **kwargs)
        tr.depth += 1
        try:
            out = f(*args, **kwargs)
        finally:
            tr.depth -= 1
        tr.on_kernel(name, f, args, kwargs, out)
        return out
    return kernel


def _rng_call(tr: Tracer, name: str, f):
    def call(*args, **kwargs):
        out = f(*args, **kwargs)
        if name in _RNG_REPLAYED:
            tr.on_rng(f, args, kwargs, out)
        else:
            tr.failed(f"random draws ({name}) inside the function (not replayed)")
        return out
    return call
_DATA_DEPENDENT = ("item", "__bool__", "__float__", "__int__", "__index__", "__complex__", "tolist")


def _readback(tr: Tracer, name: str, orig):
    def readback(self, *a, **k):
        if tr.fullgraph and name in _DATA_DEPENDENT:
            from ._exc import UserError
            tr.failed(f"Tensor.{name}() reads a value back to Python",
                      UserError("Could not guard on data-dependent expression: Tensor." + name + "() of a tensor "
                                "computed inside the compiled function"))
        tr.failed(f"Tensor.{name}() reads a value back to Python (data-dependent control flow)")
        return orig(self, *a, **k)
    readback.__name__ = name
    return readback
