"""Index tensors (and other non-differentiable tensors) a backward node reads are saved with their versions.

PyTorch saves the index of gather, x[idx], scatter... (and the indices sort/max return, the target of nll_loss, a
mask, a weight) as SavedVariables: changed in place before backward, they make backward raise "one of the
variables needed for gradient computation has been modified by an inplace operation". ember keeps such tensors
as raw arrays in the node's params; without the version check it would compute a wrong gradient silently.
Each case runs with torch and ember on the same inputs: the same exception type and message (ember's adds the
line naming the node that saved it), or the same gradient where torch computes one (take_along_dim copies its
index; saved-tensor hooks make the check the hooks' business).
"""
import re

import pytest

import ember
from parity import same

torch = pytest.importorskip("torch")

_MASK = [[True, False, True], [False, False, True]]


def _cases():
    """name -> fn(lib, x) -> (y, t): ``t`` is the tensor the node of ``y`` (or of the graph below it) saved."""
    def T(lib, v, **kw):
        return lib.tensor(v, **kw)
    F = lambda lib: lib.nn.functional   # noqa: E731
    c = {
        "getitem_long": lambda lib, x: (lambda i: (x[i], i))(T(lib, [1, 0])),
        "getitem_bool": lambda lib, x: (lambda i: (x[i], i))(T(lib, [True, False])),
        "getitem_tuple": lambda lib, x: (lambda i: (x[:, i], i))(T(lib, [2, 1])),
        "getitem_basic_then_adv": lambda lib, x: (lambda i: (x[1:, i], i))(T(lib, [2, 1])),
        "getitem_mask_2d": lambda lib, x: (lambda i: (x[i], i))(T(lib, _MASK)),
        "getitem_view_of_index": lambda lib, x: (lambda b: (x[b[0]], b))(T(lib, [[1, 0], [0, 0]])),
        "gather": lambda lib, x: (lambda i: (lib.gather(x, 1, i), i))(T(lib, [[2], [1]])),
        "index_select": lambda lib, x: (lambda i: (lib.index_select(x, 1, i), i))(T(lib, [2, 1])),
        "take": lambda lib, x: (lambda i: (lib.take(x, i), i))(T(lib, [5, 1])),
        "take_along_dim": lambda lib, x: (lambda i: (lib.take_along_dim(x, i, 1), i))(T(lib, [[2], [1]])),
        "take_along_dim_bcast": lambda lib, x: (lambda i: (lib.take_along_dim(x, i, 1), i))(T(lib, [[2]])),
        "take_along_dim_flat": lambda lib, x: (lambda i: (lib.take_along_dim(x, i), i))(T(lib, [5, 1])),
        "embedding": lambda lib, x: (lambda i: (F(lib).embedding(i, x), i))(T(lib, [1, 1])),
        "embedding_freq": lambda lib, x: (lambda i: (F(lib).embedding(i, x, scale_grad_by_freq=True), i))(
            T(lib, [1, 1])),
        "embedding_bag": lambda lib, x: (lambda i: (F(lib).embedding_bag(i, x, T(lib, [0, 1])), i))(T(lib, [1, 0, 1])),
        "embedding_bag_offsets": lambda lib, x: (lambda o: (F(lib).embedding_bag(T(lib, [1, 0, 1]), x, o), o))(
            T(lib, [0, 1])),
        "embedding_bag_2d": lambda lib, x: (lambda i: (F(lib).embedding_bag(i, x, mode="max"), i))(
            T(lib, [[1, 0], [0, 0]])),
        "masked_select": lambda lib, x: (lambda i: (lib.masked_select(x, i), i))(T(lib, _MASK)),
        "masked_select_bcast": lambda lib, x: (lambda i: (lib.masked_select(x, i), i))(T(lib, [True, False, True])),
        "masked_fill": lambda lib, x: (lambda i: (x.masked_fill(i, 0.), i))(T(lib, _MASK)),
        "masked_fill_tensor": lambda lib, x: (lambda i: (x.masked_fill(i, x[0, 0] * 2), i))(T(lib, _MASK)),
        "masked_scatter": lambda lib, x: (lambda i: (x.masked_scatter(i, x * 3), i))(T(lib, _MASK)),
        "where": lambda lib, x: (lambda i: (lib.where(i, x, 0.), i))(T(lib, _MASK)),
        "where_two": lambda lib, x: (lambda i: (lib.where(i, x, x * 2), i))(T(lib, _MASK)),
        "index_put": lambda lib, x: (lambda i: (x.clone().index_put((i,), T(lib, 1.)), i))(T(lib, [1])),
        "index_put_acc": lambda lib, x: (lambda i: (x.index_put((i,), x[0] * 2, accumulate=True), i))(T(lib, [1])),
        "index_put_two": lambda lib, x: (lambda a: (x.index_put((a, T(lib, [2, 1])), T(lib, 2.)), a))(T(lib, [1, 0])),
        "index_put_": lambda lib, x: (lambda i: (x.clone().index_put_((i,), x[0] * 2), i))(T(lib, [1])),
        "setitem": lambda lib, x: (lambda i: ((lambda c: (c.__setitem__(i, x[0] * 2), c)[1])(x.clone()), i))(
            T(lib, [1])),
        "setitem_mask": lambda lib, x: (lambda i: ((lambda c: (c.__setitem__(i, 2.), c)[1])(x * 1), i))(T(lib, _MASK)),
        "scatter": lambda lib, x: (lambda i: (lib.zeros(2, 3).scatter(1, i, x[:, :1]), i))(T(lib, [[2], [1]])),
        "scatter_value": lambda lib, x: (lambda i: (x.scatter(1, i, 5.), i))(T(lib, [[2], [1]])),
        "scatter_": lambda lib, x: (lambda i: (x.clone().scatter_(1, i, x[:, :1] * 2), i))(T(lib, [[2], [1]])),
        "scatter_add": lambda lib, x: (lambda i: (lib.zeros(2, 3).scatter_add(1, i, x[:, :1]), i))(T(lib, [[2], [1]])),
        "scatter_reduce": lambda lib, x: (lambda i: (x.scatter_reduce(1, i, x[:, :1] * 3, "prod"), i))(
            T(lib, [[2], [1]])),
        "index_add": lambda lib, x: (lambda i: (lib.zeros(2, 3).index_add(1, i, x[:, :2]), i))(T(lib, [2, 1])),
        "index_add_": lambda lib, x: (lambda i: (x.clone().index_add_(1, i, x[:, :2] * 2), i))(T(lib, [2, 1])),
        "index_fill": lambda lib, x: (lambda i: (x.index_fill(1, i, 0.), i))(T(lib, [2, 1])),
        "index_fill_tensor": lambda lib, x: (lambda i: (x.index_fill(1, i, x[0, 0] * 1), i))(T(lib, [2, 1])),
        "index_copy": lambda lib, x: (lambda i: (x.index_copy(1, i, x[:, :2] * 2), i))(T(lib, [2, 1])),
        "index_reduce": lambda lib, x: (lambda i: (x.index_reduce(1, i, x[:, :2] * 2, "prod"), i))(T(lib, [2, 1])),
        "put": lambda lib, x: (lambda i: (x.put(i, x[0, :2] * 2), i))(T(lib, [5, 1])),
        "put_acc": lambda lib, x: (lambda i: (x.put(i, x[0, :2] * 2, accumulate=True), i))(T(lib, [5, 1])),
        "put_": lambda lib, x: (lambda i: (x.clone().put_(i, x[0, :2] * 2), i))(T(lib, [5, 1])),
        # in place through a view: the node inside CopySlices checks its index
        "index_add_view": lambda lib, x: (lambda i: ((lambda b: (b[0:2].index_add_(1, i, x[:, :2] * 2), b)[1])(x * 1),
                                                     i))(T(lib, [2, 1])),
        "setitem_view": lambda lib, x: (lambda i: ((lambda b: (b[:, 1].__setitem__(i, x[0, :2] * 3), b)[1])(x * 1),
                                                   i))(T(lib, [1, 0])),
        # secondary outputs that the node saves
        "sort": lambda lib, x: tuple(lib.sort(x, 1)),
        "sort_stable": lambda lib, x: tuple(lib.sort(x, dim=1, stable=True)),
        "topk": lambda lib, x: tuple(lib.topk(x, 2, 1)),
        "kthvalue": lambda lib, x: tuple(lib.kthvalue(x, 2, 1)),
        "median": lambda lib, x: tuple(lib.median(x, 1)),
        "nanmedian": lambda lib, x: tuple(lib.nanmedian(x, 1)),
        "mode": lambda lib, x: tuple(lib.mode(x, 1)),
        "max_dim": lambda lib, x: tuple(lib.max(x, 1)),
        "min_dim_keepdim": lambda lib, x: tuple(lib.min(x, 1, keepdim=True)),
        "cummax": lambda lib, x: tuple(lib.cummax(x, 1)),
        "cummin": lambda lib, x: tuple(lib.cummin(x, 1)),
        "max_pool1d": lambda lib, x: F(lib).max_pool1d(x.reshape(1, 2, 3), 2, return_indices=True),
        "max_pool2d": lambda lib, x: F(lib).max_pool2d(x.reshape(1, 1, 2, 3), 2, 1, return_indices=True),
        "adaptive_max_pool1d": lambda lib, x: F(lib).adaptive_max_pool1d(x.reshape(1, 2, 3), 2, return_indices=True),
        "max_unpool1d": lambda lib, x: (lambda i: (F(lib).max_unpool1d(x.reshape(1, 2, 3)[..., :1], i, 2), i))(
            T(lib, [[[1], [0]]])),
        "native_dropout": lambda lib, x: lib.native_dropout(x, 0.0, True),
        "lu_factor": lambda lib, x: tuple(lib.linalg.lu_factor(x[:, :2] + T(lib, [[3., 0], [0, 3]])))[:2],
        "linalg_lu_P": lambda lib, x: (lambda r: (r[1] + r[2], r[0]))(lib.linalg.lu(x[:, :2] + T(lib, [[3., 0],
                                                                                                      [0, 3]]))),
        # targets, weights and lengths of losses
        "nll_loss": lambda lib, x: (lambda t: (F(lib).nll_loss(x, t), t))(T(lib, [2, 1])),
        "nll_loss_weight": lambda lib, x: (lambda w: (F(lib).nll_loss(x, T(lib, [2, 1]), weight=w), w))(
            T(lib, [1., 2., 3.])),
        "nll_loss_0d_target": lambda lib, x: (lambda t: (F(lib).nll_loss(x[0], t), t))(T(lib, 1)),
        "nll_loss_3d": lambda lib, x: (lambda t: (F(lib).nll_loss(x.reshape(1, 2, 3), t), t))(T(lib, [[1, 0, 1]])),
        "nll_loss2d": lambda lib, x: (lambda t: (F(lib).nll_loss(x.reshape(1, 2, 3, 1), t), t))(
            T(lib, [[[1], [0], [1]]])),
        "cross_entropy": lambda lib, x: (lambda t: (F(lib).cross_entropy(x, t), t))(T(lib, [2, 1])),
        "cross_entropy_smoothing": lambda lib, x: (lambda t: (F(lib).cross_entropy(x, t, label_smoothing=0.1), t))(
            T(lib, [2, 1])),
        "multi_margin_loss": lambda lib, x: (lambda t: (F(lib).multi_margin_loss(x, t), t))(T(lib, [2, 1])),
        "multi_margin_loss_weight": lambda lib, x: (lambda w: (F(lib).multi_margin_loss(x, T(lib, [2, 1]), weight=w),
                                                               w))(T(lib, [1., 2., 3.])),
        "multilabel_margin_loss": lambda lib, x: (lambda t: (F(lib).multilabel_margin_loss(x, t), t))(
            T(lib, [[2, -1, 0], [1, 0, -1]])),
        "soft_margin_loss": lambda lib, x: (lambda t: (F(lib).soft_margin_loss(x, t), t))(
            T(lib, [[1., -1, 1], [-1, 1, 1]])),
        "binary_cross_entropy_weight": lambda lib, x: (lambda w: (F(lib).binary_cross_entropy(
            x.sigmoid(), T(lib, [[1., 0, 1], [0, 1, 0]]), weight=w), w))(T(lib, [1., 2., 3.])),
        "bce_with_logits_pos_weight": lambda lib, x: (lambda w: (F(lib).binary_cross_entropy_with_logits(
            x, T(lib, [[1., 0, 1], [0, 1, 0]]), pos_weight=w), w))(T(lib, [1., 2., 3.])),
        "ctc_loss": lambda lib, x: (lambda t: (F(lib).ctc_loss(x.reshape(2, 1, 3).log_softmax(2), t, T(lib, [2]),
                                                               T(lib, [1])), t))(T(lib, [[1]])),
        "ctc_loss_input_lengths": lambda lib, x: (lambda n: (F(lib).ctc_loss(x.reshape(2, 1, 3).log_softmax(2),
                                                                             T(lib, [[1]]), n, T(lib, [1])), n))(
            T(lib, [2])),
        "segment_reduce": lambda lib, x: (lambda n: (lib.segment_reduce(x.reshape(-1), "sum", lengths=n), n))(
            T(lib, [4, 2])),
    }
    return c


