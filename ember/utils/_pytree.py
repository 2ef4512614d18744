"""Pytrees (``torch.utils._pytree``): nested containers flattened to a list of leaves and a ``TreeSpec``.

A pytree is a leaf or a *node*: a container type registered in ``SUPPORTED_NODES`` with a flatten function
(``node -> (children, context)``) and an unflatten function (``(children, context) -> node``). Built-in nodes are
tuple, list, dict, OrderedDict, defaultdict, deque and every namedtuple; ``torch.return_types`` results are nodes of
their own type, as in PyTorch. Everything else is a leaf, ``None`` included (as PyTorch's Python pytree).
torch.func uses these for vmap's ``in_dims``/``out_dims``, grad's ``argnums`` and ``has_aux`` outputs.

Not built: JSON serialization of specs (``treespec_dumps``/``treespec_loads``, for torch.export),
``register_constant``, the C++ (optree) twin ``torch.utils._cxx_pytree``.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional

PyTree = Any
Context = Any
KeyPath = tuple
IsLeaf = Optional[Callable[[Any], bool]]

__all__ = ["PyTree", "Context", "TreeSpec", "LeafSpec", "SUPPORTED_NODES", "register_pytree_node", "register_dataclass",
           "tree_flatten", "tree_unflatten", "tree_iter", "tree_leaves", "tree_structure", "tree_is_leaf",
           "tree_map", "tree_map_", "map_only", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "treespec_leaf", "treespec_tuple", "treespec_dict", "treespec_pprint",
           "arg_tree_leaves", "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "keystr",
           "key_get", "SequenceKey", "MappingKey", "GetAttrKey", "is_namedtuple", "is_namedtuple_class",
           "is_namedtuple_instance"]


class NodeDef(NamedTuple):
    """How one container type flattens (``flatten_fn``) and is rebuilt (``unflatten_fn``)."""
    type: Any
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Optional[Callable]


SUPPORTED_NODES: dict = {}
SERIALIZED_TYPE_NAMES: dict = {}     # cls -> serialized_type_name (kept for callers; specs are not serialized here)


# --------------------------------------------------------------------------------------------------- registration

def _private_register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                                  to_dumpable_context=None, from_dumpable_context=None,
                                  flatten_with_keys_fn=None) -> None:
    if cls in SUPPORTED_NODES:
        warnings.warn(f"{cls} is already registered as pytree node. Overwriting the previous registration.",
                      stacklevel=3)
    if (to_dumpable_context is None) != (from_dumpable_context is None):
        raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must be None or registered.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
    SERIALIZED_TYPE_NAMES[cls] = serialized_type_name


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                         serialized_type_name: Optional[str] = None, to_dumpable_context: Optional[Callable] = None,
                         from_dumpable_context: Optional[Callable] = None,
                         flatten_with_keys_fn: Optional[Callable] = None) -> None:
    """Make ``cls`` a pytree node: ``flatten_fn(obj) -> (children, context)``,
    ``unflatten_fn(children, context) -> obj``; ``flatten_with_keys_fn(obj) -> ([(key, child)], context)`` enables
    the ``*_with_path`` functions. The dumpable-context functions are accepted and unused (no serialization here)."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
                                  to_dumpable_context=to_dumpable_context,
                                  from_dumpable_context=from_dumpable_context,
                                  flatten_with_keys_fn=flatten_with_keys_fn)


def _register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, to_str_fn=None,
                          maybe_from_str_fn=None, **kwargs) -> None:
    """PyTorch's older entry point: registers like ``register_pytree_node`` but overwrites (with a warning)."""
    if to_str_fn is not None or maybe_from_str_fn is not None:
        warnings.warn("`to_str_fn` and `maybe_from_str_fn` is deprecated. Please use `to_dumpable_context` and "
                      "`from_dumpable_context` instead.", FutureWarning, stacklevel=2)
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, **kwargs)


def _deregister_pytree_node(cls: type) -> None:
    del SUPPORTED_NODES[cls]
    SERIALIZED_TYPE_NAMES.pop(cls, None)


