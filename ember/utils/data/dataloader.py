"""``DataLoader`` (``torch.utils.data.dataloader``): a dataset + a sampler -> an iterable of batches.

Each ``iter(loader)`` draws one int64 ``base_seed`` from ``generator`` (or the default generator), as
PyTorch's iterator does even without workers, before the sampler's first draw; with the same seed the
batches, their order and the generator's state afterwards are PyTorch's.

``num_workers > 0`` loads in worker processes (``multiprocessing``, the platform's default start method unless
``multiprocessing_context`` says otherwise), as PyTorch's: batches are handed out round-robin, up to
``prefetch_factor`` per worker ahead, and returned in order (``in_order``); worker ``i`` is seeded with
``base_seed + i`` (ember, ``random`` and NumPy as PyTorch seeds them), so a dataset's own random draws match
PyTorch's too. Differences: no pinned memory (there is no accelerator), batches travel pickled rather than
in shared memory.
"""
from __future__ import annotations

import collections.abc
import itertools
import math
import multiprocessing
import multiprocessing.context
import os
import pickle
import queue
import warnings
from typing import Any, Callable, Generic, Iterable, TypeVar

from ...ops import public as _torch   # the torch namespace of the op layer (the root imports this package)
from ...ops.random import Generator
from . import _worker
from ._fetch import _DatasetKind, _make_fetcher  # noqa: F401  (_DatasetKind: torch.utils.data's name)
from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

_T_co = TypeVar("_T_co", covariant=True)