CASES = _cases()


def _leaf(lib):
    return lib.arange(6.).reshape(2, 3).div(7).requires_grad_()


def _change(t) -> None:
    """An in-place change of the saved tensor (a value change where possible: the version moves either way)."""
    if t.dtype.is_floating_point:
        t.mul_(2)
    elif str(t.dtype).endswith("bool"):
        t.logical_not_()
    else:
        t.copy_(t * 0)


def _check(name, how):
    """Run case ``name`` in both libraries; ``how``: 'backward', 'create_graph' or 'hooks'."""
    def fn(lib):
        x = _leaf(lib)
        if how == "hooks":
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                y, t = CASES[name](lib, x)
        else:
            y, t = CASES[name](lib, x)
        _change(t)
        loss = y.abs().sum() if y.dtype.is_floating_point else y.sum()
        if how == "create_graph":
            (g,) = lib.autograd.grad(loss, x, create_graph=True)
            return g
        loss.backward()
        return x.grad
    return _same_message(fn)


def _same_message(fn):
    """``same(fn)``; when both raise, ember's message is torch's, then the line naming the node that saved it."""
    rt = same(fn)
    if rt[0] == "err" and "modified by an inplace operation" in rt[2]:
        try:
            fn(ember)
        except Exception as e:   # noqa: BLE001
            got = str(e)
        head, _, tail = got.partition("\nIt was saved for backward by ")
        assert head == rt[2]
        assert re.fullmatch(r"\w+\.", tail), got
    return rt


