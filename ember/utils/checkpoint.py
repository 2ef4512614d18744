"""Activation checkpointing (``torch.utils.checkpoint``): trade compute for memory.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` keeping none of the tensors its ops save for
backward; backward recomputes them by running ``fn`` again, once, under the RNG state of the first run.

* Non-reentrant (``use_reentrant=False``, recommended): the forward runs under saved-tensor hooks whose
  pack keeps a small ``_Holder`` in place of each tensor. The first unpack in a backward reruns ``fn``
  under a second pair of hooks that hands each recomputed tensor to its holder, in the order they are
  saved (the n-th tensor saved by the rerun is the n-th saved by the first run); recomputation stops
  as soon as every holder is filled. Works with ``backward``, ``autograd.grad`` and double backward.
* Reentrant (``use_reentrant=True``, PyTorch's default while the argument is omitted): a custom
  Function whose backward reruns ``fn`` with grad enabled and back-propagates through it with a
  nested ``backward``; it needs every input's gradient, so ``autograd.grad`` is refused.
"""
from __future__ import annotations

import contextlib
import uuid
import warnings
import weakref
from typing import Any, Callable, Iterable

from ..ops import random as _random
from .._tensor import Tensor
from ..autograd import grad_mode as _gm
from ..autograd import graph as _graph
from ..autograd.engine import backward as _backward
from ..autograd.function import Function

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn", "set_checkpoint_early_stop",
           "set_checkpoint_debug_enabled"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled: bool | None = None
_enable_checkpoint_early_stop: bool | None = None

_USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but "
    "if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for "
    "more details on the differences between the two variants.")
_SEQUENTIAL_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. In "
    "version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, "
    "but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs "
    "for more details on the differences between the two variants.")
_DEBUG_TIP = ("\nTip: To see a more detailed error message, either pass `debug=True` to "
              "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\nwith "
              "`with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\nenable checkpoint-debug mode "
              "globally.\n")


class CheckpointError(RuntimeError):
    """The recomputation did not save what the original forward saved."""


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Override every checkpoint's ``debug`` flag inside the block (None: leave it to each call)."""
    global _checkpoint_debug_enabled
    prev, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Whether checkpoints made inside the block stop recomputing once every saved tensor is back."""
    global _enable_checkpoint_early_stop
    prev, _enable_checkpoint_early_stop = _enable_checkpoint_early_stop, enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of ``inputs`` detached, keeping its requires_grad flag."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _rng_context(preserve: bool, state):
    """Run the recomputation under the forward's CPU RNG state, restoring the caller's afterwards."""
    if not preserve:
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def ctx():
        with _random.fork_rng(devices=[]):
            _random.set_rng_state(state)
            yield
    return ctx()


# ----- reentrant ---------------------------------------------------------------------------------

def _is_checkpoint_valid() -> bool:
    """False inside a backward that computes gradients for chosen inputs only (``autograd.grad``,
    ``backward(inputs=...)``): the reentrant variant needs its inputs' gradients accumulated."""
    task = _graph.current_task()
    return task is None or task._needed is None


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = _random.get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with _gm.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
                "`inputs` parameter to .backward(). To resolve this error, you can either set "
                "use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _rng_context(ctx.preserve_rng_state, getattr(ctx, "fwd_cpu_state", None)):
            detached = detach_variable(tuple(inputs))
            with _gm.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outs, grads = [], []
        for o, g in zip(outputs, args):
            if isinstance(o, Tensor) and o.requires_grad:
                outs.append(o)
                grads.append(g)
        if not outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward(outs, grads)
        return (None, None) + tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached)


# ----- non-reentrant -----------------------------------------------------------------------------

class _Holder:
    """What the forward keeps in place of a saved tensor: per backward, the recomputed tensor."""

    __slots__ = ("values", "__weakref__")

    def __init__(self):
        self.values: dict = {}   # backward id -> recomputed tensor (or None once unpacked)


class _StopRecomputation(Exception):
    pass


def _metadata(x: Tensor) -> dict:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_DETERMINISM = {"default": _metadata, "none": lambda _: None}