def get_worker_info() -> _worker.WorkerInfo | None:
    """In a DataLoader worker process: its ``id``, ``num_workers``, ``seed`` and ``dataset`` (this process's
    copy); ``None`` in the main process."""
    return _worker._worker_info


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the placeholder "index" for an iterable-style dataset."""

    def __iter__(self):
        while True:
            yield None


class DataLoader(Generic[_T_co]):
    """Iterate over ``dataset`` in batches (``torch.utils.data.DataLoader``).

    ``batch_size`` samples per batch (``None``: no batching, samples one by one through ``default_convert``),
    in order or ``shuffle``d (a ``RandomSampler`` on ``generator``), or in the order of a custom ``sampler``
    or ``batch_sampler``; ``drop_last`` drops a short last batch; ``collate_fn`` merges a batch
    (``default_collate``). ``pin_memory`` is accepted and has no effect
    (with PyTorch's warning, as on a machine without an accelerator). ``num_workers > 0`` loads in worker
    processes (see the module's notes).
    """

    __initialized = False

    def __init__(self, dataset: Dataset[_T_co], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable | None = None,
                 multiprocessing_context=None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let "
                             "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        # dataset-kind errors first, so an iterable dataset's user hears that samplers do not apply to it
        # before fixing a sampler
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None    # len(loader) of an iterable dataset, to warn on overrun
        self._iterator = None

        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx) -> None:
        if ctx is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(ctx, str):
                methods = multiprocessing.get_all_start_methods()
                if ctx not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={ctx!r}")
                ctx = multiprocessing.get_context(ctx)
            if not isinstance(ctx, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={ctx}")
        self.__multiprocessing_context = ctx

    # -- the attributes that decide the batches are fixed once built, as in PyTorch
    def __setattr__(self, attr: str, val) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the fetcher is driven by: batches of indices when batching, single indices otherwise
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> _BaseDataLoaderIter:
        # persistent workers: one iterator (and one set of processes) for the loader's life; its later
        # epochs draw no new base seed, as in PyTorch
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            # trust the dataset's own length (TypeError if it has none), in batches
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than this process may use CPUs (PyTorch's warning)."""
        if not self.num_workers:
            return
        checked = hasattr(os, "sched_getaffinity")
        try:
            cpus = len(os.sched_getaffinity(0)) if checked else os.cpu_count()
        except OSError:
            cpus = os.cpu_count()
        if cpus is None or self.num_workers > cpus:
            suggest = ("DataLoader is not able to compute a suggested max number of worker in current system."
                       if cpus is None else
                       f"Our suggested max number of worker in current system is {cpus}"
                       f"{'' if checked else ' (`cpuset` is not taken into account)'}, which is smaller than "
                       "what this DataLoader is going to create.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggest} "
                          "Please be aware that excessive worker creation might get DataLoader running slow or "
                          "even freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                          stacklevel=3)


def _pin(data):
    """A batch with its tensors in pinned memory (``pin_memory=True`` with a GPU): tensors, mappings, named and
    plain tuples, lists, and objects with their own ``pin_memory()``; anything else as it is."""
    if isinstance(data, _torch.Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {k: _pin(v) for k, v in data.items()}
        try:
            return type(data)(pinned)
        except TypeError:
            return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, (tuple, list)):
        pinned = [_pin(v) for v in data]
        return tuple(pinned) if isinstance(data, tuple) else pinned
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


class _BaseDataLoaderIter:
    """One pass over a DataLoader: what single- and multi-process loading share."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=5)
        self._pin_memory = False
        if loader.pin_memory:
            from ...devices.cuda import is_available   # (CuPy is imported on first use only)
            if is_available():
                self._pin_memory = True
            else:
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                              "memory won't be used.", stacklevel=5)   # the user's ``for`` line
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # PyTorch draws the workers' base seed even without workers: the generator advances the same
        self._base_seed = int(_torch.empty((), dtype=_torch.int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        if self._pin_memory:
            data = _pin(data)
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Loading in the main process."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0 (a timeout applies to "
                                 "worker processes only)")
        self._dataset_fetcher = _make_fetcher(self._dataset_kind, self._dataset, self._auto_collation,
                                              self._collate_fn, self._drop_last)

    def _next_data(self):
        return self._dataset_fetcher.fetch(self._next_index())


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Loading in ``num_workers`` processes.

    Task ``k`` (the k-th batch of indices) goes to the next active worker round-robin; at most
    ``prefetch_factor * num_workers`` tasks are out at once. ``_task_info[k]`` is ``(worker,)`` while task k is
    out and ``(worker, data)`` once it came back ahead of its turn; batches are returned in task order
    (or as they arrive with ``in_order=False``). An iterable dataset's worker that runs dry is sent no more
    tasks; the pass ends when no task is left.
    """

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._data_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues: list = []
        self._workers: list = []
        self._workers_status = [False] * self._num_workers   # set by _reset; until then nothing to signal
        self._shutdown = False
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()  # a dead worker must not block our exit on unread requests
            w = ctx.Process(target=_worker._worker_loop, daemon=True,
                            args=(self._dataset_kind, self._dataset, index_queue, self._data_queue,
                                  self._workers_done_event, self._auto_collation, self._collate_fn,
                                  self._drop_last, self._base_seed, loader.worker_init_fn, i, self._num_workers))
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            pending = self._num_workers
            while pending:                  # results of an abandoned pass still queued are dropped here
                idx, _ = self._get_data()
                if isinstance(idx, _worker._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float = _worker._POLL_S):
        try:
            return True, self._data_queue.get(timeout=timeout)
        except queue.Empty as e:
            dead = [w for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
            if dead:
                for i, w in enumerate(self._workers):
                    if w in dead:
                        self._mark_worker_as_unavailable(i)
                pids = ", ".join(str(w.pid) for w in dead)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from e
            return False, None

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            ok, data = self._try_get_data()
            if ok:
                return data

    def _next_data(self):
        while True:
            # skip tasks given to workers whose iterable dataset has run dry
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:      # arrived earlier, out of turn
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            data = pickle.loads(data)
            if isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            w = next(self._worker_queue_idx_cycle)
            if self._workers_status[w] and (
                    self._in_order or self._workers_num_tasks[w] < max_tasks // sum(self._workers_status)):
                break
        else:
            return                          # no active worker: the index is dropped, as in PyTorch
        self._index_queues[w].put((self._send_idx, index))
        self._task_info[self._send_idx] = (w,)
        self._workers_num_tasks[w] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id: int):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for i in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[i]:
                    self._mark_worker_as_unavailable(i)
            for w in self._workers:
                w.join(timeout=_worker._POLL_S)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker._POLL_S)

    def __del__(self) -> None:
        if getattr(self, "_shutdown", True):     # __init__ failed before any worker existed
            return
        try:
            self._shutdown_workers()
        except Exception:       # interpreter teardown: modules may already be gone
            pass
