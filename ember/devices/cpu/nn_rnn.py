"""The recurrent layers' time loops (``torch.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu`` and their cells) on raw
arrays, for the raw namespaces: ``rnn_forward`` runs one direction of one layer (or one cell step) and keeps what
backward reads; ``rnn_backward`` runs the reverse loop (ember/ops/rnn.py records them as one graph node).

Each step calls the kernels the composite of ember ops called (``addprod``, ``sigmoid``, ``tanh``, ...) in its order,
and the backward the very kernels its derivative rules call (addmm's, mm's, sigmoid's, tanh's, threshold's,
permute's), each sum formed in the order ember's engine formed the composite's: results are the composite's to
the last bit. The loops are written once against a namespace ``ns`` (``forward_loop``, ``backward_loop``): the cpu
namespace binds its own kernels (cpu/namespace.py), the array-API namespaces theirs (common/namespace.py).
No derivative rule calls these, so graph_ns has no twin (tests/test_namespaces.py lists them as raw-only).
On the cpu namespace's own NumPy arrays, LSTM and GRU steps take ``_fwd_step_lstm_np``/``_fwd_step_gru_np``: the
same values with fewer kernel calls (the gate blocks joined; see the section's comment).

Layouts: ``"padded"`` (T, B, G) gate inputs and (T, B, H) outputs; ``"packed"`` (N, G) and (N, H) with the batch
sizes (sorted by decreasing length: ``sizes[t]`` rows run at step ``t``); ``"cell"`` one step, (B, G) in, no
sequence output. States are (B, H) arrays: ``(h, c)`` for LSTM, ``(h,)`` otherwise.
"""
from __future__ import annotations

import numpy as np

from .elementwise import _EXACT_MAX

__all__ = ["forward_loop", "backward_loop"]
# what the namespaces call them (cpu/namespace.py and common/namespace.py bind the loops to their own kernels)
NAMESPACE_NAMES = ("rnn_forward", "rnn_backward")
_CPU_NS = "ember.devices.cpu.namespace"
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


# ----- the composite's products and their rules ---------------------------------------------------------------

def _hidden(ns, h, wt, b_hh):
    """The composite's ``linear(h, w_hh, b_hh)``: addmm (mm without a bias) with ``w_hh.t()``."""
    if b_hh is not None:
        return ns.addprod(b_hh, h, wt, "ij,jk->ik", 1, 1)
    return ns.matmul_forward(h, wt)


def _addmm_grad(ns, g, a, b, k):
    """addmm's (einsum's) rule for operand ``k`` of ``a @ b``: an operand laid out transposed (``w.t()``) gets its
    gradient in its own layout, as PyTorch's mm_mat1/mat2_backward."""
    op, other, sub, others = (a, b, "ij", "jk") if k == 0 else (b, a, "jk", "ij")
    if ns.grad_in_own_layout(op, g, 2):
        return ns.permute(ns.einsum(f"{others},ik->{sub[::-1]}", other, g), (1, 0))
    return ns.einsum(f"{others},ik->{sub}", other, g)


def _mm_grad_a(ns, g, a, b):
    """matmul's rule for ``a`` of a 2-d ``a @ b``."""
    return ns.matmul(g, ns.transpose(b, -1, -2))


def _mm_grad_b(ns, g, a, b):
    return ns.matmul(ns.transpose(a, -1, -2), g)


# ----- forward -------------------------------------------------------------------------------------------------

def _fwd_step(ns, mode, x, state, wt, b_hh, wrt, H):
    """One step on raw arrays, in the composite's order of operations; returns the new state and what the
    backward step reads."""
    h = state[0]
    hg = _hidden(ns, h, wt, b_hh)
    if mode == "LSTM":
        c = state[1]
        gates = x + hg
        i, f, g, o = gates[:, :H], gates[:, H:2 * H], gates[:, 2 * H:3 * H], gates[:, 3 * H:]
        fs = ns.sigmoid(f)
        a = fs * c
        is_ = ns.sigmoid(i)
        gt = ns.tanh(g)
        c_new = a + is_ * gt
        os_ = ns.sigmoid(o)
        tc = ns.tanh(c_new)
        hp = os_ * tc
        h_new = ns.matmul_forward(hp, wrt) if wrt is not None else hp
        return (h_new, c_new), (h, c, fs, is_, gt, os_, tc, hp)
    if mode == "GRU":
        x_r, x_z, x_n = x[:, :H], x[:, H:2 * H], x[:, 2 * H:]
        h_r, h_z, h_n = hg[:, :H], hg[:, H:2 * H], hg[:, 2 * H:]
        r = ns.sigmoid(h_r + x_r)
        z = ns.sigmoid(h_z + x_z)
        n = ns.tanh(x_n + h_n * r)
        d = h - n
        return (d * z + n,), (h, h_n, r, z, n, d)
    pre = x + hg
    out = ns.tanh(pre) if mode == "RNN_TANH" else ns.relu(pre)
    return (out,), (h, out)


