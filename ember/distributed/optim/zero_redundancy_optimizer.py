"""``ZeroRedundancyOptimizer``: each rank keeps the optimizer state of its own share of the parameters (ZeRO
stage 1) and updates only those; after the local step, every parameter is broadcast from the rank that owns it.

The share is PyTorch's: parameter group by parameter group, the group's parameters in order of decreasing size
(``numel``; equal sizes keep their order) each go to the rank whose running total of elements is smallest (the
lowest rank among equals), the totals carrying over from group to group. ``state_dict`` has the layout of the plain
optimizer's once ``consolidate_state_dict(to)`` has gathered the shards on rank ``to``; ``load_state_dict`` takes
such a dictionary on every rank and keeps the state of the rank's own parameters.
"""
from __future__ import annotations

import logging
from itertools import chain
from typing import Any, Callable

from ..._tensor import Tensor
from ...ops.creation import empty, zeros
from ...optim.optimizer import Optimizer
from .. import distributed_c10d as c10d
from ..algorithms.join import Join, JoinHook, Joinable

__all__ = ["ZeroRedundancyOptimizer"]

logger = logging.getLogger(__name__)


def _copied_to(value: Any, device: Any) -> Any:
    """``value`` (a state entry: tensors in dicts, lists, tuples) with its tensors copied to ``device``."""
    if isinstance(value, Tensor):
        return value.detach().to(device, copy=True)
    if isinstance(value, dict):
        return {k: _copied_to(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copied_to(v, device) for v in value)
    return value


def _sync_param_groups(src: list, dst: list) -> None:
    """Copy every hyperparameter (not ``params``) of the groups ``src`` onto the groups ``dst``."""
    if len(src) != len(dst):
        raise AssertionError("Mismatch between number of source and destination parameter groups")
    for s, d in zip(src, dst):
        for key, value in s.items():
            if key != "params":
                d[key] = value


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """Wraps ``optimizer_class`` so that each rank of ``process_group`` holds the state of its share of ``params``
    (PyTorch's partition, see the module's docstring) and ``step`` updates its share, then broadcasts it.

    ``parameters_as_bucket_view=True`` makes each rank's parameters views into one flat tensor per rank, broadcast
    whole. ``overlap_with_ddp=True`` (the update run inside DDP's communication hook) is not supported. A
    ``Joinable``: in ``Join([ddp, zero])`` a rank that has run out of inputs keeps stepping (with the gradients it
    has) so that the others' broadcasts find it."""

    def __init__(self, params, optimizer_class: type, process_group: Any = None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False, **defaults: Any):
        if overlap_with_ddp:
            raise NotImplementedError("ember: ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported (it "
                                      "runs the update in DDP's communication hook); use overlap_with_ddp=False")
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        self.initialized = False
        Optimizer.__init__(self, params, defaults)
        Joinable.__init__(self)
        self._partition_cache: list = []
        self._param_to_rank_cache: dict = {}
        self._index_cache: list = []
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._default_device = self._all_params[0].device
        self.process_group = process_group if process_group is not None else c10d.GroupMember.WORLD
        self.world_size: int = c10d.get_world_size(self.process_group)
        self.rank: int = c10d.get_rank(self.process_group)
        self.global_rank: int = c10d.get_global_rank(self.process_group, self.rank)
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        # passing the groups (not a flat list) lets a rank with no parameters make its optimizer
        self.optim: Optimizer = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        _sync_param_groups(self.optim.param_groups, self.param_groups)
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets: list = []
        self._build_param_buckets()
        self._all_state_dicts: list = []
        self.initialized = True

    # ----- checks ---------------------------------------------------------------------------------------------
    def _verify_and_init_params(self, params: Any) -> list:
        if isinstance(params, Tensor):
            raise TypeError(f"`params` argument should be an iterable of Tensors, but got {params.type()}")
        try:
            given = list(params)
        except TypeError as e:
            raise TypeError(f"`params` argument should be an iterable of Tensors or dicts, but got "
                            f"{type(params).__module__}.{type(params).__name__}") from e
        if not given:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, Tensor) for p in given):
            self._all_params = list(given)
        elif all(isinstance(g, dict) for g in given):
            if any("params" not in g for g in given):
                raise ValueError("Each parameter group passed-in via `params` must have a 'params' key mapping to "
                                 "the parameters in the group")
            self._all_params = [p for g in given for p in g["params"]]
        else:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        return given

    def _verify_same_dense_param_type(self) -> None:
        first = self._all_params[0].type()
        if getattr(self._all_params[0], "is_sparse", False):   # (ember has no sparse tensors yet)
            raise ValueError(f"ZeroRedundancyOptimizer only supports using the same dense type for all parameters "
                             f"but got {first}")
        for p in self._all_params[1:]:
            if p.type() != first:
                raise ValueError(f"ZeroRedundancyOptimizer only supports using the same dense type for all "
                                 f"parameters but got both {first} and {p.type()}")

    def _get_is_trainable_mask(self) -> list:
        return [p.requires_grad for p in self._all_params]

    # ----- the partition --------------------------------------------------------------------------------------
    def _clear_cache(self) -> None:
        self._partition_cache = []
        self._param_to_rank_cache = {}
        self._index_cache = []

    def _partition_parameters(self, params_per_rank: list | None = None) -> list:
        """For each rank, its parameter groups: each of this optimizer's groups with the rank's share of its
        parameters (``params_per_rank``: a given share of the one group)."""
        if params_per_rank is not None:
            if self._partition_cache:
                raise AssertionError("Specifying `params_per_rank` should only be done when the parameters have "
                                     "not been partitioned yet")
            if len(self.param_groups) != 1:
                raise RuntimeError("Specifying `params_per_rank` only supports a single parameter group")
            if len(params_per_rank) != self.world_size:
                raise ValueError("`params_per_rank` must have length equal to the world size")
            known = set(map(id, self._all_params))
            if any(id(p) not in known for share in params_per_rank for p in share):
                raise ValueError("Passing a new parameter in `params_per_rank` that was not passed into the "
                                 "ZeroRedundancyOptimizer constructor")
            self._partition_cache = [[dict(self.param_groups[0], params=list(share))] for share in params_per_rank]
            return self._partition_cache
        if not self._partition_cache:
            filled = [0] * self.world_size
            per_rank: list = [[] for _ in range(self.world_size)]
            for group in self.param_groups:
                shares: list = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):   # stable
                    lightest = min(range(self.world_size), key=filled.__getitem__)          # first of equals
                    shares[lightest].append(p)
                    filled[lightest] += p.numel()
                for r in range(self.world_size):
                    per_rank[r].append(dict(group, params=shares[r]))
            self._partition_cache = per_rank
        return self._partition_cache

    @property
    def _param_to_rank(self) -> dict:
        """{parameter: its owner's rank} (keyed by the tensor, as PyTorch's)."""
        if not self._param_to_rank_cache:
            self._param_to_rank_cache = {p: r for r, groups in enumerate(self._partition_parameters())
                                         for g in groups for p in g["params"]}
        return self._param_to_rank_cache

    @property
    def _index_to_param(self) -> list:
        """The parameters in the order of the optimizer's state_dict indices."""
        if not self._index_cache:
            self._index_cache = list(chain.from_iterable(g["params"] for g in self.param_groups))
        return self._index_cache

    @property
    def _param_to_index(self) -> dict:
        return {p: i for i, p in enumerate(self._index_to_param)}

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (on every rank): its parameters are shared out after the others' (which keep their
        owners), and this rank's local optimizer gets its share."""
        super().add_param_group(param_group)
        if self.initialized:
            self._clear_cache()
            mine = self._partition_parameters()[self.rank]
            if len(mine) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(mine[-1])
            if self.parameters_as_bucket_view:
                self._build_param_buckets()

    # ----- buckets --------------------------------------------------------------------------------------------
    def _build_param_buckets(self) -> None:
        """``parameters_as_bucket_view``: per device and rank, one flat tensor whose slices the rank's trainable
        parameters become (``param.data``); a frozen parameter gets memory of its own back."""
        if not self.parameters_as_bucket_view:
            return
        by_device: dict = {}
        for r, groups in enumerate(self._partition_parameters()):
            for g in groups:
                for p in g["params"]:
                    by_device.setdefault(p.device, [[] for _ in range(self.world_size)])[r].append(p)
        self._buckets = []
        for device, shares in by_device.items():
            row = []
            for share in shares:
                trainable = []
                for p in share:
                    if p.requires_grad:
                        trainable.append(p)
                    else:
                        p.data = p.data.detach().clone()
                total = sum(p.numel() for p in trainable)
                if total == 0:
                    row.append(zeros(1, device=device))
                    continue
                bucket = empty(total, dtype=share[0].dtype, device=device)
                at = 0
                for p in trainable:
                    n = p.numel()
                    bucket[at:at + n].copy_(p.data.flatten())
                    p.data = bucket[at:at + n].view_as(p.data)
                    at += n
                row.append(bucket)
            self._buckets.append(row)

    # ----- the step -------------------------------------------------------------------------------------------
    def _local_step(self, closure: Callable | None = None, **kwargs: Any) -> Any:
        Join.notify_join_context(self)
        mask = self._get_is_trainable_mask()
        if mask != self._is_trainable_mask:
            logger.warning("ZeroRedundancyOptimizer detected that the trainable parameters changed; rebuilding the "
                           "parameter buckets if enabled")
            self._build_param_buckets()
            self._is_trainable_mask = mask
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else self.optim.step(closure=closure, **kwargs)
        _sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def _sync_params(self) -> None:
        """Broadcast every rank's share from it (bucket by bucket, or parameter by parameter), all in flight."""
        works = []
        for r in range(self.world_size):
            src = c10d.get_global_rank(self.process_group, r)
            if self.parameters_as_bucket_view:
                tensors = [row[r] for row in self._buckets]
            else:
                tensors = [p.detach() for g in self._partition_parameters()[r] for p in g["params"]]
            works += [c10d.broadcast(t, src=src, group=self.process_group, async_op=True) for t in tensors]
        for w in works:
            w.wait()

    def step(self, closure: Callable | None = None, **kwargs: Any) -> Any:
        """The local optimizer's step on this rank's share, then every share broadcast from its owner."""
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    def join_hook(self, **kwargs: Any) -> JoinHook:
        """What a rank out of inputs does in a ``Join``: a step each round (its gradients as they are), whose
        broadcasts meet the active ranks'."""
        return _ZeROJoinHook(self)

    @property
    def join_device(self) -> Any:
        return self._default_device

    @property
    def join_process_group(self) -> Any:
        return self.process_group

    # ----- state ----------------------------------------------------------------------------------------------
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's local optimizer state on rank ``to`` (called on every rank), for ``state_dict``."""
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        self._all_state_dicts = []
        for r in range(self.world_size):   # each rank's state broadcast from it in turn (every rank takes part)
            box = [self.optim.state_dict() if r == self.rank else None]
            if self.world_size > 1:
                c10d.broadcast_object_list(box, src=c10d.get_global_rank(self.process_group, r),
                                           group=self.process_group)
            if self.rank == to:
                self._all_state_dicts.append(box[0])

    def state_dict(self) -> dict:
        """The whole optimizer's state, in the plain optimizer's layout (after ``consolidate_state_dict`` to this
        rank; as recent as that call)."""
        if not self._all_state_dicts:
            raise RuntimeError(f"Optimizer state has not been consolidated on this rank. Please call "
                               f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                               f"save the global state.")
        sd = super().state_dict()
        index = self._param_to_index
        for r, local in enumerate(self._all_state_dicts):
            owned = self._partition_parameters()[r]
            if len(local["param_groups"]) != len(owned):
                raise AssertionError("Mismatch between number of local and global parameter groups")
            for lg, g in zip(local["param_groups"], owned):
                if len(lg["params"]) != len(g["params"]):
                    raise AssertionError("Mismatch between number of local and global parameters in parameter "
                                         "group")
                for i, p in zip(lg["params"], g["params"]):
                    if i in local["state"]:
                        sd["state"][index[p]] = local["state"][i]
        sd["state"] = dict(sorted(sd["state"].items()))
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a whole optimizer's state (``state_dict()``'s or a plain optimizer's) on every rank: each keeps
        the state of its own parameters, and every rank takes the hyperparameters."""
        owner = self._param_to_rank
        mine = {}
        for i, value in state_dict["state"].items():
            p = self._index_to_param[i]
            if owner[p] == self.rank:
                local = _copied_to(value, p.device)
                for k, v in local.items():   # a 0-dim tensor (Adam's step) stays on the host, as PyTorch's
                    if isinstance(v, Tensor) and v.dim() == 0:
                        local[k] = v.cpu()
                self.optim.state[p] = local
                mine[i] = value
        super().load_state_dict({"state": mine, "param_groups": state_dict["param_groups"]})
        _sync_param_groups(state_dict["param_groups"], self.param_groups)
        _sync_param_groups(self.param_groups, self.optim.param_groups)


class _ZeROJoinHook(JoinHook):
    """A joined rank's ZeroRedundancyOptimizer: one step per round (its share updated and broadcast)."""

    def __init__(self, zero: ZeroRedundancyOptimizer) -> None:
        self.zero = zero

    def main_hook(self) -> None:
        self.zero.step()
