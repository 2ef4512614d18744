"""Anomaly detection: forward tracebacks on graph nodes, NaN checks and located errors in backward.

While the mode is on (``detect_anomaly()`` / ``set_detect_anomaly(True)``):

* every graph node records the stack of the forward call that made it, as PyTorch does, in
  ``node.metadata["traceback_"]`` (a list of formatted frames, outermost first); a node made while
  another node's backward runs (``create_graph=True``) records that node as ``metadata["parent_"]``;
* the engine checks each node's output gradients for NaN (unless ``check_nan=False``) and raises
  PyTorch's ``RuntimeError("Function 'SqrtBackward0' returned nan values in its 0th output.")``;
* an error raised while a node runs warns PyTorch's ``UserWarning`` "Error detected in ..." with
  the forward traceback, and (beyond PyTorch) attaches the same text to the exception as a note;
* in-place ops record where they ran, so that a "modified by an inplace operation" error names the
  line that saved the tensor and the line that changed it (beyond PyTorch).

The mode is global (all threads), as PyTorch's ``AnomalyMode`` is. Off, it costs one flag test when
a node is made and nothing in the engine's loop.
"""
from __future__ import annotations

import functools
import sys
import threading
import traceback
import warnings
from collections import OrderedDict

from .._origin import last_frame, site, user_frame

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]


class _AnomalyState:
    """The mode's flags (read on the hot path as ``_anomaly.enabled``)."""

    enabled = False
    check_nan = True


_anomaly = _AnomalyState()


class _Current(threading.local):
    node = None   # the node whose backward this thread is running (under anomaly mode only)


_current = _Current()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward results for NaN."""
    return _anomaly.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (``torch.set_anomaly_enabled``)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"set_anomaly_enabled(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(enabled).__name__}")
    if not isinstance(check_nan, bool):
        raise TypeError(f"set_anomaly_enabled(): argument 'check_nan' (position 2) must be bool, not "
                        f"{type(check_nan).__name__}")
    _anomaly.enabled = enabled
    _anomaly.check_nan = check_nan


_ENABLED_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                    "enabled for debugging.")


class detect_anomaly:
    """Context manager that turns anomaly detection on (see the module docstring).

    ``check_nan``: raise when a backward function returns NaN. Like PyTorch, it warns that the mode is
    slow when made. Beyond PyTorch, it also decorates a function: ``@detect_anomaly()``.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._prev: list = []
        warnings.warn(_ENABLED_WARNING, UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._prev.append((_anomaly.enabled, _anomaly.check_nan))
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(*self._prev.pop())

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: a plain call, or a context manager that restores the mode."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _anomaly.enabled
        self.prev_check_nan = _anomaly.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# ----- where things happened ----------------------------------------------------------------------

def stack_here() -> list:
    """The forward stack as PyTorch stores it (``traceback.format_list``), ember's own frames left off."""
    frames = traceback.extract_stack(user_frame(1))
    return traceback.format_list(frames)


def record_stack(node) -> None:
    """Give ``node`` the forward traceback (and, inside a backward, its parent node) when the mode is on.

    Called where nodes are made: ``_primitive._record`` (behind its own flag test), custom Functions."""
    if not _anomaly.enabled:
        return
    md = node.metadata
    md["traceback_"] = stack_here()
    parent = _current.node
    if parent is not None:
        md["parent_"] = parent


# ----- in-place ops: where each version of a tensor's memory was made -------------------------------

_MAX_SITES = 4096        # version counters tracked (oldest dropped): the mode may stay on for long
_MAX_PER_COUNTER = 16
_inplace_sites: OrderedDict = OrderedDict()   # id(vc) -> (vc, [(version, (file, line, name))])
_sites_lock = threading.Lock()


def record_inplace(vc) -> None:
    """Remember where the in-place op that just bumped version counter ``vc`` was called."""
    f = user_frame(1)
    where = (f.f_code.co_filename, f.f_lineno, f.f_code.co_name) if f is not None else None
    with _sites_lock:
        entry = _inplace_sites.get(id(vc))
        if entry is None or entry[0] is not vc:
            entry = _inplace_sites[id(vc)] = (vc, [])   # holding vc keeps its id from being reused
            if len(_inplace_sites) > _MAX_SITES:
                _inplace_sites.popitem(last=False)
        else:
            _inplace_sites.move_to_end(id(vc))
        sites = entry[1]
        sites.append((vc[0], where))
        if len(sites) > _MAX_PER_COUNTER:
            del sites[0]


def _modified_at(vc, expected: int):
    """Where version ``expected + 1`` (the first change after the save) was made, else the latest known."""
    entry = _inplace_sites.get(id(vc))
    if entry is None or entry[0] is not vc or not entry[1]:
        return None
    for version, where in entry[1]:
        if version == expected + 1:
            return version, where
    return entry[1][-1]


def version_error_hint(vc, expected: int, saver=None) -> str:
    """The hint that ends a "modified by an inplace operation" error under anomaly mode: PyTorch's,
    then (beyond PyTorch) the line that saved the tensor and the line that modified it, when known."""
    hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. The "
            "variable in question was changed in there or anywhere later. Good luck!")
    saver = saver if saver is not None else _current.node
    lines = []
    if saver is not None:
        md = saver._metadata
        at = last_frame(md.get("traceback_")) if md else None
        lines.append(f"It was saved for backward by {saver.name()}" + (f" at {at}" if at else "."))
    if vc is not None:
        mod = _modified_at(vc, expected)
        if mod is not None and mod[1] is not None:
            version, (fname, lineno, name) = mod
            lines.append(f"It was modified in place (to version {version}) at {site(fname, lineno, name)}")
    return hint + "".join("\n" + ln for ln in lines)


