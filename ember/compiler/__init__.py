"""``torch.compile`` and ``torch.compiler``: trace once per input signature, replay without per-op Python.

``compile(fn)`` returns a callable that, on the first call for a guard key (the tensor arguments' shapes, dtypes,
strides, devices and requires_grad, which arguments are the same tensor, the other arguments' values (floats by
their bits, objects by identity, modules by their state), grad mode, the default dtype, autocast's state), runs
``fn`` eagerly while recording what it does (``_trace.Tracer``); later calls with the same key
replay the recording as one generated straight-line program over the device's kernels, and give the outputs one
``CompiledFunctionBackward`` node whose generated backward runs the recorded VJP rules in the engine's order
(``_program``). Results are eager ember's to the bit.

Recorded and replayed: the primitives (fast paths included), in-place ops (writes into the same slots, version
counters moved as eager's), random draws on the default generator (dropout: the same numbers as eager for the same
seed), non-differentiable ops made outside the primitives (comparisons, logical ops, arg-extrema: the op is called
again), device-kernel calls from the ops' own code (an index or mask computed from values; a check on values is
a guard: a replay whose check answers otherwise runs the call eagerly, so eager's error is raised), the checks on
values and the computations on raw arrays in ops' wrappers (``_util.holds`` / ``_util.compute``: index bounds,
target ranges, batch norm's running statistics), arrays in params (index tensors), split/chunk/unbind's shared
node, outputs that are views of hidden intermediates, autocast regions (the weights' casts come from the region's
cache at each replay, as eager's). A check that follows a random draw or a write into outside state runs first
in the replay (with the steps it reads), so that the eager call a failed check leads to finds the state unchanged.

Whatever the trace cannot prove it replays exactly makes that key run eagerly (PyTorch's graph break, at the
granularity of the whole call), with the reason kept for ``torch._dynamo.explain``; ``fullgraph=True`` raises
PyTorch's error instead: a value read back to Python (``.item()``, ``bool()``, printing a tensor), ``print``,
module attribute assignment, a tensor made inside the call and stored outside it, other tensors made outside the
primitives from values (``nonzero``, max-pool's indices), a seed set inside, writes the recording does not see,
a saved tensor changed after it was saved, in-place ops on inputs under autograd, custom autograd Functions and
nodes with an ``apply`` of their own, saved-tensor hooks, hooks on intermediates, forward AD, vmap, anomaly mode,
the profiler, backward inside the call, outputs that are views of inputs, a check on values of an array made with
NumPy's own operators outside ``holds`` (a device kernel's answer on an array the recording does not know). Not
seen at all (as any tracer): Python-side effects on plain objects and globals, and a check on values written with
NumPy's own operators and methods alone (no device kernel, no ``holds``): ops must route such checks through
``_util.holds`` (tests/test_compile_checks.py has one case per family).
Shapes are static (``dynamic`` is accepted and ignored: a new shape is a new trace, up to
``torch._dynamo.config.cache_size_limit`` traces per function, then eager).
"""
from __future__ import annotations

import functools
import operator
from typing import Callable

from .. import _dtype
from .._state import _state, code_swaps, fwd_state, func_depth, module_break as _module_break
from .._tensor import Tensor, make
from ..autograd import _profiling
from ..autograd._primitive import apply as _apply
from ..autograd.grad_mode import set_grad_enabled as _set_grad_enabled
from ..autograd.anomaly_mode import _anomaly
from ..autograd.graph import HOOKS_ON, NODE_OBSERVERS, AccumulateGrad, _seq
from ..nn.modules.module import Module
from ..amp import autocast_mode as _amp
from . import _program, _trace
from ._program import CompiledFunctionBackward, TraceFailed, generator_state
from ._trace import Tracer, Tracing, tensor_edge

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling", "OptimizedModule",
           "CompiledFunctionBackward", "allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin"]

