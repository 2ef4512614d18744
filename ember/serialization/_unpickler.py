"""A pickle reader that builds only what a checkpoint holds, in the spirit of PyTorch's ``weights_only``.

It is an interpreter of the pickle opcodes written out here, not ``pickle.Unpickler``: a global is
looked up in an allow-list (never imported), and the only callables it ever calls are the ember
constructors that list maps to (tensors, Parameters, OrderedDict, ...), which check their arguments.
Anything else (``os.system`` in a ``__reduce__``, an unknown class, ``builtins.eval``) raises
``pickle.UnpicklingError`` naming it, before anything is called. Loops, not recursion: a deeply
nested pickle cannot overflow the stack (and nesting is capped anyway).
"""
from __future__ import annotations

import struct
from collections import Counter, OrderedDict
from pickle import UnpicklingError
from typing import Any, Callable

_MAX_DEPTH = 1000          # Python's own pickler cannot write deeper containers (its recursion limit)

# Modules never allowed, named in the error so a hostile file reads as what it is.
_BLOCKED = ("os", "posix", "nt", "sys", "subprocess", "shutil", "socket", "importlib", "runpy", "pty")

# Python 2 module names a protocol-2 pickle may carry (pickle's fix_imports).
_MODULE_RENAMES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


class _Marker:
    """A class named in a pickle (``torch.Tensor``, ``torch.nn.parameter.Parameter``) that is only ever
    an argument (of ``_rebuild_from_type_v2``): calling it is refused like any unknown function."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<class '{self.name}'>"


_OP_NAMES = {
    b"(": "MARK", b".": "STOP", b"0": "POP", b"1": "POP_MARK", b"2": "DUP", b"J": "BININT", b"K": "BININT1",
    b"M": "BININT2", b"\x8a": "LONG1", b"\x8b": "LONG4", b"N": "NONE", b"\x88": "NEWTRUE", b"\x89": "NEWFALSE",
    b"G": "BINFLOAT", b"X": "BINUNICODE", b"\x8c": "SHORT_BINUNICODE", b"\x8d": "BINUNICODE8",
    b"U": "SHORT_BINSTRING", b"T": "BINSTRING", b"B": "BINBYTES", b"C": "SHORT_BINBYTES", b"\x8e": "BINBYTES8",
    b"\x96": "BYTEARRAY8", b")": "EMPTY_TUPLE", b"t": "TUPLE", b"\x85": "TUPLE1", b"\x86": "TUPLE2",
    b"\x87": "TUPLE3", b"]": "EMPTY_LIST", b"a": "APPEND", b"e": "APPENDS", b"l": "LIST", b"}": "EMPTY_DICT",
    b"d": "DICT", b"s": "SETITEM", b"u": "SETITEMS", b"\x8f": "EMPTY_SET", b"\x90": "ADDITEMS",
    b"\x91": "FROZENSET", b"h": "BINGET", b"j": "LONG_BINGET", b"q": "BINPUT", b"r": "LONG_BINPUT",
    b"\x94": "MEMOIZE", b"c": "GLOBAL", b"\x93": "STACK_GLOBAL", b"R": "REDUCE", b"b": "BUILD", b"\x81": "NEWOBJ",
    b"Q": "BINPERSID", b"\x80": "PROTO", b"\x95": "FRAME",
    # Known but refused: they build arbitrary objects or reach outside the pickle.
    b"i": "INST", b"o": "OBJ", b"\x92": "NEWOBJ_EX", b"P": "PERSID", b"\x82": "EXT1", b"\x83": "EXT2",
    b"\x84": "EXT4", b"I": "INT", b"L": "LONG", b"S": "STRING", b"V": "UNICODE", b"F": "FLOAT", b"g": "GET",
    b"p": "PUT", b"\x97": "NEXT_BUFFER", b"\x98": "READONLY_BUFFER",
}


class WeightsUnpickler:
    """Reads one pickle from ``data``.

    ``allowed`` maps a global's full name (``"collections.OrderedDict"``) to the object it stands for;
    ``callables`` is the subset REDUCE may call; ``persistent_load`` turns a persistent id into an object
    (storages). ``encoding`` decodes Python 2 byte strings ("bytes" keeps them as bytes).
    """

    def __init__(self, data: bytes, allowed: dict[str, Any], callables: set, persistent_load: Callable,
                 encoding: str = "utf-8", user: dict[str, Any] | None = None):
        self._data = memoryview(data)
        self._pos = 0
        self._allowed = allowed
        self._callables = callables
        self._persistent_load = persistent_load
        self._encoding = encoding
        # globals the user allowed (ember.serialization.add_safe_globals): full name -> class or function.
        # Only these exact objects may be called (REDUCE), instantiated (NEWOBJ) or given state (BUILD).
        self._user = user or {}
        self._user_objs = _IdSet(self._user.values())
        self.memo: dict[int, Any] = {}

    # ----- reading the byte stream --------------------------------------------------------------
    def _read(self, n: int) -> memoryview:
        end = self._pos + n
        if n < 0 or end > len(self._data):
            raise UnpicklingError(f"pickle data was truncated: an opcode at byte {self._pos} wants {n} bytes, "
                                  f"{len(self._data) - self._pos} are left")
        out = self._data[self._pos:end]
        self._pos = end
        return out

    def _unpack(self, fmt: str, n: int):
        return struct.unpack(fmt, self._read(n))[0]

    def _readline(self) -> str:
        rest = self._data[self._pos:]
        i = bytes(rest[:1024]).find(b"\n")
        if i < 0:
            raise UnpicklingError("pickle data was truncated: a GLOBAL name has no end of line")
        self._pos += i + 1
        try:
            return bytes(rest[:i]).decode("utf-8")
        except UnicodeDecodeError:
            raise UnpicklingError("a GLOBAL name is not valid UTF-8") from None

    # ----- the interpreter ----------------------------------------------------------------------
    def load(self) -> Any:
        stack: list = []
        metastack: list = []
        memo = self.memo
        while True:
            at = self._pos
            op = bytes(self._read(1))
            try:
                if op == b"\x80":                      # PROTO
                    proto = self._read(1)[0]
                    if proto > 5:
                        raise UnpicklingError(f"unsupported pickle protocol: {proto}")
                elif op == b"\x95":                    # FRAME: a length prefix only
                    self._read(8)
                elif op == b".":                       # STOP
                    if metastack or len(stack) != 1:
                        raise UnpicklingError("data.pkl is malformed: STOP with an unbalanced stack")
                    return stack.pop()
                # --- plain values
                elif op == b"N":
                    stack.append(None)
                elif op == b"\x88":
                    stack.append(True)
                elif op == b"\x89":
                    stack.append(False)
                elif op == b"J":
                    stack.append(self._unpack("<i", 4))
                elif op == b"K":
                    stack.append(self._read(1)[0])
                elif op == b"M":
                    stack.append(self._unpack("<H", 2))
                elif op == b"\x8a":
                    n = self._read(1)[0]
                    stack.append(int.from_bytes(self._read(n), "little", signed=True))
                elif op == b"\x8b":
                    n = self._unpack("<i", 4)
                    stack.append(int.from_bytes(self._read(n), "little", signed=True))
                elif op == b"G":
                    stack.append(self._unpack(">d", 8))
                elif op in (b"X", b"\x8c", b"\x8d"):
                    n = (self._unpack("<I", 4) if op == b"X" else self._read(1)[0] if op == b"\x8c"
                         else self._unpack("<Q", 8))
                    stack.append(str(self._read(n), "utf-8", "surrogatepass"))
                elif op in (b"U", b"T"):
                    n = self._read(1)[0] if op == b"U" else self._unpack("<i", 4)
                    raw = bytes(self._read(n))
                    stack.append(raw if self._encoding == "bytes" else raw.decode(self._encoding, "strict"))
                elif op in (b"B", b"C", b"\x8e", b"\x96"):
                    n = (self._unpack("<I", 4) if op == b"B" else self._read(1)[0] if op == b"C"
                         else self._unpack("<Q", 8))
                    raw = bytes(self._read(n))
                    stack.append(bytearray(raw) if op == b"\x96" else raw)
                # --- containers
                elif op == b"(":                       # MARK
                    if len(metastack) >= _MAX_DEPTH:
                        raise UnpicklingError(f"data.pkl nests containers deeper than {_MAX_DEPTH} levels")
                    metastack.append(stack)
                    stack = []
                elif op == b")":
                    stack.append(())
                elif op == b"t":
                    items, stack = stack, metastack.pop()
                    stack.append(tuple(items))
                elif op == b"\x85":
                    stack[-1] = (stack[-1],)
                elif op in (b"\x86", b"\x87"):
                    n = 2 if op == b"\x86" else 3
                    if len(stack) < n:
                        raise IndexError
                    stack[-n:] = [tuple(stack[-n:])]
                elif op == b"]":
                    stack.append([])
                elif op == b"l":
                    items, stack = stack, metastack.pop()
                    stack.append(items)
                elif op == b"a":
                    item = stack.pop()
                    _target(stack, list, "append to").append(item)
                elif op == b"e":
                    items, stack = stack, metastack.pop()
                    _target(stack, list, "extend").extend(items)
                elif op == b"}":
                    stack.append({})
                elif op == b"d":
                    items, stack = stack, metastack.pop()
                    stack.append(_pairs({}, items))
                elif op == b"s":
                    v = stack.pop()
                    k = stack.pop()
                    _pairs(_target(stack, (dict, OrderedDict, Counter), "SETITEM on"), [k, v])
                elif op == b"u":
                    items, stack = stack, metastack.pop()
                    _pairs(_target(stack, (dict, OrderedDict, Counter), "SETITEMS on"), items)
                elif op == b"\x8f":
                    stack.append(set())
                elif op == b"\x90":
                    items, stack = stack, metastack.pop()
                    _hashable(_target(stack, set, "add items to").update, items)
                elif op == b"\x91":
                    items, stack = stack, metastack.pop()
                    stack.append(_hashable(frozenset, items))
                elif op == b"0":
                    if stack:
                        stack.pop()
                    else:
                        stack = metastack.pop()
                elif op == b"1":
                    stack = metastack.pop()
                elif op == b"2":
                    stack.append(stack[-1])
                # --- memo
                elif op in (b"h", b"j"):
                    i = self._read(1)[0] if op == b"h" else self._unpack("<I", 4)
                    if i not in memo:
                        raise UnpicklingError(f"data.pkl is malformed: memo value not found at index {i}")
                    stack.append(memo[i])
                elif op in (b"q", b"r"):
                    i = self._read(1)[0] if op == b"q" else self._unpack("<I", 4)
                    memo[i] = stack[-1]
                elif op == b"\x94":
                    memo[len(memo)] = stack[-1]
                # --- the risky ones: every object they produce comes from the allow-list
                elif op == b"c":
                    module = self._readline()
                    name = self._readline()
                    stack.append(self._find_global(module, name))
                elif op == b"\x93":
                    name = stack.pop()
                    module = stack.pop()
                    if type(module) is not str or type(name) is not str:
                        raise UnpicklingError("STACK_GLOBAL requires str module and name")
                    stack.append(self._find_global(module, name))
                elif op == b"R":                       # REDUCE
                    args = stack.pop()
                    func = stack[-1]
                    if not (_is_in(func, self._callables) or func in self._user_objs):
                        raise UnpicklingError(f"Trying to call reduce for unrecognized function {func!r}")
                    if type(args) is not tuple:
                        raise UnpicklingError(f"REDUCE arguments must be a tuple, got {type(args).__name__}")
                    try:
                        stack[-1] = func(*args)
                    except TypeError as e:          # a wrong argument count or type
                        if getattr(e, "pytorch_type", False):   # PyTorch's own TypeError (set_'s arguments)
                            raise
                        raise UnpicklingError(f"bad arguments for {func!r}: {e}") from None
                elif op == b"\x81":                    # NEWOBJ
                    args = stack.pop()
                    cls = stack.pop()
                    if cls in self._user_objs and isinstance(cls, type) and type(args) is tuple:
                        stack.append(cls.__new__(cls, *args))
                        continue
                    if not _is_in(cls, _NEWOBJ) or type(args) is not tuple or args:
                        raise UnpicklingError(f"Can only create new object for collections.OrderedDict or "
                                              f"collections.Counter (with no arguments), but got {cls!r}")
                    stack.append(_NEWOBJ[cls]())
                elif op == b"b":                       # BUILD
                    state = stack.pop()
                    inst = stack[-1]
                    if type(inst) in self._user_objs:
                        _build_user(inst, state)
                        continue
                    if type(inst) not in (OrderedDict, Counter):
                        raise UnpicklingError(f"Can only build OrderedDict or Counter attributes, but got "
                                              f"{type(inst).__name__}")
                    if not isinstance(state, dict) or not all(type(k) is str for k in state):
                        raise UnpicklingError("BUILD state of an OrderedDict must be a dict with str keys")
                    inst.__dict__.update(state)
                elif op == b"Q":                       # BINPERSID
                    pid = stack.pop()
                    stack.append(self._persistent_load(pid))
                elif op in _OP_NAMES:
                    raise UnpicklingError(f"Unsupported operand {op[0]} ({_OP_NAMES[op]}): ember's loader does "
                                          "not run it")
                else:
                    raise UnpicklingError(f"invalid load key, {op!r} at byte {at} of data.pkl")
            except IndexError:
                raise UnpicklingError(f"data.pkl is malformed: stack underflow at opcode "
                                      f"{_OP_NAMES.get(op, op)} (byte {at})") from None

    def _find_global(self, module: str, name: str):
        module = _MODULE_RENAMES.get(module, module)
        full = f"{module}.{name}"
        if module.split(".")[0] in _BLOCKED:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.")
        if full in self._allowed:
            return self._allowed[full]
        if full in self._user:
            return self._user[full]
        # PyTorch's message, with its spelling of builtins ("builtins.eval" -> "eval")
        if full.startswith("builtins"):
            rest = full[len("builtins"):]
            full = rest[1:] if rest[:1] == "." else "builtins" + rest
        raise UnpicklingError(f"Unsupported global: GLOBAL {full} was not an allowed global by default. "
                              f"Please use `torch.serialization.add_safe_globals([{full}])` or the "
                              f"`torch.serialization.safe_globals([{full}])` context manager to allowlist this "
                              "global if you trust this class/function.")


class _IdSet:
    """Membership by identity: a hostile object's ``__eq__`` cannot make itself look allowed."""

    __slots__ = ("_ids",)

    def __init__(self, objs) -> None:
        self._ids = {id(o) for o in objs}

    def __contains__(self, obj) -> bool:
        return id(obj) in self._ids


