"""``torch._dynamo``: the parts of PyTorch's compiler front end scripts touch (config, reset, disable, explain)."""
from __future__ import annotations

from ..compiler import OptimizedModule, config, disable, is_compiling, reset
from . import exc


def explain(fn, *extra_args, **extra_kwargs):
    """``torch._dynamo.explain(fn)(*args)``: trace ``fn`` once on the arguments and say whether it replays as one
    graph (``graph_count`` 1, ``graph_break_count`` 0) or runs eagerly, with the reason (``break_reasons``)."""
    from ..compiler import CompiledFunction

    def inner(*args, **kwargs):
        cf = CompiledFunction(fn)
        cf(*args, **kwargs)
        return ExplainOutput(cf._reasons)
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner


class ExplainOutput:
    """What ``explain`` found: the graphs, breaks and their reasons."""

    def __init__(self, reasons: list):
        self.break_reasons = [r for _, r in reasons]
        self.graph_break_count = len(self.break_reasons)
        self.graph_count = 0 if reasons else 1
        self.op_count = None
        self.graphs = []

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines.extend(f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons))
        return "\n".join(lines)


def mark_dynamic(t, index, **kwargs) -> None:
    """Accepted: shapes are static here (a new shape is a new trace)."""


def mark_static(t, index=None) -> None:
    """Accepted (shapes are always static here)."""


def allow_in_graph(fn):
    return fn


__all__ = ["OptimizedModule", "config", "disable", "explain", "is_compiling", "reset", "exc", "mark_dynamic",
           "mark_static", "allow_in_graph"]