_TRACING = [0]          # traces running (is_compiling())
_ALL: list = []         # weak references to every compiled function (reset() empties their caches)
_EAGER = "eager"
_DATA = operator.attrgetter("_data")
_RG = operator.attrgetter("_requires_grad")
_IS = operator.is_
_NO_EDGE = (None, 0)


class _Config:
    """``torch._dynamo.config``'s knobs that scripts set."""
    cache_size_limit = 8
    recompile_limit = 8
    accumulated_cache_size_limit = 256
    suppress_errors = False
    verbose = False
    capture_scalar_outputs = False
    automatic_dynamic_shapes = True
    assume_static_by_default = True
    optimize_ddp = True
    allow_rnn = False   # PyTorch's default: a trace stops at nn.RNN/GRU/LSTM (True: they are traced)


config = _Config()


def is_compiling() -> bool:
    """True while ember.compile traces a function (PyTorch: while Dynamo traces)."""
    return _TRACING[0] > 0


is_dynamo_compiling = is_compiling


def _eager_only() -> bool:
    """Modes in which a call runs eagerly (the recording would not show what they do)."""
    return (_TRACING[0] > 0 or fwd_state.level != 0 or _state.inference or _anomaly.enabled or bool(HOOKS_ON)
            or bool(NODE_OBSERVERS) or func_depth[0] != 0 or _profiling.NODE_HOOK is not None
            or _profiling.is_recording())


# ----- arguments: flatten and key ---------------------------------------------------------------

def _swaps_key() -> tuple:
    """What functions' code swaps change (``code_swaps`` moved: autocast was on at some time; the profiler's swaps
    run eagerly): CPU autocast's state, not the count of regions entered, so that each region replays."""
    st = _amp._state
    return (st.enabled.get("cpu", False), _amp._swapped[0], _amp.get_autocast_dtype("cpu"), st.cache_enabled,
            st.excluded)


def _flatten(x, leaves: list):
    """The structure of ``x`` (a hashable spec) with its leaves appended to ``leaves``."""
    t = type(x)
    if t is tuple or t is list:
        return (t, tuple(_flatten(v, leaves) for v in x))
    if t is dict:
        return (dict, tuple(x.keys()), tuple(_flatten(v, leaves) for v in x.values()))
    leaves.append(x)
    return None


def _unflatten(spec, it):
    if spec is None:
        return next(it)
    t = spec[0]
    if t is dict:
        return dict(zip(spec[1], [_unflatten(s, it) for s in spec[2]]))
    vals = [_unflatten(s, it) for s in spec[1]]
    return tuple(vals) if t is tuple else vals


_PLAIN_KEYS = (int, float, bool, str, type(None), complex, bytes)


def _leaf_key(v):
    if isinstance(v, Tensor):
        d = v._data
        return (type(v), d.shape, d.dtype, type(d), getattr(d, "strides", None), v._requires_grad,
                v.grad_fn is not None, v._base is not None, v._inference)
    t = type(v)
    if t is float:
        return (float, v.hex())   # -0.0 and nan are values of their own
    if t in _PLAIN_KEYS:
        return (t, v)
    if isinstance(v, Module):   # a module argument (a compiled method's self): its state too
        return ("module", id(v), _module_sig(v))
    return ("id", id(v))


def _module_sig(mod: Module) -> tuple:
    """What a module's forward may read besides tensors' values: every submodule's attributes (training flags,
    settings) and its parameters', buffers' and children's identities."""
    sig = []
    for m in mod.modules():
        sig.extend(map(id, m.__dict__.values()))
        sig.extend(map(id, m._parameters.values()))
        sig.extend(map(id, m._buffers.values()))
        sig.extend(map(id, m._modules.values()))
    return tuple(sig)


def _aliasing(leaves) -> tuple | None:
    """Which tensor arguments are the same tensor (f(x, x) is traced as one input)."""
    seen = {}
    pattern = None
    for i, v in enumerate(leaves):
        if isinstance(v, Tensor):
            k = seen.setdefault(id(v), i)
            if k != i:
                pattern = (pattern or ()) + ((i, k),)
    return pattern