# ----- LSTM and GRU on NumPy arrays: the gate blocks joined per kernel call ------------------------------------
# The steps above call the namespace's kernels once per gate block, as the composite did (three sigmoids, two
# tanh, three sigmoid_backward, ...): ~40 small kernel calls a step, and each product through einsum's planning
# (~5 us a call on top of BLAS). Every kernel is elementwise, and the float32 ones choose their algorithm by the
# size of the array they get (elementwise._EXACT_MAX: float64 then one rounding below it, NumPy's float32 kernel
# from it on). So on NumPy arrays the sigmoid blocks (LSTM's i, f, o; GRU's r, z) go through each kernel
# together, with the algorithm a single block would get (chosen by the block's size, never the joined array's;
# blocks of _EXACT_MAX elements and more keep the steps above): the same values, element by element. The joined
# arrays are block-major ((3, B, H), (2, B, H)): NumPy's kernels on strided 2-d views cost 2-3x their time on C
# arrays. The products are the BLAS calls the composite's einsum made (linalg._as_matmul: one np.matmul on the
# same operand layouts), called directly where einsum would make them; an operand in another layout takes
# einsum (BLAS's result depends on the operands' layout: h @ w.T and h @ ascontiguousarray(w.T) differ).
# Layer alone, fwd + bwd (LSTM(64, 64, 2), T 35, B 20, float32): 14.2 -> 11.1 ms (bench/NOTES.md).

def _np_steps(ns, mode, arrays, w_hr, H) -> bool:
    """Whether the NumPy steps apply: the cpu namespace, an LSTM without projection or a GRU, float32 or float64
    NumPy arrays throughout, gate blocks under _EXACT_MAX elements in float32 (float64 kernels take no size
    decision), and w_hh a C array (so that its ``.t()`` is the F-laid operand the rules expect)."""
    if mode not in ("LSTM", "GRU") or w_hr is not None or getattr(ns, "__name__", None) != _CPU_NS:
        return False
    dt = arrays[0].dtype
    if dt != _F32 and dt != _F64:
        return False
    for a in arrays:
        if a is not None and (type(a) is not np.ndarray or a.dtype != dt):
            return False
    w_hh = arrays[-2]
    if not (w_hh.flags.c_contiguous and not w_hh.flags.f_contiguous):
        return False
    return dt == _F64 or arrays[1].shape[0] * H < _EXACT_MAX


def _mm_ok(a, b) -> bool:
    """Whether einsum of two 2-d operands is one np.matmul (linalg.einsum: operand sizes' product over 4096;
    below that it takes np.einsum's own loop)."""
    return a.size * b.size > 4096


def _np_hidden(ns, h, wt, b_hh):
    """``_hidden`` on NumPy arrays: addprod's einsum as its np.matmul, the bias added in place (addprod's
    ``prod += c``)."""
    if not _mm_ok(h, wt):
        return _hidden(ns, h, wt, b_hh)
    r = np.matmul(h, wt)
    if b_hh is not None:
        r += b_hh
    return r


def _f64_tanh(x):
    """elementwise.tanh of a float32 array under _EXACT_MAX elements (float64, rounded once); float64 as is."""
    if x.dtype == _F32:
        return np.tanh(x.astype(_F64)).astype(_F32)
    return np.tanh(x)