def _build_user(inst, state) -> None:
    """BUILD on an instance of a user-allowed class, as pickle's load_build: ``__setstate__`` if the
    class has one, else ``(dict_state, slot_state)`` set as attributes."""
    setstate = getattr(inst, "__setstate__", None)
    # object.__setstate__ does not exist before Python 3.11; from 3.11 on it is the default behaviour
    if setstate is not None and getattr(type(inst), "__setstate__", None) is not getattr(object, "__setstate__",
                                                                                            None):
        setstate(state)
        return
    slotstate = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slotstate = state
    if state:
        if not isinstance(state, dict):
            raise UnpicklingError(f"BUILD state of {type(inst).__name__} must be a dict, got "
                                  f"{type(state).__name__}")
        inst.__dict__.update(state)
    if slotstate:
        for k, v in slotstate.items():
            setattr(inst, k, v)


def _is_in(obj, allowed: set) -> bool:
    try:
        return obj in allowed
    except TypeError:          # unhashable: a list or dict on the stack
        return False


def _hashable(fn, items):
    try:
        return fn(items)
    except TypeError as e:
        raise UnpicklingError(f"data.pkl is malformed: {e}") from None     # an unhashable item


def _target(stack: list, types, what: str):
    obj = stack[-1]
    if type(obj) not in (types if isinstance(types, tuple) else (types,)):
        raise UnpicklingError(f"Can only {what} {getattr(types, '__name__', 'dicts')}, but got "
                              f"{type(obj).__name__}")
    return obj


