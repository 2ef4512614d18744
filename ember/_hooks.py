"""Removable hook handles (public as ember.utils.hooks.RemovableHandle)."""
from __future__ import annotations

import itertools

_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` takes the hook out again."""

    __slots__ = ("_store", "id")

    def __init__(self, store: dict):
        self._store = store
        self.id = next(_ids)

    def remove(self) -> None:
        self._store.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# Moves at every hook registered anywhere: a caller that found no hooks on some objects at one count knows that
# none were added since while it reads the same (ember.compile's node checks its leaves once per count).
HOOK_COUNT = [0]


def add_hook(store: dict, fn) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"hook must be callable, got {type(fn).__name__}")
    HOOK_COUNT[0] += 1
    h = RemovableHandle(store)
    store[h.id] = fn
    return h
