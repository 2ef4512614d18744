"""torch.distributed's key-value stores: ``HashStore`` (one process), ``FileStore`` (processes sharing a file),
``TCPStore`` (a server in the master process, clients anywhere), ``PrefixStore``.

ember's process groups rendezvous through MPI and need no store; these are for scripts that use a store
themselves (to exchange a port, a path, a counter, a barrier of their own). Keys are strings, values bytes (a
str is stored encoded); ``get``/``wait`` block until the keys exist or the store's timeout passes
(DistStoreError). The TCP store speaks Python's ``multiprocessing.connection`` (length-prefixed pickles, with a
handshake on a fixed key), not PyTorch's wire format: an ember client talks to an ember server only.
"""
from __future__ import annotations

import datetime
import pickle
import threading
import time
from multiprocessing.connection import Client, Listener
from typing import Any

from ._errors import DistNetworkError, DistStoreError

__all__ = ["Store", "HashStore", "FileStore", "TCPStore", "PrefixStore", "QueueEmptyError"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)
_AUTHKEY = b"ember.distributed.TCPStore"
_WORKERS = "\0workers"   # the workers that joined a TCPStore/FileStore (counted by num_keys, as PyTorch's)


class QueueEmptyError(DistStoreError):
    """``queue_pop(block=False)`` on an empty queue."""


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, list):   # (PyTorch accepts a list of byte values)
        return bytes(value)
    raise TypeError(f"a store value must be str or bytes, not {type(value).__name__}")


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a store key must be str, not {type(key).__name__}")
    return key


def _seconds(timeout: Any) -> float:
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


class _Table:
    """The operations on a dict of keys, under the caller's lock; ``None`` from a blocking one: not yet."""

    @staticmethod
    def apply(data: dict, op: str, args: tuple) -> Any:
        if op == "set":
            data[args[0]] = args[1]
        elif op == "get":
            return data.get(args[0])
        elif op == "add":
            old = data.get(args[0], b"0")
            try:
                value = int(old) + int(args[1])
            except ValueError:
                raise ValueError("stoll") from None
            data[args[0]] = str(value).encode()
            return value
        elif op == "append":
            data[args[0]] = data.get(args[0], b"") + args[1]
        elif op == "compare_set":
            key, expected, desired = args
            if key not in data:
                if expected == b"":
                    data[key] = desired
                    return desired
                return expected
            if data[key] == expected:
                data[key] = desired
            return data[key]
        elif op == "check":
            return all(k in data for k in args[0])
        elif op == "delete_key":
            return data.pop(args[0], None) is not None
        elif op == "num_keys":
            return len(data)
        elif op == "list_keys":
            return [k for k in data if k != _WORKERS and not k.startswith("\0queue:")]
        elif op == "queue_push":
            data.setdefault("\0queue:" + args[0], []).append(args[1])
        elif op == "queue_pop":
            q = data.get("\0queue:" + args[0])
            if not q:
                return None
            if len(q) == 1:   # (an emptied queue is no key any more)
                del data["\0queue:" + args[0]]
            return q.pop(0)
        elif op == "queue_len":
            return len(data.get("\0queue:" + args[0], []))
        else:
            raise ValueError(f"unknown store operation {op!r}")
        return None