def _pairs(d: dict, items: list) -> dict:
    if len(items) % 2:
        raise UnpicklingError("data.pkl is malformed: odd number of items for a dict")
    try:
        for i in range(0, len(items), 2):
            d[items[i]] = items[i + 1]
    except TypeError as e:
        raise UnpicklingError(f"data.pkl is malformed: {e}") from None     # an unhashable key
    return d


# ----- the small constructors a checkpoint may call besides tensors -----------------------------------
def _codecs_encode(obj, encoding="utf-8", errors="strict"):
    # protocol 2 writes bytes as _codecs.encode(str, 'latin1'); no other codec is looked up (a lookup can
    # import a module)
    if type(obj) is not str or encoding not in ("latin1", "latin-1", "utf-8", "utf8") or errors != "strict":
        raise UnpicklingError("_codecs.encode is allowed only as encode(str, 'latin1') (how pickle writes bytes)")
    return obj.encode(encoding)


def _bytearray(*args):
    # bytearray(n) would allocate n bytes: only the pickle form bytearray(bytes) is accepted.
    if len(args) > 1 or (args and type(args[0]) not in (bytes, bytearray)):
        raise UnpicklingError("builtins.bytearray is allowed only on bytes")
    return bytearray(*args)


def _set(*args):
    if len(args) > 1 or (args and type(args[0]) not in (list, tuple, set)):
        raise UnpicklingError("builtins.set is allowed only on a list")
    return set(*args)