def _fwd_step_lstm_np(ns, mode, x, state, wt, b_hh, wrt, H):
    """``_fwd_step`` of an LSTM on NumPy arrays: the sigmoid of the i, f and o blocks in one pass over a (3, B, H)
    array (block-major, so that each block is a C array: NumPy's kernels on strided 2-d views cost 2-3x), the tanh
    of g, in the composite's arithmetic (elementwise.sigmoid: ``1 / (1 + exp(-x))`` with exp correctly rounded;
    a float32 negation cast to float64 is the float64 negation of the cast). Saves ``_fwd_step``'s values, then
    the sigmoid array."""
    h, c = state
    gates = _np_hidden(ns, h, wt, b_hh)
    gates += x   # (x + hg: its own new array, added in place)
    B = gates.shape[0]
    blocks = gates.reshape(B, 4, H).transpose(1, 0, 2)   # (i, f, g, o) x (B, H), a view
    f32 = gates.dtype == _F32
    n = np.empty((3, B, H), _F64 if f32 else gates.dtype)
    np.negative(blocks[:2], out=n[:2])
    np.negative(blocks[3], out=n[2])
    np.exp(n, out=n)
    s = n.astype(_F32) if f32 else n
    s += 1
    np.divide(1, s, out=s)
    is_, fs, os_ = s[0], s[1], s[2]
    gt = _f64_tanh(blocks[2])   # (float64: np.tanh on the strided block, as the composite's tanh of its chunk)
    c_new = fs * c
    c_new += is_ * gt
    tc = _f64_tanh(c_new)
    hp = os_ * tc
    return (hp, c_new), (h, c, fs, is_, gt, os_, tc, hp, s)


def _tanh_grad_factor(out):
    """tanh_backward's ``1 - out^2`` (float32: in float64, rounded once)."""
    if out.dtype == _F32:
        d = out.astype(_F64)
        d = 1.0 - d * d
        return d.astype(_F32)
    return 1.0 - out * out


def _bwd_step_lstm_np(gh, gc, sv, H):
    """``_bwd_step`` of an LSTM from ``_fwd_step_lstm_np``'s saves: the three sigmoid_backward products over the
    joined (3, B, H) sigmoid array at once (``g * (1 - s) * s``, left to right), tanh_backward's
    (``g * (1 - out^2)``) for c and g, the gate gradients joined as the composite's cat."""
    h, c, fs, is_, gt, os_, tc, hp, s = sv
    t = gh * os_
    t *= _tanh_grad_factor(tc)
    gc = t if gc is None else gc + t
    u = np.empty_like(s)
    np.multiply(gc, gt, out=u[0])
    np.multiply(gc, c, out=u[1])
    np.multiply(gh, tc, out=u[2])
    u *= 1 - s
    u *= s
    gg = gc * is_
    gg *= _tanh_grad_factor(gt)
    return np.concatenate([u[0], u[1], gg, u[2]], 1), gc * fs


def _fwd_step_gru_np(ns, mode, x, state, wt, b_hh, wrt, H):
    """``_fwd_step`` of a GRU on NumPy arrays: the r and z sigmoids in one pass over a (2, B, H) array (block-major),
    in the composite's arithmetic; saves ``_fwd_step``'s values."""
    h = state[0]
    hg = _np_hidden(ns, h, wt, b_hh)
    B = hg.shape[0]
    hb = hg.reshape(B, 3, H).transpose(1, 0, 2)   # (r, z, n) x (B, H), views
    xb = x.reshape(B, 3, H).transpose(1, 0, 2)
    pre = hb[:2] + xb[:2]   # (h_r + x_r, h_z + x_z)
    np.negative(pre, out=pre)
    if pre.dtype == _F32:
        e = pre.astype(_F64)
        np.exp(e, out=e)
        sg = e.astype(_F32)
    else:
        sg = np.exp(pre, out=pre)
    sg += 1
    np.divide(1, sg, out=sg)
    r, z = sg[0], sg[1]
    h_n = hg[:, 2 * H:]
    t = h_n * r
    n = _f64_tanh(np.add(x[:, 2 * H:], t, out=t))   # x_n + h_n * r
    d = h - n
    out = d * z
    out += n
    return (out,), (h, h_n, r, z, n, d)


