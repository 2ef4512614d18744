"""ember.viz: seeing the autograd graph.

- ``make_dot(output, params=None, show_saved=False, show_attrs=False, max_attr_chars=50,
  group_modules=False)``: a Graphviz picture, with torchviz's arguments (plus module boxes).
- ``to_html(outputs, path, inputs=None)``: one self-contained page that steps through the forward pass
  and the engine's real backward pass, and shows gradient accumulation.
- ``record()`` / ``record_modules(model)``: what the pictures need, recorded while the program runs.
- ``python -m ember.viz SCRIPT.py --out graph.html``: the page for a script's last backward.

Graph statistics are ``ember.autograd.graph.summary``.
"""
from ._record import record, record_modules
from .dot import DotGraph, GraphvizNotFound, make_dot
from .html import to_html

__all__ = ["make_dot", "to_html", "record", "record_modules", "DotGraph", "GraphvizNotFound"]