class _Frame:
    """One checkpointed call: how to rerun it, its inputs, and a weak reference to each holder."""

    def __init__(self, recompute_fn, early_stop: bool, metadata_fn):
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.saved_args: list = []
        self.weak_holders: list = []
        self.metadatas: list = []
        self.recomputed: set = set()     # backward ids whose recomputation has run
        self.counter: dict = {}          # backward id -> tensors saved so far by its recomputation
        self.forward_completed = False

    def save_inputs(self, args) -> None:
        # Inside an outer checkpoint, this one's inputs are tensors the outer one saves (and recomputes).
        hooks = _graph.current_hooks() if _graph.HOOKS_ON else None
        self.saved_args = [_graph.pack_saved(a, False, hooks) if hooks is not None and isinstance(a, Tensor)
                           else a for a in args]
        # As PyTorch (which saves them with save_for_backward): an input changed in place after the forward
        # would be recomputed from its new value, a silently wrong gradient; the version check refuses it.
        self.versions = [a._vc[0] if isinstance(a, Tensor) else None for a in args]

    def get_inputs(self) -> list:
        out = []
        for a, v in zip(self.saved_args, self.versions):
            if isinstance(a, _graph.SavedTensor):
                a = a.unpack()
            elif isinstance(a, Tensor) and a._vc[0] != v:
                raise RuntimeError(_graph.modified_message(a, v))
            out.append(a)
        return out

    def check_recomputed(self, gid) -> None:
        n = self.counter.get(gid, 0)
        if n != len(self.weak_holders):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward "
                f"and recomputation.\nNumber of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {n}.\n{_DEBUG_TIP}")
        different = []
        for idx, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None or holder.values.get(gid) is None:
                continue
            meta = self.metadata_fn(holder.values[gid])
            if meta != self.metadatas[idx]:
                different.append(f"tensor at position {idx}:\nsaved metadata: {self.metadatas[idx]}\n"
                                 f"recomputed metadata: {meta}\n")
        if different:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                  f"different metadata than during the forward pass.\n{''.join(different)}.\n"
                                  f"{_DEBUG_TIP}")


class _RecomputationHooks(_graph.saved_tensors_hooks):
    """Pushed while the frame reruns: the n-th tensor saved goes to the n-th holder (detached: the
    unpacked value is put back in the original graph by the saved-tensor machinery)."""

    def __init__(self, frame_ref, gid):
        def pack(x):
            x = x.detach() if x.requires_grad else x
            frame = frame_ref()
            idx = frame.counter.get(gid, 0)
            frame.counter[gid] = idx + 1
            if idx >= len(frame.weak_holders):
                if not frame.forward_completed:
                    return x   # a backward run inside the checkpointed function itself
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                      f"than during the original forward pass.\n{_DEBUG_TIP}")
            holder = frame.weak_holders[idx]()
            if holder is not None:   # None: its node was freed already (a backward inside the forward)
                holder.values[gid] = x
            if frame.early_stop and idx + 1 == len(frame.weak_holders):
                raise _StopRecomputation
            return x

        super().__init__(pack, lambda x: x)


class _CheckpointHooks(_graph.saved_tensors_hooks):
    """Pushed during the checkpointed forward: every saved tensor becomes a holder."""

    def __init__(self, frame: _Frame):
        def pack(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.metadata_fn is not None:
                frame.metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack(holder):
            task = _graph.current_task()
            gid = task.id if task is not None else uuid.uuid4().int   # unpacked outside a backward
            if gid not in frame.recomputed:
                args = frame.get_inputs()
                try:
                    with _RecomputationHooks(weakref.ref(frame), gid), _gm.enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputation:
                    pass
                frame.recomputed.add(gid)
                frame.check_recomputed(gid)
            if holder.values.get(gid) is None:
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked "
                    "once. If you are calling ctx.saved_tensors in backward, make sure to do so only once. "
                    "Otherwise please open an issue with details on your use case.")
            value = holder.values[gid]
            if task is None or not task._batched:   # a batched backward may run a node once per row
                holder.values[gid] = None   # recomputed tensors live until unpacked, even with retain_graph
            return value

        super().__init__(pack, unpack)


def _checkpoint_without_reentrant(fn, preserve_rng_state, context_fn, determinism_check, debug, early_stop,
                                  args, kwargs):
    if (_checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug) and \
            context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _DETERMINISM:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM)}, but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    fwd_cpu_state = _random.get_rng_state() if preserve_rng_state else None

    def recompute_fn(*inputs):
        with _rng_context(preserve_rng_state, fwd_cpu_state), recompute_context:
            fn(*inputs, **kwargs)

    if not _gm.is_grad_enabled():
        return fn(*args, **kwargs)
    frame = _Frame(recompute_fn,
                   _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None else early_stop,
                   _DETERMINISM[determinism_check])
    frame.save_inputs(args)
    suppressed = True
    with _CheckpointHooks(frame), forward_context:
        ret = fn(*args, **kwargs)
        suppressed = False
    if suppressed:
        raise RuntimeError("torch.utils.checkpoint: the forward context provided by context_fn suppressed an "
                           "exception raised during the checkpointed forward. This is not supported because "
                           "checkpoint cannot return a value for a failed forward.")
    frame.forward_completed = True
    return ret


# ----- public API --------------------------------------------------------------------------------

def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = _DEFAULT_DETERMINISM_MODE,
               debug: bool = False, early_stop: bool = True, **kwargs):
    """``function(*args, **kwargs)``, keeping none of its intermediate tensors for backward: they are
    recomputed (once per backward) when backward needs them."""
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug, early_stop,
                                         args, kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (a list of callables, or a Sequential) in order on ``input``, checkpointing all
    but the last of ``segments`` chunks."""
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
