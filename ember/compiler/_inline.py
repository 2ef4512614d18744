"""Lines of the generated programs that call a kernel without the layers around it, where those layers are provably
a plain forwarding call for the recorded dtypes: the result is the very same array computation.

* a forward or rule that is a lambda of exactly the form ``lambda xp, a: xp.NAME(a)`` (or a rule
  ``lambda xp, g, out, a: xp.NAME(g, out)``) calls ``xp.NAME`` directly (recognised by comparing its bytecode with a
  reference lambda compiled here: same instructions, constants and argument count, no closure or defaults);
* a rule ``lambda xp, g, out, ...: g`` (add's, sub's first) is ``g`` itself, as the rule returns it;
* add/sub/mul's forward kernel (``ops/elementwise._scalar_kernel``) and mul's rules: ``a OP b`` where the kernel
  does exactly that for the dtypes seen, with a Python float replaced by the device's cached weak number
  (``xp.weak_number``), as the kernel does on each call.
* the same ops on 0-d float32/float64 operands as NumPy scalars (``loose_line``): NumPy's scalar math computes the
  same IEEE operation as its ufunc, ~8x faster; the operand order is the one in which it gives the ufunc's bits
  (``backend.scalar_orders()``: a build may swap a commutative op's operands, which picks the other NaN payload when
  both operands are NaN).
"""
from __future__ import annotations

import operator

from ..ops import elementwise as _ew

_SYMBOL = {operator.mul: "*", operator.add: "+", operator.sub: "-"}
_KERNELS = {_ew.mul_p.forward: operator.mul, _ew.add_p.forward: operator.add, _ew.sub_p.forward: operator.sub}
_F16, _BF16 = _ew._F16, _ew._BF16

_REF_UNARY = lambda xp, a: xp.tanh(a)   # noqa: E731
_REF_RULE = lambda xp, g, out, a: xp.tanh_backward(g, out)   # noqa: E731
_REF_ID = {4: lambda xp, g, out, a: g, 5: lambda xp, g, out, a, b: g}   # noqa: E731


def _shaped_like(fn, ref) -> bool:
    c, r = getattr(fn, "__code__", None), ref.__code__
    return (c is not None and c.co_code == r.co_code and c.co_argcount == r.co_argcount
            and c.co_consts == r.co_consts and len(c.co_names) == len(r.co_names) and c.co_flags == r.co_flags
            and c.co_kwonlyargcount == r.co_kwonlyargcount and not c.co_freevars
            and fn.__defaults__ is None and fn.__kwdefaults__ is None)


def _scalar_op(op, a_expr: str, a_dtype, b, b_expr: str, bind) -> str | None:
    """``_scalar_kernel(op)(xp, a, b)`` as an expression, or None where it takes another path."""
    tb = type(b)
    if tb is float:
        if a_dtype is _F16 or a_dtype is _BF16:
            return None
        return f"{a_expr} {_SYMBOL[op]} {bind(('weak', a_dtype, b))}"
    if tb is int and (a_dtype is _F16 or a_dtype is _BF16):
        return None
    return f"{a_expr} {_SYMBOL[op]} {b_expr}"


def _kernel_template(kernel, dtype, size, exprs: list, const) -> str | None:
    """A device kernel's own expression template for these dtype and size (``kernel.inline``: its body where that
    is a plain NumPy expression, e.g. float32 tanh computed in float64 and rounded once), filled in; or None."""
    inline = getattr(kernel, "inline", None)
    form = inline(dtype, size) if inline is not None and const is not None else None
    if form is None:
        return None
    template, names = form
    return template.format(*exprs, **{k: const(v) for k, v in names.items()})


def forward_line(s, exprs: list, bind, const=None) -> str | None:
    """The expression of step ``s``'s forward without its wrappers, or None. ``exprs``: its arguments' expressions
    (casts applied); ``bind(value)`` gives the name of a constant of the program (``const(value)`` too)."""
    fwd = s.forward
    op = _KERNELS.get(fwd)
    if op is not None and not s.params and len(exprs) == 2 and s.arg_dtypes[0] is not None:
        b = s.arg_values[1]
        return _scalar_op(op, exprs[0], s.arg_dtypes[0], b, exprs[1], bind)
    if not s.params and len(exprs) == 1 and _shaped_like(fwd, _REF_UNARY):
        name = fwd.__code__.co_names[0]
        line = _kernel_template(getattr(s.xp, name, None), s.arg_dtypes[0], s.out_size, exprs, const)
        return line if line is not None else f"{bind(('attr', s.xp, name))}({exprs[0]})"
    return None