def _np_hidden_bwd(ns, ghg, h_prev, wt, b_hh, need_w):
    """The hidden projection's rules on NumPy arrays (the loop's generic block, ``_hidden_bwd``): h's gradient
    ``g @ w_hh`` and w_hh's ``g.T @ h`` as the einsum rules' np.matmul calls (w_hh a C array, so its ``.t()`` is
    F-laid and its gradient comes in its own layout; h not F-laid)."""
    if h_prev.flags.f_contiguous and not h_prev.flags.c_contiguous:
        return _hidden_bwd(ns, ghg, h_prev, wt, b_hh, need_w)
    if b_hh is None:   # mm's rules: no size decision, w_hh's gradient as (h.T @ g).T
        g_w = np.matmul(h_prev.T, ghg).T if need_w else None
        return np.matmul(ghg, wt.T), g_w, None
    # sum_to's np.sum over the batch: the same np.add.reduce, without np.sum's Python layers
    gb = np.add.reduce(ghg, axis=0) if ghg.ndim == 2 and b_hh.shape == ghg.shape[1:] else \
        ns.sum_to(ghg, b_hh.shape)
    g_h = np.matmul(ghg, wt.T) if _mm_ok(wt, ghg) else _hidden_bwd_h(ns, ghg, h_prev, wt, b_hh)
    g_w = None
    if need_w:
        g_w = np.matmul(ghg.T, h_prev) if _mm_ok(h_prev, ghg) else _hidden_bwd_w(ns, ghg, h_prev, wt, b_hh)
    return g_h, g_w, gb


def _fwd_loop(ns, mode, xs, sizes, state0, w_hh, b_hh, w_hr, reverse):
    """The forward of ``composite_direction`` on raw arrays: per-step outputs, final states, per-step saves and
    the batch operations (slices, joins) backward must undo."""
    H = state0[-1].shape[1] if mode == "LSTM" else state0[0].shape[1]
    wt = ns.permute(w_hh, (1, 0))
    wrt = ns.permute(w_hr, (1, 0)) if w_hr is not None else None
    T = len(xs)
    outs = [None] * T
    saves = [None] * T
    np_steps = T > 0 and _np_steps(ns, mode, (xs[0], *state0, w_hh, b_hh), w_hr, H)
    step = (_fwd_step_lstm_np if mode == "LSTM" else _fwd_step_gru_np) if np_steps else _fwd_step
    # per step, the batch operation before it: None; ("slice", bs, the rows bs: that finished) going forward;
    # ("join", n, bs): rows n:bs of the initial state join, going backward through time
    events = [None] * T
    if not reverse:
        state = state0
        done = []
        for t in range(T):
            bs = sizes[t]
            if bs < state[0].shape[0]:
                done.append(tuple(s[bs:] for s in state))
                state = tuple(s[:bs] for s in state)
                events[t] = ("slice", bs, done[-1])
            state, saves[t] = step(ns, mode, xs[t], state, wt, b_hh, wrt, H)
            outs[t] = state[0]
        if done:
            state = tuple(ns.cat([state[k]] + [d[k] for d in reversed(done)], 0) for k in range(len(state)))
    else:
        n = sizes[-1] if sizes else state0[0].shape[0]
        state = tuple(s[:n] for s in state0)
        for t in range(T - 1, -1, -1):
            bs = sizes[t]
            if bs > n:
                state = tuple(ns.cat([s, s0[n:bs]], 0) for s, s0 in zip(state, state0))
                events[t] = ("join", n, bs)
                n = bs
            state, saves[t] = step(ns, mode, xs[t], state, wt, b_hh, wrt, H)
            outs[t] = state[0]
    return outs, state, saves, events, np_steps


def _add(a, b):
    return b if a is None else a if b is None else a + b


