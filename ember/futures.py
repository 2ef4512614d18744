"""torch.futures: ``Future``, ``collect_all``, ``wait_all``.

A Future holds a result that arrives later: set by ``set_result``/``set_exception``, or, for the future of a
collective (``dist.all_reduce(..., async_op=True).get_future()``), by the operation it waits on. There is no
background thread here: a future is completed when someone asks (``wait``, ``value`` after ``done``), and the
callbacks of ``then``/``add_done_callback`` run at that moment, in the order they were added. So a chain
``work.get_future().then(f)`` costs nothing until it is waited on, and the communication overlaps what runs in
between, as DistributedDataParallel's communication hooks expect.
"""
from __future__ import annotations

import traceback
import types
from typing import Any, Callable

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A result to come (PyTorch's ``torch.futures.Future``); ``Future[T]`` in annotations."""

    __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, *, devices: list | None = None) -> None:
        self._done = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[["Future"], None]] = []
        self._drive: Callable[[], None] | None = None   # completes this future (waits on what it depends on)
        self._poll: Callable[[], bool] | None = None    # tells, without waiting, whether _drive would not block

    def _complete(self, result: Any, exception: BaseException | None) -> None:
        if self._done:
            raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can "
                               "only be marked completed once.")
        self._done, self._result, self._exception = True, result, exception
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def done(self) -> bool:
        """True once the result (or an error) is there."""
        if not self._done and self._poll is not None and self._poll():
            self._drive()
        return self._done

    def wait(self) -> Any:
        """The result, once there (raises the error the future was completed with)."""
        if not self._done and self._drive is not None:
            self._drive()
        if not self._done:   # nothing will ever complete it (PyTorch would block forever)
            raise RuntimeError("Future.wait(): the future is not completed and nothing will complete it (call "
                               "set_result or set_exception first)")
        if self._exception is not None:
            raise self._exception
        return self._result

    def value(self) -> Any:
        """The result of a completed future."""
        return self.wait()

    def set_result(self, result: Any) -> None:
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def add_done_callback(self, callback: Callable[["Future"], None]) -> None:
        """Run ``callback(self)`` when the future completes (now if it has)."""
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def then(self, callback: Callable[["Future"], Any]) -> "Future":
        """A future of ``callback(self)``, run once this one completes; an error in it completes the new future
        with PyTorch's RuntimeError."""
        out = Future()

        def run(fut: "Future") -> None:
            try:
                value = callback(fut)
            except Exception as e:   # noqa: BLE001  (delivered through the future, as PyTorch does)
                text = "".join(traceback.format_exception_only(type(e), e)).strip()
                out.set_exception(RuntimeError(f"Got the following error when running the callback: {text}"))
            else:
                out.set_result(value)
        out._drive = self._finish
        out._poll = self.done
        self.add_done_callback(run)
        return out

    def _finish(self) -> None:
        if not self._done and self._drive is not None:
            self._drive()


def collect_all(futures: list) -> Future:
    """A future of the list of ``futures``, completed when all of them are."""
    out = Future()

    def drive() -> None:
        for f in futures:
            f._finish()
        if not out._done:
            out.set_result(list(futures))
    out._drive = drive
    out._poll = lambda: all(f.done() for f in futures)
    return out


def wait_all(futures: list) -> list:
    """The results of ``futures``, waiting for each."""
    return [f.wait() for f in futures]
