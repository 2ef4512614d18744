"""torch.distributed.algorithms.join: training with uneven inputs (``Join``, ``Joinable``, ``JoinHook``).

Ranks that run out of inputs early must keep taking part in the collectives the others still make, or those
hang. Inside ``with Join([ddp_model, ...]):`` every forward of a still-active rank first all-reduces a 1
(``Join.notify_join_context``); a rank that leaves the loop enters ``__exit__`` and, round after round,
all-reduces a 0 (the sum tells how many ranks are still active) and runs each joinable's ``main_hook``, which
makes the same collectives the active ranks' iteration makes (with zeros). When the sum is 0 every rank has left;
then each ``post_hook`` runs (DistributedDataParallel: the parameters of the last rank to leave go to all).
``throw_on_early_termination=True``: instead, every rank raises once one has run out.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NamedTuple

from ...ops import creation as _creation


def _dist():   # (imported on first use: ember.nn.parallel imports this module with ember)
    from .. import distributed_c10d
    return distributed_c10d

__all__ = ["JoinHook", "Joinable", "Join"]

_SKEW_WARNING = 1000   # rounds after which a joined rank warns of the skew


class JoinHook:
    """What a joined rank does for a joinable: ``main_hook`` each round while others are active (shadowing their
    collectives), ``post_hook(is_last_joiner)`` once all have joined."""

    def main_hook(self) -> None:
        """Shadow one iteration of an active rank's collectives."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """After every rank has joined."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config() -> "_JoinConfig":
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """A class usable in ``Join``: gives a ``join_hook``, its ``join_device`` and ``join_process_group``, and calls
    ``Join.notify_join_context(self)`` at each iteration."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs: Any) -> JoinHook:
        ...

    @property
    @abstractmethod
    def join_device(self) -> Any:
        ...

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        ...


class Join:
    """The context manager for uneven inputs (see the module's docstring); ``kwargs`` go to every join hook."""

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs: Any) -> None:
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [j.join_hook(**kwargs) for j in joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for k, j in enumerate(joinables):   # the first joinable makes the per-iteration collectives
            j._join_config = _JoinConfig(enable, throw_on_early_termination, k == 0)
        groups = {id(j.join_process_group): j.join_process_group for j in joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = joinables[0].join_process_group
        self._rank = _dist().get_rank(self._process_group)

    def __enter__(self) -> "Join":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if not self._enable or exc_type is not None:
                return   # an exception goes on as it is
            is_last_joiner = True
            rounds = 0
            while self._count_active(0):
                if rounds == _SKEW_WARNING + 1:
                    import warnings
                    warnings.warn(f"Detected uneven input skew of greater than {_SKEW_WARNING}. This means that "
                                  f"rank {self._rank} has at least {_SKEW_WARNING} fewer inputs than other "
                                  "currently-active ranks. This level of skew could lead to performance "
                                  "degradation during training.", stacklevel=2)
                if self._throw_on_early_termination:
                    self._count_active(1)
                    raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                rounds += 1
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
        finally:
            for j in self._joinables:
                j._join_config = _JoinConfig.construct_disabled_join_config()

    def _count_active(self, mine: int) -> int:
        t = _creation.tensor([float(mine)])
        _dist().all_reduce(t, group=self._process_group)
        return int(t.item())

    @staticmethod
    def notify_join_context(joinable: Joinable) -> Any:
        """Called by an active rank's joinable each iteration: all-reduces a 1 (the joined ranks all-reduce 0s);
        the Work of it, or None outside a join context or for a joinable that is not the first."""
        config = getattr(joinable, "_join_config", None)
        if config is None:
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        if not config.is_first_joinable or not config.enable:
            return None
        group = joinable.join_process_group
        dist = _dist()
        ones = _creation.ones(1)
        work = dist.all_reduce(ones, group=group, async_op=True)
        if config.throw_on_early_termination:
            zeros = _creation.zeros(1)
            dist.all_reduce(zeros, group=group)
            if zeros.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