def rule_line(prim, i: int, rule, g_dtype, out_expr: str, args: list, arg_values: list, bind,
              params: dict, size=None, const=None) -> str | None:
    """The expression of one VJP rule call without its wrappers, or None (``size``: the input's elements)."""
    n = 3 + len(args)
    if params:
        return None
    ref = _REF_ID.get(n)
    if ref is not None and _shaped_like(rule, ref):
        return "g"
    if n == 4 and _shaped_like(rule, _REF_RULE):
        name = rule.__code__.co_names[0]
        if prim.saves_out and out_expr != "_OUT_NOT_SAVED":   # (the template reads out's dtype: the output's)
            from ..autograd._primitive import _NP_NS
            line = _kernel_template(getattr(_NP_NS, name, None), g_dtype, size, ["g", out_expr], const)
            if line is not None:
                return line
        return f"{bind(('xattr', name))}(g, {out_expr})"
    if prim is _ew.mul_p and n == 5 and rule is _ew.mul_p.vjps[i]:
        other = 1 - i
        return _scalar_op(operator.mul, "g", g_dtype, arg_values[other], args[other], bind)
    return None


def weak_scalar(dtype, b: float):
    """The Python float ``b`` beside a 0-d array of ``dtype`` as the forward kernel makes it (``xp.weak_number``), as a
    NumPy scalar; None where the kernel keeps it a Python float (0, nan, out of range: NumPy's own conversion)."""
    from ..autograd._primitive import _NP_NS as xp
    w = xp.weak_number(xp.backend.zeros((), dtype), b)
    if type(w) is not xp.backend.array_types[0] or w.shape != () or w.dtype != dtype:
        return None
    return w[()]


def loose_line(s, sexpr, bind, orders: dict) -> str | None:
    """add/sub/mul's forward (``_scalar_kernel``) of step ``s`` on NumPy scalars, where its operands are 0-d arrays of
    its float32/float64 result dtype (or one is a Python float the kernel makes a 0-d array of it): the expression,
    with ``sexpr(ref)`` the scalar of an operand, in the order that gives the ufunc's bits (``orders``); or None."""
    op = _KERNELS.get(s.forward)
    if op is None or s.params or len(s.args) != 2 or any(c is not None for c in s.casts):
        return None
    dt = s.out_dtype
    swapped = orders.get((op, dt))
    if swapped is None or s.arg_dtypes[0] != dt:
        return None
    if s.arg_dtypes[1] is not None:
        if s.arg_dtypes[1] != dt:
            return None
        b = None
    else:
        v = s.arg_values[1]
        if type(v) is not float or weak_scalar(dt, v) is None:
            return None
        b = bind(("weak_scalar", dt, v))
    a = sexpr(s.args[0])
    if b is None:
        b = sexpr(s.args[1])
    if a is None or b is None:
        return None
    sym = _SYMBOL[op]
    return f"{b} {sym} {a}" if swapped else f"{a} {sym} {b}"


def loose_rule(prim, i: int, rule, s, g_expr: str, other_scalar, bind, orders: dict) -> str | None:
    """mul's rule ``g * other`` of step ``s`` (a 0-d float32/float64 result: ``s.asarray``) on NumPy scalars: eager
    computes it on the saved 0-d array (or the kernel's weak number), i.e. with the ufunc; ``g_expr``: g's scalar,
    ``other_scalar(k)``: the scalar of saved input k (None: not one). The expression, or None."""
    if prim is not _ew.mul_p or rule is not _ew.mul_p.vjps[i] or len(s.in_meta) != 2 or s.node_params:
        return None
    dt = s.out_dtype
    swapped = orders.get((operator.mul, dt))
    if swapped is None:
        return None
    k = 1 - i
    if s.arg_dtypes[k] is not None:
        if s.arg_dtypes[k] != dt:
            return None
        b = other_scalar(k)
    else:
        v = s.arg_values[k]
        b = bind(("weak_scalar", dt, v)) if type(v) is float and weak_scalar(dt, v) is not None else None
    if b is None:
        return None
    return f"{b} * {g_expr}" if swapped else f"{g_expr} * {b}"
