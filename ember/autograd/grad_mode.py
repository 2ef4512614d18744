"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode. Thread-local."""
from __future__ import annotations

import functools
import inspect
import sys


from .._state import _state, fwd_state  # noqa: F401  (the modes' thread-local state, shared with Tensor)


def is_grad_enabled() -> bool:
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _DecoratorContextManager:
    """Usable as ``with mode():`` and as ``@mode()`` (or bare ``@mode`` for no_grad/enable_grad)."""

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        """As PyTorch: the mode holds while the generator body runs, not between its yields."""
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException:
                        with self.clone():
                            response = gen.throw(*sys.exc_info())
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as e:
                return e.value
        return wrapper

    def clone(self):
        return self.__class__()


class _FixedMode(_DecoratorContextManager):
    """Sets grad mode to ``_mode`` inside; also usable as a bare decorator (``@no_grad``)."""

    _mode = True

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc):
        _state.enabled = self.prev


class no_grad(_FixedMode):
    """Operations inside record no graph: results have ``requires_grad=False``."""

    _mode = False


class enable_grad(_FixedMode):
    """Re-enable graph recording, e.g. inside ``no_grad``."""

    _mode = True


class set_grad_enabled(_DecoratorContextManager):
    """``set_grad_enabled(mode)``: a context manager, a decorator, or (called plainly) a setter."""

    def __init__(self, mode: bool):
        # As PyTorch: a bool only; bool('no') is True, which would turn gradients on silently.
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(mode).__name__}")
        self.prev = _state.enabled
        self.mode = mode
        _state.enabled = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        _state.enabled = self.prev  # used as a decorator: the call above must not stick
        return super().__call__(fn)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors made inside are flagged as inference tensors."""

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): argument 'mode' must be bool, not {type(mode).__name__}")
        return super().__new__(cls)

    def __enter__(self):
        self.prev = (_state.enabled, _state.inference)
        # As PyTorch's InferenceMode(enabled): grad mode is set to ``not enabled``.
        _state.enabled = not self.mode
        _state.inference = self.mode

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)