# ----- the compiled function ---------------------------------------------------------------------

class CompiledFunction:
    """What ``compile(fn)`` returns for a function: a cache of recordings by guard key."""

    def __init__(self, fn: Callable, fullgraph: bool = False, module: Module | None = None):
        self._fn = fn
        self._fullgraph = fullgraph
        self._module = module
        self._cache: dict = {}
        self._reasons: list = []   # (key, reason) of each trace that fell back to eager
        self._n_traces = 0
        self._guard_fallbacks = 0   # replays that a check on values sent to eager
        functools.update_wrapper(self, fn)
        _ALL.append(self)

    def __deepcopy__(self, memo):
        """A copy compiles afresh (recordings hold the original's tensors)."""
        import copy
        return CompiledFunction(copy.deepcopy(self._fn, memo), self._fullgraph,
                                copy.deepcopy(self._module, memo) if self._module is not None else None)

    def __reduce__(self):
        return (CompiledFunction, (self._fn, self._fullgraph, self._module))

    def _reset(self) -> None:
        self._cache.clear()
        self._reasons.clear()
        self._n_traces = 0

    def __get__(self, obj, objtype=None):   # a compiled function in a class body is a method
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if _DISABLED[0] or _eager_only():
            if _TRACING[0] > 0 and self._fullgraph is False:
                pass   # a compiled function called inside a trace: its ops join the outer recording
            return self._fn(*args, **kwargs)
        leaves: list = []
        spec = _flatten((args, kwargs) if kwargs else args, leaves)
        key = (spec, tuple(map(_leaf_key, leaves)), _aliasing(leaves), _state.enabled, _dtype.get_default_dtype(),
               _swaps_key() if code_swaps[0] else None, self._module_sig())
        rec = self._cache.get(key)
        if rec is None:
            return self._trace(key, spec, leaves, args, kwargs)
        if rec is _EAGER:
            return self._fn(*args, **kwargs)
        caps = rec.captured
        # (the same array objects as at the last call, and the same requires_grad: nothing to compare further)
        datas = list(map(_DATA, caps))
        if not all(map(_IS, datas, rec.cap_datas)) or list(map(_RG, caps)) != rec.cap_rg:
            for c, m in zip(caps, rec.cap_meta):
                d = c._data
                if d.shape != m[0] or d.dtype != m[1] or c._requires_grad != m[2] or d.strides != m[3]:
                    del self._cache[key]   # a captured tensor changed shape, dtype or requires_grad: trace again
                    return self._trace(key, spec, leaves, args, kwargs)
            rec.cap_datas = datas
        try:
            return _replay(rec, spec, leaves)
        except _program.GuardFailed:   # a check on values answers otherwise: this call runs eagerly
            self._guard_fallbacks += 1
            return self._fn(*args, **kwargs)

    def _module_sig(self):
        return None if self._module is None else _module_sig(self._module)

    def _trace(self, key, spec, leaves, args, kwargs):
        if self._n_traces >= config.cache_size_limit:   # PyTorch: past the recompile limit, run eagerly
            self._cache[key] = _EAGER
            self._reasons.append((key, f"cache_size_limit ({config.cache_size_limit}) reached"))
            return self._fn(*args, **kwargs)
        self._n_traces += 1
        inputs = []
        for v in leaves:   # (a tensor passed twice is one input: the key says so)
            if isinstance(v, Tensor) and not any(v is u for u in inputs):
                inputs.append(v)
        for t in inputs:
            if t._base is not None and t._vc[0] != t._view_v:
                return self._fn(*args, **kwargs)   # a stale view: apply refreshes it first (not recorded)
        tr = Tracer(inputs, self._fullgraph)
        g0 = generator_state()
        gen = _program._random.default_generator
        seed0, st0 = gen._seed, gen._state
        _TRACING[0] += 1
        try:
            with Tracing(tr):
                result = self._fn(*args, **kwargs)
        finally:
            _TRACING[0] -= 1
        try:
            if tr.fail is not None:
                raise TraceFailed(tr.fail)
            if generator_state() != g0 and not (tr.rng_draws and gen._seed == seed0 and
                                                (st0 is None or gen._state is st0)):
                raise TraceFailed("the default generator moved other than by the recorded draws (seeded?)")
            out_leaves: list = []
            out_spec = _flatten(result, out_leaves)
            rec = _program.finish(tr, out_leaves, 0)
            rec.out_spec = out_spec
            rec.in_pos = [next(i for i, v in enumerate(leaves) if v is t) for t in inputs]
            self._cache[key] = rec
        except Exception as e:   # noqa: BLE001  (an unexpected trace is not replayed: the call ran eagerly)
            if not isinstance(e, TraceFailed):
                e = TraceFailed(f"internal: {type(e).__name__}: {e}")
            del tr
            self._cache[key] = _EAGER
            self._reasons.append((key, e.reason))
            if self._fullgraph:
                from ._exc import Unsupported
                raise Unsupported(e.reason) from None
        return result


