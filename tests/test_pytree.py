"""ember.utils._pytree against torch.utils._pytree on the same trees: leaves, specs (repr, counts, equality, hash),
round trips, tree_map over several trees, key paths, broadcasting (vmap's in_dims), custom nodes, errors."""
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch
import torch.utils._pytree as tp

import ember
import ember.utils._pytree as ep

Point = namedtuple("Point", "x y")
Other = namedtuple("Other", "x y")

TREES = {
    "leaf": 1,
    "none": None,
    "str": "abc",
    "empty_list": [],
    "empty_tuple": (),
    "empty_dict": {},
    "flat_list": [1, 2.5, "s"],
    "nested": [1, (2, 3), {"x": [4], "y": (5, [6, 7])}, None],
    "dict_order": {"b": 1, "a": 2, "c": {"z": 3, "y": 4}},
    "int_keys": {3: "a", 1: "b"},
    "ordered": OrderedDict(b=1, a=[2, 3]),
    "defaultdict": defaultdict(list, a=1, b=(2,)),
    "deque": deque([1, [2, 3]], maxlen=4),
    "deque_unbounded": deque([1, 2]),
    "namedtuple": Point(1, [2, Point(3, 4)]),
    "nested_empty": [[], (), {}, [[]]],
    "mixed": {"params": [Point(1, 2), OrderedDict(w=3)], "aux": (None, deque([4]))},
}