def register_dataclass(cls: type, *, field_names: Optional[list] = None, drop_field_names: Optional[list] = None,
                       serialized_type_name: Optional[str] = None) -> None:
    """Make a dataclass a node whose children are its fields (``field_names``: those given, else every ``init``
    field not in ``drop_field_names``). Simplified from PyTorch: every field is a child (no static metadata)."""
    if field_names is None:
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"field_names must be specified with a list of all fields used to initialize {cls}, "
                             f"as it is not a dataclass.")
        dropped = set(drop_field_names or ())
        field_names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in dropped]
    names = list(field_names)
    register_pytree_node(
        cls, lambda obj: ([getattr(obj, n) for n in names], None),
        lambda values, _: cls(**dict(zip(names, values))), serialized_type_name=serialized_type_name,
        flatten_with_keys_fn=lambda obj: ([(GetAttrKey(n), getattr(obj, n)) for n in names], None))


# --------------------------------------------------------------------------------------------------- key paths

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Position ``idx`` in a sequence; prints as ``[idx]``."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """Key ``key`` of a mapping; prints as ``[key]``."""
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute ``name`` of an object (a namedtuple field); prints as ``.name``."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


def keystr(kp: KeyPath) -> str:
    """A key path written as an access expression: ``['a'][1].y``."""
    return "".join(map(str, kp))


def key_get(obj: Any, kp: KeyPath) -> Any:
    """The subtree of ``obj`` at key path ``kp``."""
    for key in kp:
        obj = key.get(obj)
    return obj


# --------------------------------------------------------------------------------------------------- built-in nodes

def is_namedtuple_class(cls: Any) -> bool:
    """Whether ``cls`` is a namedtuple class (a tuple subclass with string ``_fields``, ``_make`` and ``_asdict``)."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple) and all(type(f) is str for f in cls._fields)
            and callable(getattr(cls, "_make", None)) and callable(getattr(cls, "_asdict", None)))