def _replay(rec, spec, leaves):
    ins = [leaves[i] for i in rec.in_pos]
    I = [t._data for t in ins]
    caps = rec.captured
    if rec.cache_casts:   # autocast's casts of weights: from this region's cache, or cast and cached now, as eager
        caps = list(caps)
        for k, leaf, dt in rec.cache_casts:
            caps[k] = _amp._cached_cast(dt, leaf, dt)
    C = [c._data for c in caps]
    outs, need = rec.forward(I, C, rec.consts)
    made = {}
    node = None
    if rec.grad_steps and _state.enabled:
        node = CompiledFunctionBackward.__new__(CompiledFunctionBackward)
        edges = []
        direct = True
        for r in rec.ext:
            t = ins[r[1]] if r[0] == "in" else caps[r[1]]
            e = tensor_edge(t)
            if e is None:
                edges.append(_NO_EDGE)
                continue
            edges.append(e)
            if direct and (type(e[0]) is not AccumulateGrad or e[0].variable is not t):
                direct = False   # an edge into the graph before the call: its nodes run after this one
        node.next_functions = tuple(edges)
        node._direct = direct
        node._seq = next(_seq)
        node._rec = rec
        node._vals = need
        if len(rec.grad_steps) != 1:
            node.num_outputs = len(rec.grad_steps)
    grad_nr = {j: k for k, j in enumerate(rec.grad_steps)}
    out_grad, out_vc = rec.out_grad, rec.out_vc
    for j, a in zip(rec.out_steps, outs):
        t = make(a)
        k = grad_nr.get(out_grad.get(j)) if node is not None else None
        if k is not None:
            t.grad_fn = node
            t._output_nr = k
            t._requires_grad = True
        v = out_vc.get(j)
        if v:
            t._vc[0] = v
        made[j] = t
    for r, n in rec.vc_bumps:   # in-place writes into inputs and captured tensors move their versions
        (ins[r[1]] if r[0] == "in" else caps[r[1]])._vc[0] += n
    if node is not None:
        checks = []
        for o in rec.checks:
            t = ins[o[1]] if o[0] == "in" else caps[o[1]] if o[0] == "cap" else made[o[1]]
            checks.append((t, t._vc, t._vc[0]))
        node._checks = checks
    vals = []
    for r in rec.out_refs:
        kind = r[0]
        if kind == "step":
            vals.append(made[r[1]])
        elif kind == "in":
            vals.append(ins[r[1]])
        elif kind == "cap":
            vals.append(caps[r[1]])
        elif kind == "view":
            vals.append(_view_again(ins[r[1][1]] if r[1][0] == "in" else caps[r[1][1]], r[2], r[3]))
        else:
            vals.append(r[1])
    return _unflatten(rec.out_spec, iter(vals))


