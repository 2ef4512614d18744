"""What runs inside a DataLoader worker process (``torch.utils.data._utils.worker``).

A worker seeds itself as PyTorch's do (``random`` and ember with ``base_seed + worker_id``, NumPy with the
SeedSequence state of ``[worker_id, base_seed low, base_seed high, 0]``), so randomness drawn inside a dataset
matches PyTorch's worker for worker. It then answers ``(idx, index)`` requests from its index queue with
``(idx, pickled batch)`` on the shared data queue. Batches are pickled here, not by the queue's feeder
thread, so an unpicklable batch becomes an error the main process raises instead of a batch lost forever.
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ops import public as _torch   # the torch namespace of the op layer (the root imports this package)
from ._fetch import _DatasetKind, _make_fetcher

_POLL_S = 1.0               # how often the main process, waiting for a batch, checks its workers are alive
_WORKER_POLL_S = 0.2        # how often an idle worker checks the main process and the shutdown event
_worker_info = None         # this process's WorkerInfo; None in the main process


@dataclass(frozen=True)
class WorkerInfo:
    """``get_worker_info()`` inside a worker: its id, the number of workers, its seed and its dataset copy."""
    id: int
    num_workers: int
    seed: int
    dataset: Any
    worker_method: str = "multiprocessing"


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Start a new epoch (persistent workers): rebuild the fetcher and acknowledge."""
    seed: int | None = None


class _KeyErrorMessage(str):
    # KeyError shows repr() of its argument; keep the traceback's newlines readable
    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and raised there with the worker's
    traceback in its message."""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.exc_type: type | None = exc_type
        self.type_name = exc_type.__name__ if exc_type is not None else "Exception"
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.type_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is None:
            raise RuntimeError(msg)
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            err = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise err


def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    _torch.manual_seed(seed)
    # PyTorch hashes (worker_id, base_seed) the way NumPy's SeedSequence does, so NumPy's own reproduces it
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(4))
    return seed


def _dump(obj: Any, worker_id: int) -> bytes:
    where = f"in DataLoader worker process {worker_id}"
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except Exception:
        if isinstance(obj, ExceptionWrapper):
            obj.exc_type = None         # an exception class defined where it cannot be pickled: RuntimeError
            return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        return pickle.dumps(ExceptionWrapper(where + " (its batch could not be pickled)"), pickle.HIGHEST_PROTOCOL)


def _worker_loop(dataset_kind: int, dataset, index_queue, data_queue, done_event, auto_collation: bool,
                 collate_fn, drop_last: bool, base_seed: int, init_fn, worker_id: int, num_workers: int) -> None:
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _make_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where)       # answered to the first request
        ended = False                                   # the iterable dataset is exhausted this epoch
        parent = os.getppid()
        while os.getppid() == parent:                   # stop if the main process died
            try:
                r = index_queue.get(timeout=_WORKER_POLL_S)
            except queue.Empty:
                if done_event.is_set():
                    # shut down without our final None: it can be lost when the main process's iterator is
                    # collected in a cycle (its queue's feeder thread is finalised before the iterator)
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                ended = False
                fetcher = _make_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or ended:
                continue                                # wait for the final None
            idx, index = r
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if dataset_kind != _DatasetKind.Iterable:
                        data = ExceptionWrapper(where)
                    else:
                        data, ended = _IterableDatasetStopIteration(worker_id), True
                except Exception:
                    data = ExceptionWrapper(where)
            data_queue.put((idx, _dump(data, worker_id)))
            del data, r
    except KeyboardInterrupt:
        pass                                            # the main process raises it
    if done_event.is_set():
        # nobody reads the rest: do not block this process's exit on flushing it
        data_queue.cancel_join_thread()
        data_queue.close()