def is_namedtuple(obj: Any) -> bool:
    """Whether ``obj`` is a namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj: Any) -> bool:
    return is_namedtuple_class(type(obj))


def _seq_keys(values: list) -> list:
    return [(SequenceKey(i), v) for i, v in enumerate(values)]


def _map_keys(keys: list, values: list) -> list:
    return [(MappingKey(k), v) for k, v in zip(keys, values)]


_private_register_pytree_node(
    tuple, lambda t: (list(t), None), lambda values, _: tuple(values), serialized_type_name="builtins.tuple",
    flatten_with_keys_fn=lambda t: (_seq_keys(list(t)), None))
_private_register_pytree_node(
    list, lambda l: (l, None), lambda values, _: list(values), serialized_type_name="builtins.list",
    flatten_with_keys_fn=lambda l: (_seq_keys(l), None))
_private_register_pytree_node(
    dict, lambda d: (list(d.values()), list(d)), lambda values, keys: dict(zip(keys, values)),
    serialized_type_name="builtins.dict",
    flatten_with_keys_fn=lambda d: (_map_keys(list(d), list(d.values())), list(d)))
# Every namedtuple class shares one node type, `namedtuple` itself; the context is the class (as PyTorch).
_private_register_pytree_node(
    namedtuple, lambda t: (list(t), type(t)), lambda values, cls: cls(*values),
    serialized_type_name="collections.namedtuple",
    flatten_with_keys_fn=lambda t: ([(GetAttrKey(f), v) for f, v in zip(t._fields, t)], type(t)))
_private_register_pytree_node(
    OrderedDict, lambda d: (list(d.values()), list(d)), lambda values, keys: OrderedDict(zip(keys, values)),
    serialized_type_name="collections.OrderedDict",
    flatten_with_keys_fn=lambda d: (_map_keys(list(d), list(d.values())), list(d)))
# defaultdict's context is [default_factory, keys]
_private_register_pytree_node(
    defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d)]),
    lambda values, ctx: defaultdict(ctx[0], zip(ctx[1], values)), serialized_type_name="collections.defaultdict",
    flatten_with_keys_fn=lambda d: (_map_keys(list(d), list(d.values())), [d.default_factory, list(d)]))
_private_register_pytree_node(
    deque, lambda d: (list(d), d.maxlen), lambda values, maxlen: deque(values, maxlen=maxlen),
    serialized_type_name="collections.deque", flatten_with_keys_fn=lambda d: (_seq_keys(list(d)), d.maxlen))

BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})
STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})


def _register_return_type(cls: type) -> None:
    """``torch.return_types.*`` classes are nodes of their own type with no context, as PyTorch registers its
    structseqs (ember's are namedtuple subclasses, created in the core, which cannot import this module)."""
    _private_register_pytree_node(cls, lambda t: (list(t), None), lambda values, _: cls(*values),
                                  flatten_with_keys_fn=lambda t: (_seq_keys(list(t)), None))


def _node_type(tree: Any) -> Any:
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls
    if getattr(cls, "__module__", None) == "torch.return_types" and issubclass(cls, tuple):
        _register_return_type(cls)
        return cls
    return namedtuple if is_namedtuple_class(cls) else cls


def tree_is_leaf(tree: PyTree, is_leaf: IsLeaf = None) -> bool:
    """Whether ``tree`` is a leaf: ``is_leaf(tree)`` says so, or its type is no registered node."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) not in SUPPORTED_NODES


def _flatten_node(tree: Any) -> tuple:
    """(node type, children, context) of a node."""
    node_type = _node_type(tree)
    children, context = SUPPORTED_NODES[node_type].flatten_fn(tree)
    return node_type, children, context


# --------------------------------------------------------------------------------------------------- TreeSpec

class TreeSpec:
    """The structure of a pytree: the root's node type, its context and one spec per child. A leaf's spec has
    ``type`` None and prints as ``*``."""
    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type: Any, context: Context, children_specs: list) -> None:
        children = list(children_specs)
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if children:
                raise AssertionError("leaf node should not have children")
            nodes = leaves = 1
        else:
            nodes = 1 + sum(c.num_nodes for c in children)
            leaves = sum(c.num_leaves for c in children)
        for name, value in (("type", type), ("_context", context), ("_children", children), ("num_nodes", nodes),
                            ("num_leaves", leaves), ("num_children", len(children))):
            object.__setattr__(self, name, value)

    # immutable (specs are hashed and shared), with the error of PyTorch's frozen dataclass
    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple:      # copy and pickle rebuild through __init__ (attributes cannot be set)
        return (treespec_leaf, ()) if self.type is None else (TreeSpec, (self.type, self._context, self._children))

    @property
    def context(self) -> Context:
        return self._context

    @property
    def children_specs(self) -> list:
        warnings.warn("`treespec.children_specs` is deprecated. Use `treespec.child(index)` to access a single "
                      "child, or `treespec.children()` to get all children.", FutureWarning, stacklevel=2)
        return self._children

    def children(self) -> list:
        return list(self._children)

    def child(self, index: int) -> "TreeSpec":
        return self._children[index]

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        # children after the first go on their own lines, two spaces deeper than this spec's own indent
        inner = indent + 2
        kids = f",\n{' ' * inner}".join(c.__repr__(inner) for c in self._children)
        return f"TreeSpec({self.type.__name__}, {self._context}, [{kids}])"

    def __eq__(self, other: Any) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type == other.type and self._context == other._context
                and self._children == other._children)

    def __hash__(self) -> int:
        ctx = self._context
        if self.type is defaultdict:
            ctx = (ctx[0], tuple(ctx[1]))
        elif self.type in (dict, OrderedDict):
            ctx = tuple(ctx)
        elif self.type is not None and self.type not in BUILTIN_TYPES:
            ctx = None          # a custom node's context need not be hashable; equal specs still hash equal
        return hash((self.type, ctx, tuple(self._children)))

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """The pytree of this structure holding ``leaves`` (in flattening order)."""
        leaves = leaves if isinstance(leaves, (list, tuple)) else list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        return self._build(iter(leaves))

    def _build(self, leaves: Iterator) -> PyTree:
        if self.type is None:
            return next(leaves)
        children = [c._build(leaves) for c in self._children]
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)

    def flatten_up_to(self, tree: PyTree) -> list:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have this structure as a prefix).
        Dict-like nodes match by keys (dict, OrderedDict and defaultdict are interchangeable); a deque's maxlen
        and a defaultdict's factory are not compared."""
        out: list = []
        self._up_to(tree, out)
        return out

    def _up_to(self, tree: Any, out: list) -> None:
        if self.type is None:
            out.append(tree)
            return
        node_type = _node_type(tree)
        if self.type not in BUILTIN_TYPES:     # custom nodes must match exactly
            if node_type != self.type:
                raise ValueError(f"Type mismatch; expected {self.type!r}, but got {node_type!r}.")
            children, context = SUPPORTED_NODES[node_type].flatten_fn(tree)
            self._check_arity(len(children))
            if context != self._context:
                raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        elif self.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES:
            self._check_arity(len(tree))
            keys = self._context[1] if self.type is defaultdict else self._context
            missing, extra = set(keys) - set(tree), set(tree) - set(keys)
            if missing or extra:
                raise ValueError("Node keys mismatch" + (f"; missing key(s): {missing}" if missing else "")
                                 + (f"; extra key(s): {extra}" if extra else "") + ".")
            children = [tree[k] for k in keys]
        else:
            if node_type != self.type:
                raise ValueError(f"Node type mismatch; expected {self.type!r}, but got {node_type!r}.")
            self._check_arity(len(tree))
            children, context = SUPPORTED_NODES[node_type].flatten_fn(tree)
            if node_type is not deque and context != self._context:
                raise ValueError(f"Node context mismatch for node type {self.type!r}; "
                                 f"expected {self._context!r}, but got {context!r}.")
        for spec, child in zip(self._children, children):
            spec._up_to(child, out)

    def _check_arity(self, n: int) -> None:
        if n != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {n}.")


class LeafSpec(TreeSpec):
    """The spec of a leaf (deprecated in PyTorch: use ``treespec_leaf()`` / ``spec.is_leaf()``)."""
    __slots__ = ()

    def __init__(self) -> None:
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance(treespec, TreeSpec) "
                      "and treespec.is_leaf()` instead.", FutureWarning, stacklevel=2)
        super().__init__(None, None, [])


