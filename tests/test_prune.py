"""ember.nn.utils.prune against torch.nn.utils.prune: the same masks for the same seed, the same
``_orig``/``_mask`` layout (state_dict keys, named_parameters/named_buffers order, hooks), iterative pruning
through PruningContainer, global pruning, remove, and PyTorch's errors."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (not loaded by import torch)

import ember

LIBS = (torch, ember)


def _np(t):
    return t.detach().numpy()


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def _models(build, seed=0):
    """The same module under both libraries: torch's weights copied into ember's."""
    torch.manual_seed(seed)
    tm = build(torch)
    em = build(ember)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, em


def _net(m):
    return m.nn.Sequential(m.nn.Conv2d(2, 4, 3), m.nn.ReLU(), m.nn.Flatten(), m.nn.Linear(16, 5))


def _layout(m):
    """Everything about a module's pruned form that a user sees."""
    return (list(m.state_dict()), [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
            [type(h).__name__ for h in m._forward_pre_hooks.values()],
            [n for n in ("weight", "bias") if n in m._parameters], ember.nn.utils.prune.is_pruned(m)
            if isinstance(m, ember.nn.Module) else torch.nn.utils.prune.is_pruned(m))


def _check(tm, em, names=("weight", "bias")):
    assert _layout(tm) == _layout(em)
    for k, v in tm.state_dict().items():
        _same(v, em.state_dict()[k])
    for n in names:
        if hasattr(tm, n):
            _same(getattr(tm, n), getattr(em, n))


STEPS = [
    ("random_unstructured", dict(name="weight", amount=0.3)),
    ("random_unstructured", dict(name="bias", amount=2)),
    ("l1_unstructured", dict(name="weight", amount=0.5)),
    ("l1_unstructured", dict(name="weight", amount=0)),
    ("random_structured", dict(name="weight", amount=0.5, dim=0)),
    ("random_structured", dict(name="weight", amount=1, dim=-1)),
    ("ln_structured", dict(name="weight", amount=0.34, n=2, dim=0)),
    ("ln_structured", dict(name="weight", amount=1, n=1, dim=1)),
    ("ln_structured", dict(name="weight", amount=1, n=float("inf"), dim=-1)),
    ("ln_structured", dict(name="weight", amount=0, n="fro", dim=0)),
    ("identity", dict(name="weight")),
]


@pytest.mark.parametrize("step", range(len(STEPS)), ids=[f"{s[0]}-{i}" for i, s in enumerate(STEPS)])
def test_single_method(step):
    fn, kw = STEPS[step]
    tm, em = _models(lambda m: m.nn.Linear(6, 5))
    torch.manual_seed(3)
    ember.manual_seed(3)
    getattr(torch.nn.utils.prune, fn)(tm, **kw)
    getattr(ember.nn.utils.prune, fn)(em, **kw)
    _check(tm, em)


def test_iterative_pruning_container_and_forward():
    tm, em = _models(lambda m: m.nn.Conv2d(3, 6, 3))
    for lib, m in ((torch, tm), (ember, em)):
        lib.manual_seed(7)
        P = lib.nn.utils.prune
        P.random_unstructured(m, "weight", amount=0.2)
        P.l1_unstructured(m, "weight", amount=10)
        P.ln_structured(m, "weight", amount=2, n=2, dim=0)
        P.random_structured(m, "weight", amount=0.25, dim=1)
        P.l1_unstructured(m, "bias", amount=0.5)
    _check(tm, em)
    th, eh = (next(iter(m._forward_pre_hooks.values())) for m in (tm, em))
    assert type(eh).__name__ == "PruningContainer" and len(eh) == len(th) == 4
    assert [type(x).__name__ for x in eh] == [type(x).__name__ for x in th]
    assert eh._tensor_name == "weight" and eh[0]._tensor_name == "weight"
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    tout, eout = tm(torch.from_numpy(x)), em(ember.from_numpy(x))
    np.testing.assert_allclose(_np(eout), _np(tout), rtol=1e-5, atol=1e-6)
    tout.sum().backward()
    eout.sum().backward()
    np.testing.assert_allclose(_np(em.weight_orig.grad), _np(tm.weight_orig.grad), rtol=1e-5, atol=1e-5)
    _same(tm.weight_orig.grad == 0, em.weight_orig.grad == 0)   # pruned entries get no gradient


def test_hook_reapplies_mask_after_update():
    tm, em = _models(lambda m: m.nn.Linear(4, 3))
    for lib, m in ((torch, tm), (ember, em)):
        lib.nn.utils.prune.l1_unstructured(m, "weight", amount=0.5)
        with lib.no_grad():
            m.weight_orig.fill_(2.0)
        m(lib.ones(1, 4))
    _same(tm.weight, em.weight)


def test_ties_break_as_topk():
    for amount in (1, 3, 5, 0.5):
        w = np.array([[1.0, -1.0, 2.0, 1.0], [-2.0, 1.0, 0.0, 0.0], [1.0, 1.0, -1.0, 2.0]], np.float32)
        ms = []
        for lib in LIBS:
            m = lib.nn.Linear(4, 3)
            with lib.no_grad():
                m.weight.copy_(lib.from_numpy(w))
                m.bias.zero_()
            lib.nn.utils.prune.l1_unstructured(m, "weight", amount=amount)
            lib.nn.utils.prune.ln_structured(m, "weight", amount=1, n=1, dim=1)
            ms.append(m)
        _check(*ms)


def test_importance_scores_and_custom_mask():
    tm, em = _models(lambda m: m.nn.Linear(4, 3))
    s = np.arange(12, dtype=np.float32).reshape(3, 4)[::-1].copy()
    mask = (np.arange(12).reshape(3, 4) % 3 != 0).astype(np.float32)
    for lib, m in ((torch, tm), (ember, em)):
        P = lib.nn.utils.prune
        P.l1_unstructured(m, "weight", amount=4, importance_scores=lib.from_numpy(s))
        P.ln_structured(m, "weight", amount=1, n=2, dim=0, importance_scores=lib.from_numpy(s))
        P.custom_from_mask(m, "bias", mask=lib.from_numpy(mask[0, :3].copy()))
        P.custom_from_mask(m, "weight", mask=lib.from_numpy(mask))
    _check(tm, em)


def test_global_unstructured_and_remove():
    tm, em = _models(_net)
    for lib, m in ((torch, tm), (ember, em)):
        P = lib.nn.utils.prune
        lib.manual_seed(1)
        P.random_unstructured(m[3], "weight", amount=0.1)
        params = [(m[0], "weight"), (m[0], "bias"), (m[3], "weight")]
        P.global_unstructured(params, pruning_method=P.L1Unstructured, amount=0.4)
        P.global_unstructured(params, pruning_method=P.RandomUnstructured, amount=7)
        P.global_unstructured(params, pruning_method=P.L1Unstructured,
                              importance_scores={(m[0], "bias"): lib.zeros(4)}, amount=3)
    for i in (0, 3):
        _check(tm[i], em[i])
    assert list(tm.state_dict()) == list(em.state_dict())
    for lib, m in ((torch, tm), (ember, em)):
        lib.nn.utils.prune.remove(m[0], "weight")
        lib.nn.utils.prune.remove(m[3], "weight")
    for i in (0, 3):
        _check(tm[i], em[i])
    assert type(em[0].weight).__name__ == "Parameter" and em[0].weight.requires_grad
    assert ember.nn.utils.prune.is_pruned(em) == torch.nn.utils.prune.is_pruned(tm) is True
    for lib, m in ((torch, tm), (ember, em)):
        lib.nn.utils.prune.remove(m[0], "bias")
    assert ember.nn.utils.prune.is_pruned(em) == torch.nn.utils.prune.is_pruned(tm) is False


def test_method_objects():
    x = np.array([[3.0, -1.0, 0.5], [0.1, 2.0, -4.0]], np.float32)
    for cls, args in (("L1Unstructured", (0.5,)), ("RandomUnstructured", (2,)), ("LnStructured", (1, 2, 0)),
                      ("RandomStructured", (0.5, 1)), ("Identity", ())):
        outs = []
        for lib in LIBS:
            lib.manual_seed(5)
            method = getattr(lib.nn.utils.prune, cls)(*args)
            outs.append(method.prune(lib.from_numpy(x), importance_scores=lib.from_numpy(-x)))
        _same(*outs)
    for lib in LIBS:
        c = lib.nn.utils.prune.PruningContainer()
        assert len(c) == 0


def _errors(fn):
    """(type, message) of what fn(lib) raises under each library."""
    out = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        out.append((info.type, str(info.value).replace("ember", "torch")))
    return out


BAD = {
    "amount_type": lambda lib: lib.nn.utils.prune.l1_unstructured(lib.nn.Linear(2, 2), "weight", amount="1"),
    "amount_negative": lambda lib: lib.nn.utils.prune.L1Unstructured(-1),
    "amount_above_one": lambda lib: lib.nn.utils.prune.RandomUnstructured(1.5),
    "amount_too_many": lambda lib: lib.nn.utils.prune.l1_unstructured(lib.nn.Linear(2, 2), "bias", amount=3),
    "structured_1d": lambda lib: lib.nn.utils.prune.ln_structured(lib.nn.Linear(2, 2), "bias", 1, 2, 0),
    "structured_dim": lambda lib: lib.nn.utils.prune.random_structured(lib.nn.Linear(2, 2), "weight", 1, 2),
    # an already pruned parameter: the container's slice fails before the method's own dim check
    "structured_dim_pruned": lambda lib: lib.nn.utils.prune.ln_structured(
        lib.nn.utils.prune.identity(lib.nn.Linear(2, 2), "weight"), "weight", 1, 2, 5),
    "scores_shape": lambda lib: lib.nn.utils.prune.l1_unstructured(lib.nn.Linear(2, 2), "weight", 1,
                                                                   importance_scores=lib.ones(3)),
    "remove_unpruned": lambda lib: lib.nn.utils.prune.remove(lib.nn.Linear(2, 2), "weight"),
    "global_not_iterable": lambda lib: lib.nn.utils.prune.global_unstructured(
        3, lib.nn.utils.prune.L1Unstructured, amount=1),
    "global_scores_type": lambda lib: lib.nn.utils.prune.global_unstructured(
        [], lib.nn.utils.prune.L1Unstructured, importance_scores=[1], amount=1),
    "global_structured": lambda lib: lib.nn.utils.prune.global_unstructured(
        [], lib.nn.utils.prune.LnStructured, amount=1, n=2),
    "container_type": lambda lib: lib.nn.utils.prune.PruningContainer(lib.nn.utils.prune.Identity()).
    add_pruning_method(3),
    "custom_mask_shape": lambda lib: lib.nn.utils.prune.custom_from_mask(lib.nn.Linear(2, 2), "weight",
                                                                        lib.ones(3)),
}


def _container_name_mismatch(lib):
    P = lib.nn.utils.prune
    a, b = P.Identity(), P.Identity()
    a._tensor_name, b._tensor_name = "weight", "bias"
    c = P.PruningContainer(a)
    c.add_pruning_method(b)


@pytest.mark.parametrize("case", sorted(BAD))
def test_errors_as_torch(case):
    (tt, tmsg), (et, emsg) = _errors(BAD[case])
    assert et is tt
    if case not in ("custom_mask_shape",):   # the message names the module, printed the same
        assert emsg == tmsg


def test_container_name_mismatch():
    (tt, tmsg), (et, emsg) = _errors(_container_name_mismatch)
    assert et is tt is ValueError
    assert emsg.split(" to PruningContainer")[0] == tmsg.split(" to PruningContainer")[0]
    assert emsg.endswith("Found 'bias'") and tmsg.endswith("Found 'bias'")


def test_failed_apply_restores_parameter():
    tm, em = ms = [lib.nn.Linear(2, 2) for lib in LIBS]
    for lib, m in zip(LIBS, ms):
        with pytest.raises(IndexError):
            lib.nn.utils.prune.random_structured(m, "weight", 1, 5)
        assert not lib.nn.utils.prune.is_pruned(m)
    assert [n for n, _ in tm.named_parameters()] == [n for n, _ in em.named_parameters()]
    assert list(tm.state_dict()) == list(em.state_dict())


def test_pruned_module_as_an_object():
    """What users do with a pruned module: pickle it, load its state dict into another pruned one; deepcopy
    refuses (the pruned tensor is not a leaf) with PyTorch's message; a buffer or a missing name cannot be
    pruned."""
    import copy
    import pickle
    tm, em = _models(lambda m: m.nn.Linear(3, 2))
    outs = []
    for lib, m in ((torch, tm), (ember, em)):
        lib.manual_seed(2)
        lib.nn.utils.prune.random_unstructured(m, "weight", 0.5)
        back = pickle.loads(pickle.dumps(m))
        assert list(back.state_dict()) == ["bias", "weight_orig", "weight_mask"]
        assert lib.nn.utils.prune.is_pruned(back)
        other = lib.nn.Linear(3, 2)
        lib.nn.utils.prune.identity(other, "weight")
        other.load_state_dict(m.state_dict())
        outs.append(other(lib.ones(1, 3)))   # the hook applies the loaded mask
        with pytest.raises(RuntimeError) as info:
            copy.deepcopy(m)
        outs.append(str(info.value))
    _same(outs[0], outs[2])
    assert outs[1] == outs[3]
    errors = _errors(lambda lib: lib.nn.utils.prune.l1_unstructured(lib.nn.BatchNorm1d(3), "running_mean", 1))
    assert errors[0] == errors[1]
    errors = _errors(lambda lib: lib.nn.utils.prune.l1_unstructured(lib.nn.Linear(2, 2), "nope", 1))
    assert errors[0] == errors[1]