def _view_again(base: Tensor, steps: tuple, recorded: bool) -> Tensor:
    """An output that is a view of an input: its view ops applied to the input again, eagerly (with grad mode as
    when the trace made it, where the input requires grad)."""
    t = base
    if base._requires_grad and _state.enabled != recorded:
        with _set_grad_enabled(recorded):
            for prim, params in steps:
                t = _apply(prim, (t,), params)
        return t
    for prim, params in steps:
        t = _apply(prim, (t,), params)
    return t


# ----- modules ------------------------------------------------------------------------------------

class OptimizedModule(Module):
    """``torch.compile(module)``: a module wrapping the original (``_orig_mod``; state_dict keys get the
    ``_orig_mod.`` prefix, as PyTorch's) whose calls go through the compiled ``_orig_mod.__call__``."""

    def __init__(self, mod: Module, compiled: CompiledFunction):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def __reduce_ex__(self, protocol):
        # (the class is named as PyTorch's, torch._dynamo.eval_frame.OptimizedModule: pickles rebuild it here)
        return (_optimized, (self._modules["_orig_mod"], self._compiled._fullgraph))


def _optimized(mod: Module, fullgraph: bool) -> OptimizedModule:
    return OptimizedModule(mod, CompiledFunction(mod, fullgraph, module=mod))


OptimizedModule.__module__ = "torch._dynamo.eval_frame"


# ----- the public entry points ------------------------------------------------------------------

_DISABLED = [False]
_ALLOWED_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs", "onnxrt", "tvm", "openxla", "tensorrt")


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable = "inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False):
    """``torch.compile``: the traced, replayed version of ``model`` (a function or a module; see the module
    docstring). Without ``model``, a decorator. ``mode``, ``options`` and ``backend`` choose nothing here (one
    compiler); ``dynamic`` is accepted (shapes are always static); ``disable=True`` returns ``model`` itself."""
    from ..ops.utility import compile as _check   # PyTorch's argument errors (the pass-through's checks)
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    _check(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
           disable=disable)
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model, fullgraph, module=model))
    return CompiledFunction(model, fullgraph)


def reset() -> None:
    """Forget every recording (``torch.compiler.reset()`` / ``torch._dynamo.reset()``)."""
    for f in _ALL:
        f._reset()


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """``torch.compiler.disable``: ``fn`` always runs eagerly; called inside a compiled function, it is a graph
    break (here: the whole call runs eagerly)."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        if _TRACING[0] > 0:
            _CURRENT_BREAK(f"call to a function marked torch.compiler.disable ({getattr(fn, '__name__', fn)})"
                           + (f": {reason}" if reason else ""))
        return fn(*args, **kwargs)
    disabled._torchdynamo_disable = True
    return disabled


def _CURRENT_BREAK(reason: str) -> None:
    tr = _trace.CURRENT[-1] if _trace.CURRENT else None
    if tr is not None:
        tr.failed(reason)


def _rnn_break(module) -> None:
    """nn.RNN/GRU/LSTM's forward while a trace runs: PyTorch's dynamo graph-breaks on them unless
    ``torch._dynamo.config.allow_rnn`` (its builder refuses to wrap them); here the call runs eagerly, so an RNN
    model keeps the fused recurrent layers (tracing them records the step-by-step composite, which replays slower),
    and ``fullgraph=True`` raises PyTorch's Unsupported."""
    if _TRACING[0] > 0 and not config.allow_rnn:
        _CURRENT_BREAK("Attempted to wrap RNN, GRU, or LSTM\n  Explanation: Dynamo does not support RNN, GRU, or "
                       "LSTM.\n  Hint: Set torch._dynamo.config.allow_rnn=True to enable experimental support for "
                       f"RNN, GRU, and LSTM in Dynamo\n\n  Developer debug context: {module!r}\n")


_module_break[0] = _rnn_break


def allow_in_graph(fn):
    """Accepted: ``fn``'s primitives are recorded as any others'."""
    return fn


def assume_constant_result(fn):
    """Accepted: ``fn`` runs at every call (its tensors' results are recorded as any others')."""
    return fn


def cudagraph_mark_step_begin() -> None:
    """No CUDA graphs here: nothing to mark."""