_LEAF_SPEC = object.__new__(LeafSpec)       # all leaves share this one spec (built without the warning)
TreeSpec.__init__(_LEAF_SPEC, None, None, [])


def treespec_leaf() -> TreeSpec:
    """The spec of a leaf."""
    return _LEAF_SPEC


def treespec_tuple(iterable: Iterable[TreeSpec] = (), /) -> TreeSpec:
    """The spec of a tuple with these children."""
    children = list(iterable)
    if not all(isinstance(c, TreeSpec) for c in children):
        raise ValueError(f"Expected a tuple of TreeSpec values, got: {children!r}.")
    return TreeSpec(tuple, None, children)


def treespec_dict(mapping: Any = (), /, **kwargs: TreeSpec) -> TreeSpec:
    """The spec of a dict with these keys and child specs."""
    d = dict(mapping, **kwargs)
    if not all(isinstance(c, TreeSpec) for c in d.values()):
        raise ValueError(f"Expected a dictionary of TreeSpec values, got: {d!r}.")
    return TreeSpec(dict, list(d), list(d.values()))


class _Star(str):
    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure drawn as the pytree itself with ``*`` at the leaves: ``{'a': [*, *]}``."""
    return repr(treespec.unflatten([_Star("*")] * treespec.num_leaves))


# --------------------------------------------------------------------------------------------------- flatten / map

def tree_flatten(tree: PyTree, is_leaf: IsLeaf = None) -> tuple:
    """``(leaves, spec)``: the leaves in depth-first order and the structure to rebuild ``tree`` from them."""
    leaves: list = []
    return leaves, _walk(tree, is_leaf, leaves)


def _walk(node: Any, is_leaf: IsLeaf, leaves: list) -> TreeSpec:
    # (a module-level function: a recursive closure is a reference cycle, which would keep the leaves, tensors
    # among them, alive until the garbage collector runs)
    if tree_is_leaf(node, is_leaf):
        leaves.append(node)
        return _LEAF_SPEC
    node_type, children, context = _flatten_node(node)
    return TreeSpec(node_type, context, [_walk(c, is_leaf, leaves) for c in children])


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The inverse of ``tree_flatten`` (the two arguments may come in either order, as PyTorch allows)."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                            f"{type(treespec)}.")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: IsLeaf = None) -> Iterator[Any]:
    """The leaves of ``tree``, lazily."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    for child in _flatten_node(tree)[1]:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree: PyTree, is_leaf: IsLeaf = None) -> list:
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: IsLeaf = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> list:
    """The leaves of ``(args, kwargs)``."""
    return [leaf for a in (*args, *kwargs.values()) for leaf in tree_iter(a)]