def _complex(*args):
    if len(args) > 2 or not all(type(a) in (int, float) for a in args):
        raise UnpicklingError("builtins.complex is allowed only on numbers")
    return complex(*args)


def _ordered_dict(*args):
    if len(args) > 1 or (args and type(args[0]) not in (list, tuple, dict, OrderedDict)):
        raise UnpicklingError("collections.OrderedDict is allowed only on a list of pairs")
    return OrderedDict(*args)


def _counter(*args):
    if len(args) > 1 or (args and type(args[0]) not in (dict, OrderedDict)):
        raise UnpicklingError("collections.Counter is allowed only on a dict")
    return Counter(*args)


BASIC_GLOBALS: dict[str, Any] = {
    "collections.OrderedDict": _ordered_dict,
    "collections.Counter": _counter,
    "_codecs.encode": _codecs_encode,
    "builtins.bytearray": _bytearray,
    "builtins.set": _set,
    "builtins.complex": _complex,
}

_NEWOBJ = {_ordered_dict: OrderedDict, _counter: Counter}


# opcode -> bytes of argument, for the static scan (PyTorch's get_globals_in_pkl: protocol 2's opcodes only)
_SCAN_FIXED = {b"\x81": 0, b"R": 0, b"b": 0, b"a": 0, b"e": 0, b"s": 0, b"u": 0, b"(": 0, b"t": 0, b"\x85": 0,
               b"\x86": 0, b"\x87": 0, b"N": 0, b"\x89": 0, b"\x88": 0, b")": 0, b"]": 0, b"}": 0, b"\x8f": 0,
               b"Q": 0, b"J": 4, b"K": 1, b"M": 2, b"G": 8, b"h": 1, b"j": 4, b"q": 1, b"r": 4}


def globals_in_pickle(data: bytes) -> set[str]:
    """The ``module.name`` of every GLOBAL in a protocol-2 pickle, read without running anything (PyTorch's
    ``get_globals_in_pkl``: Python 2 names mapped as pickle maps them, other opcodes refused)."""
    import io
    from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING

    f = io.BytesIO(data)
    found: set[str] = set()
    while True:
        key = f.read(1)
        if not key:
            raise EOFError
        if key == b"c":
            module = f.readline()[:-1].decode("utf-8")
            name = f.readline()[:-1].decode("utf-8")
            if (module, name) in NAME_MAPPING:
                module, name = NAME_MAPPING[(module, name)]
            elif module in IMPORT_MAPPING:
                module = IMPORT_MAPPING[module]
            found.add(f"{module}.{name}")
        elif key in _SCAN_FIXED:
            f.read(_SCAN_FIXED[key])
        elif key == b"X":
            f.read(struct.unpack("<I", f.read(4))[0])
        elif key in (b"U", b"\x8a"):
            f.read(f.read(1)[0])
        elif key == b"\x80":
            f.read(1)
        elif key == b".":
            return found
        else:
            raise UnpicklingError(f"Unsupported operand {key[0]}")