def _bwd_step(ns, mode, gh, gc, sv, wrt, w_hr_grads):
    """One step's backward from the gradients of its new state (``gc`` may be None). Returns the gradient of the
    gate pre-activations as the input projection sees it (``gx``) and as the hidden projection sees it (``ghg``),
    the old ``h``'s gradient that does not pass the hidden projection (GRU's ``h - n``) and the old ``c``'s."""
    if mode == "LSTM":
        h, c, fs, is_, gt, os_, tc, hp = sv
        if wrt is not None:   # h = hp @ w_hr.t(): matmul's rules
            w_hr_grads.append(_mm_grad_b(ns, gh, hp, wrt))
            gh = _mm_grad_a(ns, gh, hp, wrt)
        g_os = gh * tc
        gc = _add(gc, ns.tanh_backward(gh * os_, tc))
        g_o = ns.sigmoid_backward(g_os, os_)
        g_g = ns.tanh_backward(gc * is_, gt)
        g_i = ns.sigmoid_backward(gc * gt, is_)
        g_f = ns.sigmoid_backward(gc * c, fs)
        g = ns.cat([g_i, g_f, g_g, g_o], 1)
        return g, g, None, gc * fs
    if mode == "GRU":
        h, h_n, r, z, n, d = sv
        g_sub = gh * z
        g_np = ns.tanh_backward(gh + -g_sub, n)   # n's gradient: the final add's, then h - n's
        g_zp = ns.sigmoid_backward(gh * d, z)
        g_rp = ns.sigmoid_backward(g_np * h_n, r)
        return ns.cat([g_rp, g_zp, g_np], 1), ns.cat([g_rp, g_zp, g_np * r], 1), g_sub, None
    out = sv[1]
    g = ns.tanh_backward(gh, out) if mode == "RNN_TANH" else ns.threshold_backward(gh, out, 0)
    return g, g, None, None


def _hidden_bwd_h(ns, ghg, h_prev, wt, b_hh):
    """h's gradient through the hidden projection (addmm's rule, or mm's without a bias)."""
    if b_hh is not None:
        return _addmm_grad(ns, ghg, h_prev, wt, 0)
    return _mm_grad_a(ns, ghg, h_prev, wt)


def _hidden_bwd_w(ns, ghg, h_prev, wt, b_hh):
    """w_hh's gradient through the hidden projection, in w_hh's layout (t()'s rule after addmm's or mm's)."""
    g_wt = _addmm_grad(ns, ghg, h_prev, wt, 1) if b_hh is not None else _mm_grad_b(ns, ghg, h_prev, wt)
    return ns.permute(g_wt, (1, 0))


def _hidden_bwd(ns, ghg, h_prev, wt, b_hh, need_w):
    """The hidden projection's backward: h's gradient, w_hh's (None unless ``need_w``) and b_hh's (addmm's rule
    for its input: g, summed by the engine; None without a bias)."""
    gb = ns.sum_to(ghg, b_hh.shape) if b_hh is not None else None
    g_w = _hidden_bwd_w(ns, ghg, h_prev, wt, b_hh) if need_w else None
    return _hidden_bwd_h(ns, ghg, h_prev, wt, b_hh), g_w, gb