class Store:
    """torch.distributed.Store: the interface every store has (see the module's docstring)."""

    def __init__(self, timeout: Any = _DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout if isinstance(timeout, datetime.timedelta) else datetime.timedelta(seconds=timeout)

    # a store implements _do(op, args) (one step, under its lock) and _wait_error(keys, seconds)
    def _do(self, op: str, args: tuple) -> Any:
        raise NotImplementedError

    def _blocking(self, op: str, args: tuple, keys: list, timeout: float | None = None) -> Any:
        """Run ``op`` until it gives something (polling with a growing sleep), or raise at the timeout."""
        seconds = _seconds(self._timeout) if timeout is None else timeout
        deadline = time.monotonic() + seconds
        pause = 0.001
        while True:
            out = self._do(op, args)
            if out is not None and out is not False:
                return out
            if time.monotonic() >= deadline:
                raise self._wait_error(keys, seconds)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _wait_error(self, keys: list, seconds: float) -> Exception:
        return DistStoreError("Wait timeout")

    @property
    def timeout(self) -> datetime.timedelta:
        return self._timeout

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self._timeout = timeout

    def set(self, key: str, value: Any) -> None:
        self._do("set", (_key(key), _bytes(value)))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting for it up to the store's timeout."""
        return self._blocking("get", (_key(key),), [key])

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer at ``key`` (0 when missing); the new value."""
        return self._do("add", (_key(key), int(amount)))

    def append(self, key: str, value: Any) -> None:
        self._do("append", (_key(key), _bytes(value)))

    def compare_set(self, key: str, expected_value: Any, desired_value: Any) -> bytes:
        """Set ``desired_value`` if ``key`` holds ``expected_value`` (or is missing and ``expected_value`` is
        empty); the value the key holds afterwards (``expected_value`` when it is missing and that is not empty)."""
        return self._do("compare_set", (_key(key), _bytes(expected_value), _bytes(desired_value)))

    def check(self, keys: list) -> bool:
        """Whether every key exists (without waiting)."""
        return self._do("check", ([_key(k) for k in keys],))

    def wait(self, keys: list, timeout: datetime.timedelta | None = None) -> None:
        """Wait until every key exists (up to ``timeout``, default the store's)."""
        keys = [_key(k) for k in keys]
        self._blocking("check", (keys,), keys, None if timeout is None else _seconds(timeout))

    def delete_key(self, key: str) -> bool:
        return self._do("delete_key", (_key(key),))

    def num_keys(self) -> int:
        return self._do("num_keys", ())

    def list_keys(self) -> list:
        return self._do("list_keys", ())

    def multi_get(self, keys: list) -> list:
        return [self.get(k) for k in keys]

    def multi_set(self, keys: list, values: list) -> None:
        for k, v in zip(keys, values):
            self.set(k, v)

    def queue_push(self, key: str, value: Any) -> None:
        self._do("queue_push", (_key(key), _bytes(value)))

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        if not block:
            out = self._do("queue_pop", (_key(key),))
            if out is None:
                raise QueueEmptyError("queue is empty")
            return out
        return self._blocking("queue_pop", (_key(key),), [key])

    def queue_len(self, key: str) -> int:
        return self._do("queue_len", (_key(key),))

    def has_extended_api(self) -> bool:
        return True


class HashStore(Store):
    """A store in this process's memory (threads share it)."""

    def __init__(self) -> None:
        super().__init__()
        self._data: dict = {}
        self._lock = threading.Lock()

    def _do(self, op: str, args: tuple) -> Any:
        with self._lock:
            return _Table.apply(self._data, op, args)


class FileStore(Store):
    """A store in a file that processes on one machine (or a shared file system with locks) open by name."""

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        super().__init__()
        self.path = file_name
        self.world_size = world_size
        self._do("add", (_WORKERS, 1))

    def _do(self, op: str, args: tuple) -> Any:
        import fcntl   # (POSIX; imported here so that ember.distributed imports everywhere)
        with open(self.path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)   # (released when the file closes)
            f.seek(0)
            raw = f.read()
            data = pickle.loads(raw) if raw else {}
            before = dict(data) if op not in ("get", "check", "num_keys", "list_keys", "queue_len") else None
            out = _Table.apply(data, op, args)
            if before is not None and data != before:
                f.seek(0)
                f.truncate()
                f.write(pickle.dumps(data))
                f.flush()
            return out

    def _wait_error(self, keys: list, seconds: float) -> Exception:
        return RuntimeError(f"Timeout waiting for key: {keys[0]} after {int(seconds * 1000)} ms")

    def wait(self, keys: list, timeout: datetime.timedelta | None = None) -> None:
        try:
            super().wait(keys, timeout)
        except RuntimeError:
            raise RuntimeError("Wait timeout") from None

    def delete_key(self, key: str) -> bool:
        super().delete_key(key)
        return True   # (PyTorch's FileStore answers True whether or not the key was there)

    def queue_push(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("queue support is not implemented.")

    queue_pop = queue_len = queue_push   # (PyTorch's FileStore has no queues either)


class _Server:
    """The TCPStore's master side: a HashStore served to clients over ``multiprocessing.connection``, a thread
    per connection; blocking operations wait on the server and answer when done or timed out."""

    def __init__(self, host: str, port: int) -> None:
        try:
            self.listener = Listener((host, port), authkey=_AUTHKEY)
        except OSError as e:
            raise DistNetworkError("The server socket has failed to listen on any local network address. port: "
                                   f"{port}, message: {e.strerror}") from None
        self.port = self.listener.address[1]
        self.store = HashStore()
        threading.Thread(target=self._accept, daemon=True, name="ember-TCPStore").start()

    def _accept(self) -> None:
        while True:
            try:
                conn = self.listener.accept()
            except OSError:   # closed
                return
            except Exception:   # noqa: BLE001  (a client that failed the handshake)
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: Any) -> None:
        with conn:
            while True:
                try:
                    op, args, wait_keys, timeout = conn.recv()
                except (EOFError, OSError):
                    return
                try:
                    if wait_keys is None:
                        reply = (True, self.store._do(op, args))
                    else:
                        reply = (True, self.store._blocking(op, args, wait_keys, timeout))
                except Exception as e:   # noqa: BLE001  (sent back to the client)
                    reply = (False, e)
                try:
                    conn.send(reply)
                except (OSError, pickle.PicklingError):
                    return


class TCPStore(Store):
    """A store served by the master process (``is_master=True``) at ``host_name:port`` (port 0: a free one, see
    ``.port``); every process, the master too, is a client. With ``wait_for_workers`` the master's constructor
    waits until ``world_size`` processes have connected."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: datetime.timedelta = _DEFAULT_TIMEOUT, wait_for_workers: bool = True,
                 multi_tenant: bool = False, master_listen_fd: int | None = None, use_libuv: bool = True) -> None:
        super().__init__(timeout)
        self.host = host_name
        self._server = _Server(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self.libuvBackend = use_libuv
        self._lock = threading.Lock()
        self._conn = self._connect()
        self._do("add", (_WORKERS, 1))
        if is_master and wait_for_workers and world_size:
            self._blocking_workers(int(world_size))

    def _connect(self) -> Any:
        deadline = time.monotonic() + _seconds(self._timeout)
        while True:
            try:
                return Client((self.host, self.port), authkey=_AUTHKEY)
            except OSError:
                if time.monotonic() >= deadline:
                    ms = int(_seconds(self._timeout) * 1000)
                    raise DistNetworkError(f"The client socket has timed out after {ms}ms while trying to connect "
                                           f"to ({self.host}, {self.port}).") from None
                time.sleep(0.05)

    def _blocking_workers(self, n: int) -> None:
        deadline = time.monotonic() + _seconds(self._timeout)
        while int(self._do("get", (_WORKERS,)) or 0) < n:
            if time.monotonic() >= deadline:
                raise DistStoreError(f"Timed out after {int(_seconds(self._timeout))} seconds waiting for "
                                     f"{n} workers to join the TCPStore")
            time.sleep(0.01)

    def _request(self, op: str, args: tuple, wait_keys: list | None, timeout: float | None) -> Any:
        with self._lock:   # (one request at a time on this connection)
            self._conn.send((op, args, wait_keys, timeout))
            ok, value = self._conn.recv()
        if not ok:
            raise value
        return value

    def _do(self, op: str, args: tuple) -> Any:
        return self._request(op, args, None, None)

    def _blocking(self, op: str, args: tuple, keys: list, timeout: float | None = None) -> Any:
        seconds = _seconds(self._timeout) if timeout is None else timeout
        try:
            return self._request(op, args, keys, seconds)
        except DistStoreError:
            if op == "queue_pop":
                raise
            raise DistStoreError(f"wait timeout after {int(seconds * 1000)}ms, keys: "
                                 + ", ".join("/" + k for k in keys)) from None

    def clone(self) -> "TCPStore":
        """Another client of the same server (its own connection)."""
        out = TCPStore.__new__(TCPStore)
        Store.__init__(out, self._timeout)
        out.host, out.port, out.libuvBackend, out._server = self.host, self.port, self.libuvBackend, None
        out._lock = threading.Lock()
        out._conn = out._connect()
        return out


class PrefixStore(Store):
    """Another store's keys under ``prefix/``."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    @property
    def timeout(self) -> datetime.timedelta:
        return self.underlying_store.timeout

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self.underlying_store.set_timeout(timeout)

    def set(self, key: str, value: Any) -> None:
        self.underlying_store.set(self._k(_key(key)), value)

    def get(self, key: str) -> bytes:
        return self.underlying_store.get(self._k(_key(key)))

    def add(self, key: str, amount: int) -> int:
        return self.underlying_store.add(self._k(_key(key)), amount)

    def append(self, key: str, value: Any) -> None:
        self.underlying_store.append(self._k(_key(key)), value)

    def compare_set(self, key: str, expected_value: Any, desired_value: Any) -> bytes:
        return self.underlying_store.compare_set(self._k(_key(key)), expected_value, desired_value)

    def check(self, keys: list) -> bool:
        return self.underlying_store.check([self._k(_key(k)) for k in keys])

    def wait(self, keys: list, timeout: datetime.timedelta | None = None) -> None:
        self.underlying_store.wait([self._k(_key(k)) for k in keys], timeout)

    def delete_key(self, key: str) -> bool:
        return self.underlying_store.delete_key(self._k(_key(key)))

    def num_keys(self) -> int:
        return self.underlying_store.num_keys()

    def list_keys(self) -> list:
        n = len(self.prefix) + 1
        return [k[n:] for k in self.underlying_store.list_keys() if k.startswith(self.prefix + "/")]

    def queue_push(self, key: str, value: Any) -> None:
        self.underlying_store.queue_push(self._k(_key(key)), value)

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        return self.underlying_store.queue_pop(self._k(_key(key)), block)

    def queue_len(self, key: str) -> int:
        return self.underlying_store.queue_len(self._k(_key(key)))
