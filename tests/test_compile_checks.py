"""ember.compile and the checks on values that ops make in their wrappers (index bounds, target ranges, ...): a
replay repeats each check (a guard), so a call with invalid values raises eager's exception, type and message, where
a replay that skipped the check would compute. Each case: compile, call with valid values (the trace, a replay),
then with invalid values (eager's error), then valid values again."""
from __future__ import annotations

import pytest

import ember as torch
import ember.nn.functional as F
from ember.compiler import _EAGER


def _t(v, **kw):
    return torch.tensor(v, **kw)


def _fl(v):
    return torch.tensor(v, dtype=torch.float64)


# name: (function, valid arguments, invalid arguments, whether the valid call replays)
EMB = torch.nn.Embedding(5, 3)
W = _fl([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
CASES = {
    "binary_cross_entropy_input": (F.binary_cross_entropy, (_fl([0.2, 0.7]), _fl([0.0, 1.0])),
                                   (_fl([1.2, 0.7]), _fl([0.0, 1.0])), True),
    "binary_cross_entropy_target": (F.binary_cross_entropy, (_fl([0.2, 0.7]), _fl([0.0, 1.0])),
                                    (_fl([0.2, 0.7]), _fl([-0.5, 1.0])), True),
    "binary_cross_entropy_nan": (F.binary_cross_entropy, (_fl([0.2, 0.7]), _fl([0.0, 1.0])),
                                 (_fl([float("nan"), 0.7]), _fl([0.0, 1.0])), True),
    "nll_loss": (F.nll_loss, (W, _t([2, 0])), (W, _t([3, 0])), True),
    "nll_loss_ignore_index": (lambda x, t: F.nll_loss(x, t, ignore_index=7), (W, _t([7, 0])), (W, _t([-1, 0])),
                              True),
    "cross_entropy": (F.cross_entropy, (W, _t([1, 2])), (W, _t([1, -2])), True),
    "multi_margin_loss": (F.multi_margin_loss, (W, _t([1, 2])), (W, _t([1, 3])), True),
    "multilabel_margin_loss": (F.multilabel_margin_loss, (W, _t([[1, -1, 0], [2, 0, -1]])),
                               (W, _t([[1, 3, 0], [2, 0, -1]])), True),
    "quantile": (torch.quantile, (W, _fl([0.25, 0.5])), (W, _fl([0.25, 1.5])), False),   # (falls back for now)
    "repeat_interleave": (lambda x, r: torch.repeat_interleave(x, r, dim=0), (W, _t([1, 2])), (W, _t([1, -2])),
                          True),
    "repeat_interleave_output_size": (lambda x, r: torch.repeat_interleave(x, r, dim=0, output_size=3),
                                      (W, _t([1, 2])), (W, _t([2, 2])), True),
    "embedding": (lambda i: EMB(i) * 2, (_t([0, 4, 2]),), (_t([0, 5, 2]),), True),
    "gather": (lambda x, i: torch.gather(x, 1, i), (W, _t([[0, 2], [1, 1]])), (W, _t([[0, 3], [1, 1]])), True),
    "scatter_add": (lambda x, i: x.scatter_add(1, i, x[:, :2]), (W, _t([[0, 2], [1, 1]])),
                    (W, _t([[0, 2], [-1, 1]])), True),
    "index_select": (lambda x, i: torch.index_select(x, 1, i), (W, _t([2, 0])), (W, _t([2, 3])), True),
    "index_add": (lambda x, i: x.index_add(0, i, x), (W, _t([1, 0])), (W, _t([1, 2])), True),
    "take": (torch.take, (W, _t([5, 0])), (W, _t([6, 0])), True),
    "one_hot": (F.one_hot, (_t([0, 2]),), (_t([0, -2]),), False),
    "one_hot_num_classes": (lambda t: F.one_hot(t, 3), (_t([0, 2]),), (_t([0, 3]),), False),
    "bincount": (torch.bincount, (_t([0, 2]),), (_t([0, -2]),), False),
    "multinomial": (lambda p: torch.multinomial(p, 1), (_fl([0.2, 0.8]),), (_fl([-0.2, 0.8]),), False),
    "inv_ex_check_errors": (lambda a: torch.linalg.inv_ex(a, check_errors=True)[0],
                            (_fl([[2.0, 1.0], [1.0, 3.0]]),), (_fl([[1.0, 2.0], [2.0, 4.0]]),), True),
}


def _same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()


@pytest.mark.parametrize("name", list(CASES))
def test_value_check_repeated_by_replay(name):
    fn, good, bad, replays = CASES[name]
    cf = torch.compile(fn)
    for _ in range(2):
        torch.manual_seed(0)
        want = fn(*good)
        torch.manual_seed(0)
        _same(cf(*good), want)
    assert any(r is not _EAGER for r in cf._cache.values()) == replays, cf._reasons
    with pytest.raises(Exception) as eager:
        fn(*bad)
    with pytest.raises(type(eager.value)) as compiled:
        cf(*bad)
    assert str(compiled.value) == str(eager.value)
    torch.manual_seed(0)
    want = fn(*good)
    torch.manual_seed(0)
    _same(cf(*good), want)


def test_solve_ex_info_branch_replays_as_eager():
    """solve_ex without check_errors takes another path for a singular matrix (its info is nonzero): a replay whose
    matrix is singular computes what eager computes."""
    fn = torch.linalg.solve_ex
    cf = torch.compile(fn)
    b = _fl([[1.0], [2.0]])
    for a in ([[2.0, 1.0], [1.0, 3.0]], [[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]):
        _same(cf(_fl(a), b), fn(_fl(a), b))


def test_a_check_on_an_unknown_array_falls_back():
    """A check made with NumPy's own operators on an array the recording does not know cannot be repeated: the
    trace falls back to eager, with the reason."""
    from ember._util import holds

    def fn(x):
        d = x._data * 1   # (an array computed outside the primitives)
        if not holds(lambda a: (a > 0).all(), d):
            raise ValueError("not positive")
        return x + 1
    cf = torch.compile(fn)
    cf(_fl([1.0]))
    assert not [r for r in cf._cache.values() if r is not _EAGER]
    assert "computed outside the recording" in cf._reasons[0][1]
    with pytest.raises(ValueError, match="not positive"):
        cf(_fl([-1.0]))


def test_check_after_a_random_draw_runs_first():
    """A check after a random draw (dropout before a loss) runs at the start of the replay: a replay whose check
    fails has drawn nothing yet, so the eager call that raises leaves the generator where eager leaves it."""
    def fn(x, t):
        return F.cross_entropy(F.dropout(x, 0.5), t)
    cf = torch.compile(fn)
    x = W.clone().requires_grad_()
    for t in ([1, 2], [0, 1]):
        torch.manual_seed(3)
        want = fn(x, _t(t))
        torch.manual_seed(3)
        _same(cf(x, _t(t)), want)
    assert [r for r in cf._cache.values() if r is not _EAGER], cf._reasons
    for f in (fn, cf):
        torch.manual_seed(3)
        with pytest.raises(IndexError, match="Target 3 is out of bounds."):
            f(x, _t([1, 3]))
        after = torch.rand(3)
        if f is fn:
            eager_after = after
    _same(after, eager_after)