def _bwd_loop(ns, mode, saves, events, sizes, state0, w_hh, b_hh, w_hr, reverse, g_outs, g_finals, need_w,
              np_steps=False):
    """The reverse loop of ``_fwd_loop``: the gradients of the per-step gate inputs, the initial states, w_hh,
    b_hh and w_hr, each sum formed in the order ember's engine formed the composite's (a state's gradient is its
    output's plus what the next step sends; GRU's three terms: (output + h - n's) + hidden projection's)."""
    wt = ns.permute(w_hh, (1, 0))
    wrt = ns.permute(w_hr, (1, 0)) if w_hr is not None else None
    T = len(saves)
    k_states = len(state0)
    gxs = [None] * T
    gw = gb = gwr = None
    hidden_bwd = _np_hidden_bwd if np_steps else _hidden_bwd
    lstm_np = np_steps and mode == "LSTM"
    H = saves[0][1].shape[1] if lstm_np else None
    w_hr_grads: list = []
    order = list(range(T)) if reverse else list(range(T - 1, -1, -1))   # backward's order of the steps
    if reverse:
        pend = list(g_finals)   # (the state after step 0 has every row)
    else:
        last = sizes[T - 1]
        pend = [None if g is None else g[:last] for g in g_finals]
    with_out = False   # whether pend[0] already holds the output's gradient of the step that made the state
    joined: list = [[] for _ in range(k_states)]   # reverse: initial-state rows joined at later steps, last first
    gh0 = [None] * k_states
    for k, t in enumerate(order):
        sv = saves[t]
        gh = pend[0] if with_out else _add(pend[0], g_outs[t])
        if gh is None:
            gh = ns.zeros_like(sv[0])
        if lstm_np:   # saved by _fwd_step_lstm_np
            gx, g_c = _bwd_step_lstm_np(gh, pend[1], sv, H)
            ghg, g_direct = gx, None
        else:
            gx, ghg, g_direct, g_c = _bwd_step(ns, mode, gh, pend[1] if k_states == 2 else None, sv, wrt,
                                               w_hr_grads)
        gxs[t] = gx
        g_h, g_w, g_b = hidden_bwd(ns, ghg, sv[0], wt, b_hh, need_w)
        if np_steps:   # the sums in place: each term is a new array of this loop's own (the same values)
            gb = g_b if gb is None else np.add(gb, g_b, out=gb) if g_b is not None else gb
            gw = g_w if gw is None else np.add(gw, g_w, out=gw) if g_w is not None else gw
        else:
            if g_b is not None:
                gb = _add(gb, g_b)
            if g_w is not None:
                gw = _add(gw, g_w)
        ev = events[t]
        s = order[k + 1] if k + 1 < T else None   # the step that made this step's old state
        with_out = False
        if mode == "GRU" and ev is None and s is not None:
            pend = [_add(_add(g_outs[s], g_direct), g_h)]
            with_out = True
            continue
        contrib = [g_h if g_direct is None else g_direct + g_h] + ([g_c] if k_states == 2 else [])
        if ev is not None and not reverse:   # rows [bs:] had finished: their final states' gradients
            bs, done = ev[1], ev[2]
            pend = [ns.cat([contrib[j], ns.zeros_like(done[j]) if g_finals[j] is None else
                            g_finals[j][bs:bs + done[j].shape[0]]], 0) for j in range(k_states)]
        elif ev is not None:   # rows [n:bs] joined from the initial state here
            _, n, bs = ev
            for j in range(k_states):
                joined[j].append(contrib[j][n:bs])
            pend = [g[:n] for g in contrib]
        else:
            pend = contrib
        if s is None:   # the initial state (the reverse direction: its rows in blocks, in row order)
            gh0 = [ns.cat([pend[j]] + joined[j][::-1], 0) if joined[j] else pend[j] for j in range(k_states)]
    for g in w_hr_grads:
        gwr = _add(gwr, ns.permute(g, (1, 0)))
    return gxs, gh0, gw, gb, gwr


# ----- the namespace's kernels ---------------------------------------------------------------------------------

def _steps(x, sizes, layout):
    if layout == "cell":
        return [x], [x.shape[0]]
    if layout == "padded":
        return [x[t] for t in range(x.shape[0])], [x.shape[1]] * x.shape[0]
    steps, at = [], 0
    for bs in sizes:
        steps.append(x[at:at + bs])
        at += bs
    return steps, list(sizes)


def forward_loop(ns, mode: str, x, sizes, state0: tuple, w_hh, b_hh, w_hr, reverse: bool, layout: str):
    """One direction of one layer (or a cell step) on the arrays of namespace ``ns``: ``(y, finals, saved)``, the
    outputs (None for a cell), the final states and what ``backward_loop`` reads."""
    xs, run_sizes = _steps(x, sizes, layout)
    outs, finals, saves, events, np_steps = _fwd_loop(ns, mode, xs, run_sizes, tuple(state0), w_hh, b_hh, w_hr,
                                                      reverse)
    y = None if layout == "cell" else ns.stack(outs, 0) if layout == "padded" else ns.cat(outs, 0)
    return y, tuple(finals), (saves, events, run_sizes, np_steps)


def backward_loop(ns, mode: str, saved, state0: tuple, w_hh, b_hh, w_hr, reverse: bool, layout: str, g_y,
                  g_finals, need_w: bool = True):
    """The gradients ``(gx, g_state0, g_w_hh, g_b_hh, g_w_hr)`` from those of the outputs ``g_y`` and of the final
    states ``g_finals`` (None where none came; ``need_w`` False skips w_hh's)."""
    saves, events, run_sizes, np_steps = saved
    T = len(saves)
    if g_y is None:
        g_outs = [None] * T
    else:
        g_outs, _ = _steps(g_y, run_sizes, layout)
    gxs, gh0, gw, gb, gwr = _bwd_loop(ns, mode, saves, events, run_sizes, tuple(state0), w_hh, b_hh, w_hr,
                                      reverse, g_outs, list(g_finals), need_w, np_steps)
    gx = gxs[0] if layout == "cell" else ns.stack(gxs, 0) if layout == "padded" else ns.cat(gxs, 0)
    return gx, tuple(gh0), gw, gb, gwr