_RAISES = set(CASES) - {"take_along_dim", "take_along_dim_bcast", "ctc_loss_input_lengths"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_changed_in_place_before_backward(name):
    rt = _check(name, "backward")
    assert (rt[0] == "err") == (name in _RAISES), rt   # torch's behaviour, as this file expects it


@pytest.mark.parametrize("name", sorted(CASES))
def test_changed_in_place_before_backward_create_graph(name):
    _check(name, "create_graph")


@pytest.mark.parametrize("name", ["getitem_long", "gather", "index_select", "take", "scatter", "index_add",
                                  "masked_fill", "where", "max_dim", "nll_loss", "embedding"])
def test_saved_tensor_hooks_pack_the_index_and_skip_the_check(name):
    # PyTorch: a tensor saved through hooks is the hooks' business (no version check); identity hooks give the
    # rule the changed index. ember's rules read the index from the params, which view the index's memory.
    # (Not sort: its indices zeroed are no permutation, and PyTorch's backward then writes where ember's adds.)
    _check(name, "hooks")


def test_unchanged_index_gives_the_same_gradient():
    for name in sorted(CASES):
        def fn(lib):
            x = _leaf(lib)
            y, _ = CASES[name](lib, x)
            (y.abs().sum() if y.dtype.is_floating_point else y.sum()).backward()
            return x.grad
        same(fn)


def test_backward_frees_the_saved_index():
    # the node now saves a tensor: a second backward without retain_graph is PyTorch's error
    def fn(lib):
        x = _leaf(lib)
        y = x[lib.tensor([1, 0])]
        y.sum().backward()
        y.sum().backward()
    same(fn, exact_msg=True)


def test_retain_graph_keeps_the_check():
    def fn(lib):
        x = _leaf(lib)
        i = lib.tensor([[2], [1]])
        y = lib.gather(x, 1, i)
        y.sum().backward(retain_graph=True)
        i.add_(0)
        y.sum().backward()
    same(fn, msg="is at version 1; expected version 0 instead")


def test_index_made_in_inference_mode_cannot_be_saved():
    def fn(lib):
        x = _leaf(lib)
        with lib.inference_mode():
            i = lib.tensor([1, 0])
        return x[i]
    same(fn, exact_msg=True)


def test_no_grad_records_nothing_so_changes_are_fine():
    def fn(lib):
        x = _leaf(lib)
        i = lib.tensor([[2], [1]])
        with lib.no_grad():
            y = lib.gather(x, 1, i)
        i.add_(1)
        return y
    same(fn)


def test_message_names_bool_bfloat16_and_complex_types_as_pytorch():
    # Tensor::toString(): torch.LongTensor has a legacy name; bool, bfloat16 and complex do not (CPUBoolType)
    for dt in ("bfloat16", "complex64"):
        def fn(lib, dt=dt):
            a = lib.ones(2, dtype=getattr(lib, dt), requires_grad=True)
            y = a.exp()
            with lib.no_grad():
                y.add_(1)
            y.sum().abs().backward() if dt != "complex64" else y.abs().sum().backward()
        assert _same_message(fn)[0] == "err"


@pytest.mark.parametrize("name", ["index_select", "getitem", "masked_fill", "where", "sort", "embedding"])
def test_saved_tensor_hooks_pack_and_unpack_the_index(name):
    # the index is a saved tensor like any other: pack when recorded, unpack at backward, in PyTorch's order
    ops = {"index_select": lambda lib, x: lib.index_select(x, 1, lib.tensor([2, 1])),
           "getitem": lambda lib, x: x[lib.tensor([1, 0])],
           "masked_fill": lambda lib, x: x.masked_fill(lib.tensor([True, False, True]), 0.),
           "where": lambda lib, x: lib.where(lib.tensor([True, False, True]), x, 0.),
           "sort": lambda lib, x: lib.sort(x, 1)[0],
           "embedding": lambda lib, x: lib.nn.functional.embedding(lib.tensor([1, 1]), x)}

    def fn(lib):
        log = []

        def pack(t):
            log.append(("pack", tuple(t.shape), str(t.dtype)))
            return t

        def unpack(t):
            log.append(("unpack", tuple(t.shape)))
            return t
        x = _leaf(lib)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = ops[name](lib, x)
        y.sum().backward()
        return [tuple(e[:2]) + ((e[2].replace("torch.", "").replace("ember.", ""),) if len(e) > 2 else ())
                for e in log], x.grad
    same(fn)