def same_leaves(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x is y or x == y


def same_spec(es, ts):
    """An ember spec and a torch spec describe the same structure."""
    assert repr(es) == repr(ts)
    assert (es.num_leaves, es.num_nodes, es.num_children) == (ts.num_leaves, ts.num_nodes, ts.num_children)
    assert es.is_leaf() == ts.is_leaf()
    assert es.type is ts.type or (es.type is None and ts.type is None)
    assert es.context == ts.context
    for ec, tc in zip(es.children(), ts.children()):
        same_spec(ec, tc)


def same_structure(a, b):
    """Round-tripped trees: equal, with every node of the same type."""
    assert type(a) is type(b)
    assert a == b
    if isinstance(a, (list, tuple, deque)):
        for x, y in zip(a, b):
            same_structure(x, y)
        if isinstance(a, deque):
            assert a.maxlen == b.maxlen
    elif isinstance(a, dict):
        assert list(a) == list(b)
        if isinstance(a, defaultdict):
            assert a.default_factory is b.default_factory
        for k in a:
            same_structure(a[k], b[k])


@pytest.mark.parametrize("name", TREES)
def test_flatten_unflatten(name):
    tree = TREES[name]
    el, es = ep.tree_flatten(tree)
    tl, ts = tp.tree_flatten(tree)
    same_leaves(el, tl)
    same_spec(es, ts)
    same_leaves(ep.tree_leaves(tree), tl)
    same_leaves(list(ep.tree_iter(tree)), tl)
    assert ep.tree_structure(tree) == es
    same_structure(ep.tree_unflatten(el, es), tree)
    same_structure(ep.tree_unflatten(el, es), tp.tree_unflatten(tl, ts))
    same_structure(es.unflatten(iter(el)), tree)            # any iterable of leaves
    assert ep.treespec_pprint(es) == tp.treespec_pprint(ts)
    assert hash(es) == hash(ep.tree_structure(ep.tree_unflatten(list(range(len(el))), es)))


@pytest.mark.parametrize("name", TREES)
def test_key_paths(name):
    tree = TREES[name]
    ek, es = ep.tree_flatten_with_path(tree)
    tk, ts = tp.tree_flatten_with_path(tree)
    same_spec(es, ts)
    assert [ep.keystr(p) for p, _ in ek] == [tp.keystr(p) for p, _ in tk]
    assert [[str(k) for k in p] for p, _ in ek] == [[str(k) for k in p] for p, _ in tk]
    same_leaves([v for _, v in ek], [v for _, v in tk])
    for p, v in ek:
        assert ep.key_get(tree, p) is v
    assert (ep.tree_map_with_path(lambda p, v: ep.keystr(p), tree)
            == tp.tree_map_with_path(lambda p, v: tp.keystr(p), tree))


def test_spec_equality_matches_torch():
    pairs = [([1, 2], [3, 4]), ([1, 2], (1, 2)), ({"a": 1, "b": 2}, {"b": 1, "a": 2}), ({"a": 1}, OrderedDict(a=1)),
             (Point(1, 2), (1, 2)), (Point(1, 2), Other(1, 2)), (deque([1], maxlen=2), deque([1], maxlen=3)),
             (defaultdict(list, a=1), defaultdict(set, a=1)), ([1, [2]], [1, 2]), (None, 1), ([], ()), ({}, [])]
    for a, b in pairs:
        assert (ep.tree_structure(a) == ep.tree_structure(b)) == (tp.tree_structure(a) == tp.tree_structure(b)), (a, b)
    assert ep.tree_structure(1) == ep.treespec_leaf() and ep.tree_structure(None) == ep.treespec_leaf()
    assert ep.treespec_leaf().is_leaf() and repr(ep.treespec_leaf()) == "*"
    same_spec(ep.treespec_tuple([ep.treespec_leaf()] * 2), tp.treespec_tuple([tp.treespec_leaf()] * 2))
    same_spec(ep.treespec_dict(a=ep.treespec_leaf()), tp.treespec_dict(a=tp.treespec_leaf()))


def test_spec_is_frozen():
    for change in (lambda spec: setattr(spec, "type", tuple), lambda spec: delattr(spec, "num_leaves")):
        assert _raises(lambda: change(ep.tree_structure([1]))) == _raises(lambda: change(tp.tree_structure([1])))


def test_spec_copy_and_pickle():
    import copy
    import pickle
    spec = ep.tree_structure({"a": [1, (2, 3)], "b": None, "c": OrderedDict(d=Point(1, 2))})
    for again in (copy.copy(spec), copy.deepcopy(spec), pickle.loads(pickle.dumps(spec))):
        assert again == spec and repr(again) == repr(spec) and hash(again) == hash(spec)
    assert copy.deepcopy(ep.treespec_leaf()) is ep.treespec_leaf()


def test_is_leaf():
    tree = [(1, 2), {"a": (3,)}, [4]]
    for pred in (lambda x: isinstance(x, tuple), lambda x: isinstance(x, list) and len(x) == 1):
        el, es = ep.tree_flatten(tree, is_leaf=pred)
        tl, ts = tp.tree_flatten(tree, is_leaf=pred)
        assert el == tl
        same_spec(es, ts)
        assert ep.tree_leaves(tree, is_leaf=pred) == tl
        assert ep.tree_map(str, tree, is_leaf=pred) == tp.tree_map(str, tree, is_leaf=pred)
    for x in (1, None, [1], (), {"a": 1}, Point(1, 2)):
        assert ep.tree_is_leaf(x) == tp.tree_is_leaf(x)


MAPS = [
    (lambda x: x * 2, ({"x": 7, "y": (42, [64])},)),
    (lambda x: x is None, ({"x": 7, "z": None},)),
    (lambda x, y: x + y, ([1, (2, 3)], [10, (20, 30)])),
    (lambda x, y: [x] + y, ([5, 6], [[7, 9], [1, 2]])),                  # rests may be deeper: tree is a prefix
    (lambda x, y, z: (x, y, z), ({"a": 1, "b": 2}, OrderedDict(b=3, a=4), defaultdict(int, a=5, b=6))),
    (lambda x, y: (x, y), (Point(1, 2), Point(3, [4]))),
    (lambda x, y: x + y, (deque([1, 2], maxlen=2), deque([3, 4], maxlen=5))),
    (lambda x, y: (x, y), (1, {"anything": [2, 3]})),
]


@pytest.mark.parametrize("case", range(len(MAPS)))
def test_tree_map(case):
    fn, trees = MAPS[case]
    got, want = ep.tree_map(fn, *trees), tp.tree_map(fn, *trees)
    same_structure(got, want)
    seen_e, seen_t = [], []
    assert ep.tree_map_(lambda *a: seen_e.append(a), *trees) is trees[0]
    tp.tree_map_(lambda *a: seen_t.append(a), *trees)
    assert seen_e == seen_t


def test_map_only_all_any():
    tree = [1, "a", 2.5, (3, "b"), {"k": None}]
    for types in (int, (int, str), str | float, lambda x: x is None):
        hit = lambda x: ("hit", x)  # noqa: E731
        assert ep.tree_map_only(types, hit, tree) == tp.tree_map_only(types, hit, tree)
    assert ep.map_only(int)(lambda x: -x)(3) == -3 and ep.map_only(int)(lambda x: -x)("s") == "s"
    for pred in (lambda x: x is not None, lambda x: isinstance(x, (int, str)), lambda x: True):
        assert ep.tree_all(pred, tree) == tp.tree_all(pred, tree)
        assert ep.tree_any(pred, tree) == tp.tree_any(pred, tree)
    for types, pred in ((int, lambda x: x > 0), (str, lambda x: x == "b"), (float, lambda x: x > 3)):
        assert ep.tree_all_only(types, pred, tree) == tp.tree_all_only(types, pred, tree)
        assert ep.tree_any_only(types, pred, tree) == tp.tree_any_only(types, pred, tree)
    assert ep.arg_tree_leaves(1, [2, (3,)], k={"a": 4}) == tp.arg_tree_leaves(1, [2, (3,)], k={"a": 4})


@pytest.mark.parametrize("prefix,full", [
    (0, [1, (2, 3)]), ([0, 1], [1, (2, 3)]), ([0, (1, 2)], [1, (2, 3)]), ([0, 1, 2], [1, (2, 3)]),
    ((0, 1), [1, 2]), ({"a": 0, "b": None}, {"b": [1, 2], "a": 3}), ({"a": 0}, {"a": 1, "b": 2}),
    ((0, None), ((1, 2), {"x": 3})), (None, [1, 2]), ([], []), ([0], [[]]),
])
def test_broadcast_to_and_flatten(prefix, full):
    """vmap's in_dims: a prefix tree broadcast to one value per leaf, or None."""
    assert (ep._broadcast_to_and_flatten(prefix, ep.tree_structure(full))
            == tp._broadcast_to_and_flatten(prefix, tp.tree_structure(full)))


def _raises(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


ERRORS = [
    lambda m: m.tree_unflatten([1], m.tree_structure([1, (2, 3)])),
    lambda m: m.tree_unflatten([1, 2, 3], m.tree_structure({"a": 1})),
    lambda m: m.tree_unflatten([1], [2]),
    lambda m: m.tree_map(lambda a, b: a, [1, 2], [1]),
    lambda m: m.tree_map(lambda a, b: a, [1, 2], (1, 2)),
    lambda m: m.tree_map(lambda a, b: a, [1, 2], 3),
    lambda m: m.tree_map(lambda a, b: a, {"a": 1, "b": 2}, {"a": 1, "c": 2}),
    lambda m: m.tree_map(lambda a, b: a, {"a": 1, "b": 2}, {"a": 1}),
    lambda m: m.tree_map(lambda a, b: a, Point(1, 2), (1, 2)),
    lambda m: m.tree_map(lambda a, b: a, Point(1, 2), Other(1, 2)),
    lambda m: m.tree_map(lambda a, b: a, (1, 2), Point(1, 2)),
    lambda m: m.tree_map(lambda a, b: a, deque([1]), [1]),
    lambda m: m.tree_map_only(3, lambda x: x, [1]),
    lambda m: m.register_pytree_node(list, lambda x: (x, None), lambda v, c: v),
    lambda m: m.treespec_tuple([1]),
    lambda m: m.treespec_dict(a=1),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    assert _raises(lambda: ERRORS[case](ep)) == _raises(lambda: ERRORS[case](tp))


class Pair:
    def __init__(self, a, b, tag="t"):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.b, self.tag) == (other.a, other.b, other.tag)

    def __repr__(self):
        return f"Pair({self.a!r}, {self.b!r}, {self.tag!r})"


class NoKeys(Pair):
    pass


@pytest.fixture(scope="module")
def custom_nodes():
    for m in (ep, tp):
        m.register_pytree_node(
            Pair, lambda p: ([p.a, p.b], p.tag), lambda v, tag: Pair(*v, tag=tag), serialized_type_name="t.Pair",
            flatten_with_keys_fn=lambda p: ([(m.GetAttrKey("a"), p.a), (m.GetAttrKey("b"), p.b)], p.tag))
        m.register_pytree_node(NoKeys, lambda p: ([p.a, p.b], None), lambda v, _: NoKeys(*v),
                               serialized_type_name="t.NoKeys")
    yield
    for m in (ep, tp):
        m._deregister_pytree_node(Pair)
        m._deregister_pytree_node(NoKeys)


def test_custom_node(custom_nodes):
    tree = {"p": Pair(1, [2, Pair(3, 4, "u")]), "q": 5}
    el, es = ep.tree_flatten(tree)
    tl, ts = tp.tree_flatten(tree)
    assert el == tl == [1, 2, 3, 4, 5]
    assert es.child(0).type is Pair and es.num_leaves == ts.num_leaves and es.num_nodes == ts.num_nodes
    assert repr(es) == repr(ts)
    assert ep.tree_unflatten(el, es) == tree
    assert ep.tree_map(lambda x: x * 10, tree) == tp.tree_map(lambda x: x * 10, tree)
    assert ([ep.keystr(p) for p, _ in ep.tree_leaves_with_path(tree)]
            == [tp.keystr(p) for p, _ in tp.tree_leaves_with_path(tree)])
    for bad in (lambda m: m.tree_map(lambda a, b: a, Pair(1, 2), (1, 2)),
                lambda m: m.tree_map(lambda a, b: a, Pair(1, 2), Pair(1, 2, "other")),
                lambda m: m.tree_leaves_with_path([NoKeys(1, 2)]),
                lambda m: m.register_pytree_node(Pair, lambda p: ([], None), lambda v, c: None)):
        assert _raises(lambda: bad(ep)) == _raises(lambda: bad(tp))
    with pytest.warns(UserWarning, match="already registered"):
        ep._register_pytree_node(Pair, lambda p: ([p.a, p.b], p.tag), lambda v, tag: Pair(*v, tag=tag))


def test_register_dataclass():
    import dataclasses

    @dataclasses.dataclass
    class Box:
        w: object
        b: object = 0

    ep.register_dataclass(Box)
    try:
        leaves, spec = ep.tree_flatten([Box([1, 2], 3)])
        assert leaves == [1, 2, 3] and ep.tree_unflatten(leaves, spec) == [Box([1, 2], 3)]
        assert [ep.keystr(p) for p, _ in ep.tree_leaves_with_path(Box(1, 2))] == [".w", ".b"]
    finally:
        ep._deregister_pytree_node(Box)


def test_tensors_and_return_types():
    """Tensors are leaves; torch.return_types results are nodes of their own type, as torch's structseqs."""
    x = [1.0, 3.0, 2.0]
    er, tr = ember.max(ember.tensor(x), 0), torch.max(torch.tensor(x), 0)
    el, es = ep.tree_flatten({"r": er, "t": ember.tensor(x)})
    tl, ts = tp.tree_flatten({"r": tr, "t": torch.tensor(x)})
    assert repr(es) == repr(ts) and [repr(v) for v in el] == [repr(v) for v in tl]
    back = ep.tree_unflatten(el, es)
    assert type(back["r"]) is type(er) and repr(back) == repr({"r": er, "t": ember.tensor(x)})
    assert ([ep.keystr(p) for p, _ in ep.tree_leaves_with_path(er)]
            == [tp.keystr(p) for p, _ in tp.tree_leaves_with_path(tr)])
    doubled = ep.tree_map_only(ember.Tensor, lambda t: t * 2, {"r": er, "n": 1})
    assert doubled["n"] == 1 and doubled["r"].values.item() == 6.0


def test_reached_as_torch_utils_pytree():
    assert ember.utils._pytree is ep
    import ember.utils as eu
    assert "_pytree" not in eu.__all__


def test_deprecations_warn_as_torch():
    spec = ep.tree_structure([1, 2])
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        spec.children_specs
        ep.LeafSpec()
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        tp.tree_structure([1, 2]).children_specs
        tp.LeafSpec()
    assert [(w.category, str(w.message)) for w in got] == [(w.category, str(w.message)) for w in want]
    with pytest.warns(FutureWarning):
        assert ep.LeafSpec() == ep.treespec_leaf()
