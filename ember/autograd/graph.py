"""Graph nodes: the backward functions (``grad_fn``) that tensors point to.

A ``Node`` knows its ``next_functions`` (one ``(node, input_nr)`` edge per differentiable input,
``(None, 0)`` for inputs that need no gradient) and how to map gradients of its outputs to
gradients of its inputs (``apply``). Leaves that require grad end in an ``AccumulateGrad`` node.
"""
from __future__ import annotations

import itertools
import platform
import sys
import threading
import weakref

from .. import _dtype, _tensor
from .._device import backend_of, cpu_backend
from .._dtype import type_word
from .._hooks import HOOK_COUNT, add_hook
from .._state import _state as _gm_state, fwd_state, track_tangent
from .anomaly_mode import _anomaly, record_stack, version_error_hint

_seq = itertools.count()
NODE_OBSERVERS: list = []   # fn(node, tensor) called as each op node is made (ember.viz.record); empty: one test

FREED = ("freed",)   # what a node's saved values become once backward has released them
FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


class Node:
    """Base class of every backward node (``MulBackward0``, ``AccumulateGrad``, custom Functions)."""

    # Hooks and metadata are rare: they default to the class attributes below and land in the
    # instance __dict__ (created on first write only), so making a node sets just two slots.
    __slots__ = ("next_functions", "_seq", "__weakref__", "__dict__")

    num_outputs = 1
    accumulates = False   # see AccumulateGrad
    _hooks = _pre_hooks = _tensor_hooks = _retained = _metadata = None
    # True once any hook or retain_grad was registered on the node: the engine's one test per node for
    # whether it must run the node through its hook machinery (never reset: an emptied hook dict is harmless)
    _intercept = False
    _qualified_name = None   # name() of the nodes PyTorch implements in C++ namespaces

    def __init__(self, next_functions: tuple = ()):
        self.next_functions = next_functions
        self._seq = next(_seq)

    def name(self) -> str:
        return self._qualified_name or type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def apply(self, grads: list, create_graph: bool, needed) -> tuple:
        """Gradients for each of ``next_functions`` from the gradients of this node's outputs.

        ``grads`` holds raw arrays (plain backward) or Tensors (``create_graph``); ``needed`` is
        None (every input) or a tuple of flags telling which input gradients are wanted.
        """
        raise NotImplementedError

    def __call__(self, *grads):
        out = self.apply([g._data if isinstance(g, _tensor.Tensor) else g for g in grads], False, None)
        return tuple(None if g is None else _tensor.make(g) for g in out)

    # ----- hooks -------------------------------------------------------------------------------
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
            self.__dict__["_intercept"] = True   # (AccumulateGrad's is a property over this)
        return add_hook(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
            self.__dict__["_intercept"] = True
        return add_hook(self._pre_hooks, fn)

    def _register_tensor_hook(self, output_nr: int, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
            self.__dict__["_intercept"] = True
        return add_hook(self._tensor_hooks.setdefault(output_nr, {}), fn)

    def _retain_grad(self, output_nr: int, tensor_ref) -> None:
        HOOK_COUNT[0] += 1
        if self._retained is None:
            self._retained = {}
            self.__dict__["_intercept"] = True
        self._retained[output_nr] = tensor_ref

    def _release(self) -> None:
        """Free saved values after a backward without retain_graph."""


class AccumulateGrad(Node):
    """The node at a leaf that requires grad: adds incoming gradients into ``variable.grad``.

    An ordinary node to the engine: its apply accumulates, and the leaf's tensor hooks are its tensor
    hooks (PyTorch: tensor pre-hooks of the AccumulateGrad), so the engine runs them as any node's."""

    __slots__ = ("variable",)
    _qualified_name = "torch::autograd::AccumulateGrad"
    accumulates = True   # the engine runs it for a target only when backward accumulates (not in grad())

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    @property
    def _tensor_hooks(self):
        m = self.variable._meta
        return {0: m.hooks} if m is not None and m.hooks else None

    @property
    def _intercept(self) -> bool:
        m = self.variable._meta
        return bool(m is not None and m.hooks) or self.__dict__.get("_intercept", False)

    def apply(self, grads, create_graph, needed):
        # Held by the engine's buffer list alone (counted before this frame binds it): a fresh array nobody
        # else can see, which .grad may take instead of a copy (PyTorch steals such a gradient too).
        owned = not create_graph and STEAL_SOLE_GRADIENT and _getrefcount(grads[0]) == _SOLE
        g = grads[0]
        if g is not None:
            accumulate_grad(self.variable, g, create_graph, owned)
        return []


_getrefcount = getattr(sys, "getrefcount", None)


def _refcounts_mean_ownership() -> bool:
    """Whether a reference count of one holder proves that no one else can see an object: only on CPython with
    the GIL. Free-threaded CPython (3.13t, 3.14t; even with the GIL re-enabled at run time) splits counts
    between threads and defers some, and PyPy has no reference counts (``getrefcount`` is missing or
    emulated), so there a count says nothing about ownership and AccumulateGrad copies every gradient."""
    if platform.python_implementation() != "CPython" or _getrefcount is None:
        return False
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    if is_gil_enabled is None:
        return True   # before 3.13: no free-threaded build exists
    import sysconfig   # (here: only 3.13+ can be a free-threaded build, and the import costs ~1 ms)
    return bool(is_gil_enabled()) and not sysconfig.get_config_var("Py_GIL_DISABLED")


# Decided once, at import: may AccumulateGrad.apply take a gradient that only the engine holds as ``.grad``?
STEAL_SOLE_GRADIENT = _refcounts_mean_ownership()


def _sole_count(items: list) -> int:
    return _getrefcount(items[0])


# What getrefcount reads for a list's item that only the list holds, in the very form AccumulateGrad.apply
# uses (measured, not assumed: CPython 3.14 counts borrowed stack references differently from 3.11).
_SOLE = _sole_count([object()]) if _getrefcount is not None else -1

ACCUMULATE_LOCK = threading.Lock()   # backward may run in several threads at once; NumPy's add releases the GIL


# ----- what hooks return: one check for every kind of hook (the engine and AccumulateGrad call it) -----

def hook_name(hook) -> str:
    """How PyTorch names a hook in its messages: its ``__name__``, else ``<unknown>``."""
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _type_string(arr) -> str:
    """PyTorch's ``Tensor::toString()``: ``torch.FloatTensor``, or ``CPUBoolType`` where no legacy name exists."""
    word = type_word(arr.dtype)
    dev = backend_of(arr).device_type
    if word in _LEGACY_WORDS and dev in ("cpu", "cuda"):
        return f"torch.{word}Tensor" if dev == "cpu" else f"torch.cuda.{word}Tensor"
    return f"{dev.upper() if dev in ('cpu', 'cuda') else dev.capitalize()}{word}Type"


_LEGACY_WORDS = frozenset(("Float", "Double", "Half", "Byte", "Char", "Short", "Int", "Long"))


def check_hook_value(hook, prev, res, create_graph: bool):
    """Validate one value ``res`` a hook returned in place of the gradient ``prev`` (a raw array, or a Tensor
    under ``create_graph``) with PyTorch's checks and messages (python_hook.cpp's check_single_result): the
    one check every hook's return goes through. Returns the value to use in ``prev``'s place (None: none)."""
    if res is None:
        return None
    if prev is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(res, _tensor.Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(res).__name__}'")
    ref = prev._data if create_graph else prev
    got = res._data
    if got.dtype != ref.dtype or backend_of(got) is not backend_of(ref):
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the type of value (was {_type_string(ref)} "
                           f"got {_type_string(got)})")
    if got.shape != ref.shape:
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the size of value")
    return res if create_graph else got


def check_hook_values(hook, prev, res, create_graph: bool) -> list:
    """Validate the tuple a node hook or pre-hook returned in place of the gradients ``prev`` (PyTorch's
    check_result: a tuple, of the same length, each value as ``check_hook_value``)."""
    if not isinstance(res, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(res).__name__}'")
    if len(res) != len(prev):
        raise RuntimeError(f"hook '{hook_name(hook)}' has returned an incorrect number of values "
                           f"(got {len(res)}, but expected {len(prev)})")
    return [check_hook_value(hook, p, r, create_graph) for p, r in zip(prev, res)]


def accumulate_grad(t, g, create_graph: bool, owned: bool = False) -> None:
    """Add gradient ``g`` (a raw array, or a Tensor under create_graph) into leaf ``t``'s ``.grad``.
    ``owned``: no one else holds the array ``g``, so a first gradient may be ``g`` itself when it has the
    leaf's shape and dtype and its own writable, C-contiguous memory."""
    with ACCUMULATE_LOCK:
        m = t._get_meta()
        if m.grad_dtype is not _tensor.SAME_DTYPE:   # the leaf's grad_dtype: incoming gradients cast to it
            g = leaf_grad_cast(t, g, create_graph)
        if m.grad is None:
            if create_graph:
                m.grad = g.clone()   # its own memory: g may be shared with other leaves or a broadcast view
            elif owned and backend_of(g).can_adopt(g, t._grad_np_dtype(g.dtype), t._data.shape):
                m.grad = _tensor.make(g)
            else:
                m.grad = _tensor.make(backend_of(g).copy(g, t._grad_np_dtype(g.dtype)))
        elif create_graph:
            m.grad = m.grad + g
        else:
            gd = m.grad._data
            backend_of(gd).add_into(gd, g)
            m.grad._vc[0] += 1
    if m.post_acc_hooks:
        for fn in list(m.post_acc_hooks.values()):
            # as PyTorch: the return is checked as any hook's (against the tensor), then must be None
            if check_hook_value(fn, t, fn(t), True) is not None:
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


_CPU = cpu_backend()
_CPU_TYPES = _CPU.array_types
_SAME = _tensor.SAME_DTYPE


def hooked_leaves(edges, grads, which=None) -> bool:
    """Whether a leaf at one of ``edges`` (those at the positions ``which``, default all) that gets a gradient has
    hooks of its own (tensor or post-accumulate hooks) or its AccumulateGrad node has hooks."""
    for i in range(len(edges)) if which is None else which:
        acc = edges[i][0]
        if acc is not None and grads[i] is not None:
            m = acc.variable._meta
            if (m is not None and (m.hooks or m.post_acc_hooks)) or acc.__dict__.get("_intercept", False):
                return True
    return False


def accumulate_leaves(edges, grads, check: bool = True) -> bool:
    """Run the AccumulateGrad nodes at ``edges`` on ``grads`` (raw arrays, one per edge) as the engine would after
    the node that gives them, where the caller knows that nothing else runs after that node in this backward and
    that each of those nodes is the AccumulateGrad of a distinct leaf (``CompiledFunctionBackward``): each leaf then
    gets exactly this one gradient, and with no hooks to watch, the order of the leaves is not seen. Returns False,
    having done nothing, when some leaf or its node has hooks (the engine must run them, in its order); ``check``
    False: the caller knows there are none."""
    if check and hooked_leaves(edges, grads):
        return False
    dsts = []
    srcs = []
    with ACCUMULATE_LOCK:
        for (acc, _), g in zip(edges, grads):
            if acc is None or g is None:
                continue
            t = acc.variable
            m = t._meta   # (made with the node)
            if m is None:
                m = t._get_meta()
            if m.grad_dtype is not _SAME:
                g = leaf_grad_cast(t, g, False)
            gr = m.grad
            if gr is None:   # (AccumulateGrad may adopt a gradient no one else holds; a copy has the same value)
                m.grad = _tensor.make(backend_of(g).copy(g, t._grad_np_dtype(g.dtype)))
                continue
            gd = gr._data
            if type(gd) in _CPU_TYPES:   # (the CPU's adds in one call: one switch of NumPy's error state)
                dsts.append(gd)
                srcs.append(g)
            else:
                backend_of(gd).add_into(gd, g)
            gr._vc[0] += 1
        if dsts:
            _CPU.add_into_all(dsts, srcs)
    return True


def leaf_grad_cast(t, g, create_graph: bool):
    """Gradient ``g`` for leaf ``t`` in the dtype of its ``grad_dtype`` (None: as it comes)."""
    gd = g._data.dtype if create_graph else g.dtype
    want = t._grad_np_dtype(gd)
    if want == gd:
        return g
    return g.to(_dtype.from_numpy_dtype(want)) if create_graph else backend_of(g).copy(g, want)


def grad_accumulator(t) -> AccumulateGrad:
    """The (cached) AccumulateGrad node of leaf ``t``; the leaf holds it weakly, as PyTorch does."""
    m = t._get_meta()
    acc = m.acc() if m.acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        m.acc = weakref.ref(acc)
        if _anomaly.enabled:
            record_stack(acc)   # as PyTorch: where the leaf first joined a graph
    return acc


_node_classes: dict = {}


def node_class(name: str, base: type) -> type:
    """A Node subclass named as PyTorch names the op's backward (``MulBackward0``), made once."""
    cls = _node_classes.get(name)
    if cls is None:
        attrs = {"__slots__": ()}
        if name in ("CopySlices", "CopyBackwards"):
            attrs["_qualified_name"] = "torch::autograd::" + name
        cls = _node_classes[name] = type(name, (base,), attrs)
    return cls


type_name_of = type_word


_LEGACY_TENSOR_TYPES = frozenset(("Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double"))


def _type_name(arr) -> str:
    """PyTorch's Tensor::toString(): the legacy name (torch.LongTensor) where the dtype has one, else the
    dispatch key's (CPUBoolType, CPUBFloat16Type, CPUComplexFloatType)."""
    name = type_name_of(arr.dtype)
    return f"torch.{name}Tensor" if name in _LEGACY_TENSOR_TYPES else f"CPU{name}Type"


def modified_message(t, expected, out_data=None, current=None, node=None, saver=None) -> str:
    """PyTorch's error for a saved tensor changed in place; it names the op (``Exp``, not ``ExpBackward0``).
    ``saver``: the node that saved ``t`` (``node`` for a saved output); beyond PyTorch, the message names it."""
    if t is not None:
        data, current, vc = t._data, t._vc[0], t._vc
        which = f", which is output {t._output_nr} of {_op_name(t.grad_fn)}," if t.grad_fn is not None else ""
    else:
        data, vc = out_data, getattr(node, "_out_vc", None)
        which = f", which is output 0 of {_op_name(node)},"
    saver = saver if saver is not None else node
    if _anomaly.enabled:
        # PyTorch's hint under anomaly mode, then the lines that saved and modified the tensor
        hint = version_error_hint(vc, expected, saver)
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")
        if saver is not None:
            hint += f"\nIt was saved for backward by {saver.name()}."
    return ("one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{_type_name(data)} {list(data.shape)}]{which} is at version {current}; expected "
            f"version {expected} instead. " + hint)


def _op_name(node) -> str:
    name = node.name()
    i = name.rfind("Backward")
    return name[:i] if i > 0 else name


# ----- saved-tensor hooks ----------------------------------------------------------------------
# torch.autograd.graph.saved_tensors_hooks: while (pack, unpack) is pushed, a node saving a tensor for
# backward keeps pack(tensor) instead, and backward uses unpack(packed). The stack is per thread, as in
# PyTorch; HOOKS_ON counts pushes in all threads, so the recording hot path pays one truth test.

_tls = threading.local()
HOOKS_ON: list = []   # one entry per pushed pair of hooks, any thread (the cheap flag the recorder tests)


def _stack() -> list:
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def current_hooks():
    """The innermost (pack, unpack) pair of this thread, or None."""
    s = getattr(_tls, "stack", None)
    return s[-1] if s else None


def _check_hook(fn, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"saved_tensors_hooks(): {what} must be callable, got {type(fn).__name__}")


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it are stored as ``pack_hook(tensor)`` and
    given back to backward as ``unpack_hook(packed)`` (which must return a Tensor). Innermost wins."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        msg = getattr(_tls, "disabled", None)
        if msg is not None:
            raise RuntimeError(msg)
        _check_hook(self.pack_hook, "pack_hook")
        _check_hook(self.unpack_hook, "unpack_hook")
        _stack().append((self.pack_hook, self.unpack_hook))
        HOOKS_ON.append(None)
        return self

    def __exit__(self, *exc) -> None:
        _stack().pop()
        HOOKS_ON.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device for backward. ember's arrays
    all live on the CPU, so this keeps them as they are (a copy on a GPU device would go here)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            return (t.device, t)

        def unpack(packed):
            device, t = packed
            return t if t.device == device else t.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager: pushing saved-tensor hooks inside it raises RuntimeError(error_message), as
    does entering it while hooks are in force."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        if current_hooks() is not None:   # as PyTorch: hooks already in force cannot be disabled
            raise RuntimeError(self.error_message)
        self._prev = getattr(_tls, "disabled", None)
        _tls.disabled = self.error_message
        return self

    def __exit__(self, *exc) -> None:
        _tls.disabled = self._prev


UNPACK_TYPE_MESSAGE = "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}"


class SavedTensor:
    """A tensor a node saved through hooks (``torch._C._autograd.SavedTensor``): the packed value, the
    unpack hook, and what is needed to put the unpacked tensor back in the graph where the original was."""

    __slots__ = ("_packed", "_unpack_hook", "_grad_fn", "_output_nr", "_requires_grad", "_acc", "_is_output", "_fw",
                 "_shape")

    def unpack_data(self):
        """The raw array backward needs (plain backward: no graph)."""
        return self._unpacked()._data

    def _unpacked(self):
        r = self._unpack_hook(self._packed)
        if not isinstance(r, _tensor.Tensor):
            raise TypeError(UNPACK_TYPE_MESSAGE.format(type(r).__name__))
        return r

    def unpack(self, node=None):
        """The saved tensor, attached to the graph as the original was (its grad_fn, or its leaf's
        gradient accumulator; an output of ``node`` gets ``node`` as grad_fn)."""
        r = self._unpacked()
        t = _tensor.make(r._data)
        t._vc = r._vc
        if self._is_output:
            if node is not None:
                t.grad_fn, t._output_nr, t._requires_grad = node, self._output_nr, True
        elif self._grad_fn is not None:
            t.grad_fn, t._output_nr, t._requires_grad = self._grad_fn, self._output_nr, True
        elif self._requires_grad:
            t._requires_grad = True
            acc = self._acc() if self._acc is not None else None
            if acc is not None:
                t._get_meta().acc = weakref.ref(acc)
        fw = self._fw
        if fw is not None and fw._fw_grad is not None and fwd_state.level:
            t._fw_grad = fw._fw_grad   # forward mode: the tangent comes back too (forward-over-reverse)
            track_tangent(t)
        return t


def pack_saved(t, is_output: bool = False, hooks=None) -> SavedTensor:
    """Pack tensor ``t`` with the current (or the given) hooks; call only when hooks are active
    (``HOOKS_ON`` and ``current_hooks()`` not None). Custom Functions call this in save_for_backward."""
    pack, unpack = hooks or current_hooks()
    s = SavedTensor.__new__(SavedTensor)
    s._is_output = is_output
    s._shape = t._data.shape   # (a built-in op's backward checks the unpacked tensor against it)
    s._output_nr = t._output_nr
    s._requires_grad = t._requires_grad
    s._grad_fn = None if is_output else t.grad_fn
    s._acc = None
    if not is_output and t.grad_fn is None and t._requires_grad:
        m = t._meta
        s._acc = m.acc if m is not None else None
    s._unpack_hook = unpack
    s._fw = None
    if t._fw_grad is not None:
        set_saved_tangent(s, t._fw_grad)
    prev, _gm_state.enabled = _gm_state.enabled, False   # as PyTorch: the pack hook records no graph
    try:
        s._packed = pack(t)
    finally:
        _gm_state.enabled = prev
    return s


def set_saved_tangent(s: SavedTensor, tangent) -> None:
    """Keep ``tangent`` for the tensor saved in ``s`` (cleared with its dual level)."""
    h = _tensor.make(tangent._data)
    h._fw_grad = tangent
    track_tangent(h)
    s._fw = h


def unpack_saved(s: SavedTensor, node=None):
    """The tensor for a saved entry packed by ``pack_saved`` (see ``SavedTensor.unpack``)."""
    return s.unpack(node)


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor in an iterable), as an in-place op
    done outside autograd's sight would have to."""
    if isinstance(tensor, _tensor.Tensor):
        tensor = (tensor,)
    for t in tensor:
        t._vc[0] += 1


# ----- multi-grad hooks ------------------------------------------------------------------------

class _MultiHandle:
    """The handle of register_multi_grad_hook: removes the per-tensor hooks."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class GraphTask:
    """One run of the engine (a backward() or grad() call), as hooks may ask about it."""

    __slots__ = ("id", "_deps", "_roots", "_needed", "_accumulate", "_batched", "_callbacks", "_heap")

    def will_execute(self, node) -> bool:
        """Whether this backward runs ``node`` (``torch._C._will_engine_execute_node``)."""
        if node is not None and node.accumulates and not self._accumulate:
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently running "
                               "autograd.grad(). This is currently not supported.")
        if self._deps is None:   # plain backward() counts no dependencies: the nodes reachable from its roots
            self._deps = _reachable(self._roots)
        if node is None or (node not in self._deps and node not in self._roots):
            return False
        return self._needed is None or node in self._needed


_task_ids = itertools.count()


def _reachable(roots) -> set:
    """Every node reachable from ``roots`` through ``next_functions`` (the roots only if an edge leads back)."""
    seen = set()
    stack = list(roots)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def queue_callback(callback) -> None:
    """Run ``callback()`` when the backward running now has finished (``Variable._execution_engine.queue_callback``:
    DistributedDataParallel waits for its all-reduces there)."""
    task = getattr(_tls, "task", None)
    if task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    if task._callbacks is None:
        task._callbacks = []
    task._callbacks.append(callback)


def current_task():
    """The innermost backward running in this thread, or None (``_current_graph_task_id() == -1``)."""
    return getattr(_tls, "task", None)


def _edge_node(t):
    return t.grad_fn if t.grad_fn is not None else grad_accumulator(t) if t._requires_grad else None


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Run ``fn`` on the gradients of ``tensors`` in one backward.

    ``mode="all"``: once per backward, after the gradients of every tensor this backward computes,
    with a list holding each tensor's gradient (None for those it does not compute).
    ``mode="any"``: once per backward, with the first gradient computed among the tensors.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "all":
        nodes = [_edge_node(t) for t in tensors]
        state: dict = {}   # backward id -> [buffer, calls so far, calls expected]

        def make_hook(idx):
            def hook(grad):
                task = current_task()
                if task is None:
                    raise AssertionError("expected this hook to be called inside a backward call")
                with lock:
                    entry = state.get(task.id)
                    if entry is None:
                        expected = sum(map(task.will_execute, nodes))
                        entry = state[task.id] = [[None] * len(tensors), 0, expected]
                    entry[0][idx] = grad
                    entry[1] += 1
                    done = entry[1] == entry[2]
                    if done:
                        del state[task.id]
                if done:
                    fn(entry[0])
            return hook

        handles = tuple(t.register_hook(make_hook(i)) for i, t in enumerate(tensors))
    else:
        ran: set = set()

        def wrapped(grad):
            task = current_task()
            if task is None:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                if task.id in ran:
                    return
                ran.add(task.id)
            fn(grad)

        handles = tuple(t.register_hook(wrapped) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


# ----- statistics ------------------------------------------------------------------------------

def summary(output, top: int = 5):
    """ember's own: nodes by type, saved tensors and their bytes, depth, leaves, the largest saved
    tensors and the node that saved each, and a hint when the graph keeps growing (``total_loss += loss``).
    ``print()`` the result for a table. See ``ember.autograd._summary``."""
    from ._summary import summary as _summary
    return _summary(output, top, FREED)