# ----- the engine's side ------------------------------------------------------------------------------

def format_stack(node) -> str:
    """PyTorch's text for an error in ``node``: its forward traceback, then its parents' (double backward)."""
    md = node._metadata or {}
    stack = md.get("traceback_")
    name = node.name()
    if stack is None:
        out = [f"Error detected in {name}. No forward pass information available. Enable detect anomaly during "
               "forward pass for more information."]
    else:
        out = [f"Error detected in {name}. Traceback of forward call that caused the error:\n" + "".join(stack)]
    parent = md.get("parent_")
    seen = set()
    while parent is not None and id(parent) not in seen:   # a loop, not recursion; guard against cycles
        seen.add(id(parent))
        pmd = parent._metadata or {}
        pstack = pmd.get("traceback_")
        pname = parent.name()
        if pstack is None:
            out.append(f"Error detected in {pname}. No forward pass information available. Enable detect anomaly "
                       "during forward pass for more information.")
        else:
            out.append(f"Previous calculation was induced by {pname}. Traceback of forward call that induced the "
                       "previous calculation:\n" + "".join(pstack))
        parent = pmd.get("parent_")
    return "\n\n".join(out)


def report_error(node, e: BaseException) -> None:
    """Warn PyTorch's "Error detected in ..." for an error raised while ``node`` ran, and note it on ``e``."""
    if getattr(e, "_ember_anomaly_reported", False):
        return   # an inner backward (inside a custom Function) already reported it
    text = format_stack(node)
    f = user_frame(1)
    level = 2   # stacklevel 2 is this function's caller
    g = sys._getframe(1)
    while g is not None and g is not f:
        level += 1
        g = g.f_back
    warnings.warn(text, UserWarning, stacklevel=level if f is not None else 2)
    try:
        e._ember_anomaly_reported = True
    except AttributeError:
        pass
    if hasattr(e, "add_note"):   # Python 3.11+: the traceback survives in logs and notebooks
        e.add_note("[anomaly mode] " + text)


def check_nan(node, out, graph: bool) -> None:
    """PyTorch's error when a backward function returned NaN."""
    from .._device import NAMESPACES
    for i, g in enumerate(out):
        if g is None:
            continue
        d = g._data if graph else g
        if d.dtype.kind not in "fcV":
            continue
        if NAMESPACES[type(d)].isnan(d).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def run_node_checked(run, node, *args):
    """``run(node, *args)`` (the engine's node runner) with anomaly mode's checks around it."""
    prev = _current.node
    _current.node = node
    try:
        out = run(node, *args)
        if out and _anomaly.check_nan:
            check_nan(node, out, args[1])
        return out
    except Exception as e:
        report_error(node, e)
        raise
    finally:
        _current.node = prev