def tree_map(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """A new pytree of ``tree``'s structure holding ``func(leaf, *matching subtrees of rests)``; each of ``rests``
    must have ``tree``'s structure as a prefix (a leaf of ``tree`` may face a whole subtree)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *columns))


def tree_map_(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """``tree_map`` for its side effects: calls ``func`` on each leaf and returns ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    for args in zip(*columns):
        func(*args)
    return tree


def map_only(type_or_types_or_pred: Any, /) -> Callable:
    """Decorator: the function applies to values of the given type(s) (or passing the predicate); other values
    pass through unchanged."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x: Any) -> bool:
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapped(x: Any) -> Any:
            return func(x) if pred(x) else x
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred: Any, /, func: Callable, tree: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """``tree_map`` applying ``func`` only to leaves of the given type(s) (or passing the predicate)."""
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred: Any, /, func: Callable, tree: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree: PyTree, is_leaf: IsLeaf = None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable, tree: PyTree, is_leaf: IsLeaf = None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types: Any, /, pred: Callable, tree: PyTree, is_leaf: IsLeaf = None) -> bool:
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types: Any, /, pred: Callable, tree: PyTree, is_leaf: IsLeaf = None) -> bool:
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def _broadcast_to_and_flatten(tree: PyTree, treespec: TreeSpec, is_leaf: IsLeaf = None) -> Optional[list]:
    """``tree`` (a prefix of ``treespec``'s structure, e.g. vmap's ``in_dims``) broadcast to one value per leaf
    of ``treespec``; None when ``tree`` is not such a prefix."""
    full = treespec.unflatten([0] * treespec.num_leaves)
    values, prefix = tree_flatten(tree, is_leaf)
    try:
        subtrees = prefix.flatten_up_to(full)
    except ValueError:
        return None
    return [v for v, sub in zip(values, subtrees) for _ in range(tree_structure(sub, is_leaf).num_leaves)]


# --------------------------------------------------------------------------------------------------- key paths

def _key_paths(path: tuple, tree: Any, is_leaf: IsLeaf) -> Iterator[tuple]:
    if tree_is_leaf(tree, is_leaf):
        yield path, tree
        return
    node_type = _node_type(tree)
    with_keys = SUPPORTED_NODES[node_type].flatten_with_keys_fn
    if with_keys is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_type}. "
                         "Please pass a flatten_with_keys_fn argument to register_pytree_node.")
    for key, child in with_keys(tree)[0]:
        yield from _key_paths((*path, key), child, is_leaf)


def tree_leaves_with_path(tree: PyTree, is_leaf: IsLeaf = None) -> list:
    """``[(key path, leaf)]``: each leaf with the keys leading to it (see ``keystr``)."""
    return list(_key_paths((), tree, is_leaf))


def tree_flatten_with_path(tree: PyTree, is_leaf: IsLeaf = None) -> tuple:
    """``([(key path, leaf)], spec)``."""
    return tree_leaves_with_path(tree, is_leaf), tree_structure(tree, is_leaf)


def tree_map_with_path(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """``tree_map`` where ``func`` also gets each leaf's key path first: ``func(path, leaf, *others)``."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    columns = [[p for p, _ in pairs], [leaf for _, leaf in pairs]] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *columns))
