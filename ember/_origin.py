"""Where things happened: the user's line behind an op, for anomaly mode and ``autograd.explain``.

Low in the package (Tensor uses it), so it imports nothing of ember's.
"""
from __future__ import annotations

import linecache
import os
import sys
import warnings

_EMBER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NN_DIR = _EMBER_DIR + "nn" + os.sep


def internal(filename: str) -> bool:
    """A frame of ember's own machinery (ops, autograd, Tensor), which PyTorch runs in C++ and so never
    shows in a forward traceback. ember.nn stays visible, as torch/nn does."""
    return filename.startswith(_EMBER_DIR) and not filename.startswith(_NN_DIR)


def user_frame(depth: int = 1):
    """The innermost frame outside ember's machinery, starting ``depth`` frames above the caller."""
    f = sys._getframe(depth + 1)
    while f is not None and internal(f.f_code.co_filename):
        f = f.f_back
    return f


def user_site(depth: int = 1) -> tuple | None:
    """``(filename, lineno)`` of the user's line that called into ember (cheap: no source is read)."""
    f = user_frame(depth + 1)
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def site(filename: str, lineno: int, name: str | None = None) -> str:
    """``file:line in name: source`` for messages."""
    where = f"{filename}:{lineno}" + (f" in {name}" if name else "")
    src = linecache.getline(filename, lineno).strip()
    return f"{where}: {src}" if src else where


def last_frame(stack) -> str | None:
    """The innermost frame of a recorded forward traceback (``node.metadata["traceback_"]``) as
    ``file:line in name: source``; None without one."""
    if not stack:
        return None
    first = str(stack[-1]).strip().splitlines()[0].strip()   # 'File "x.py", line 3, in f'
    try:
        fname = first.split('"')[1]
        lineno_s, _, name = first.split('", line ')[1].partition(", in ")
        return site(fname, int(lineno_s), name or None)
    except (IndexError, ValueError):
        return first


def created_at(node) -> str | None:
    """Where ``node`` was made, if anomaly mode recorded it."""
    md = getattr(node, "_metadata", None)
    return last_frame(md.get("traceback_")) if md else None


def warn_user(message: str, category: type = UserWarning) -> None:
    """``warnings.warn`` attributed to the user's line that called into ember's machinery (where PyTorch's
    C++ warnings surface)."""
    level, f = 2, sys._getframe(1)
    while f is not None and internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_WARNED: set = set()


def warn_once(key: str, message: str, category: type = UserWarning) -> None:
    """PyTorch's TORCH_WARN_ONCE: ``warn_user`` the first time only, in this process."""
    if key not in _WARNED:
        _WARNED.add(key)
        warn_user(message, category)
