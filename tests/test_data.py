"""ember.utils.data against torch.utils.data: datasets, samplers, DataLoader batches and order, collation,
random_split, errors, and the random state each leaves behind (same seed -> same indices, and the next
``rand`` after them equal too)."""
from __future__ import annotations

import collections
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LIBS = (torch, ember)
Point = collections.namedtuple("Point", ["x", "y"])


def plain(x):
    """A library-independent, exactly comparable form of a batch (tensors keep their dtype and shape)."""
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return ("T", str(x.dtype), tuple(x.shape), x.detach().numpy().tolist())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(plain(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [plain(v) for v in x])
    if isinstance(x, dict):
        return (type(x).__name__, [(k, plain(v)) for k, v in x.items()])
    if isinstance(x, np.ndarray):
        return ("nd", str(x.dtype), x.tolist())
    return (type(x).__name__, x)


def both(fn, seed=0, tail=True):
    """``fn(lib)`` with each library after ``manual_seed(seed)``; with ``tail``, the default generator's next
    draws are appended, so a difference in how far the generator advanced shows too."""
    out = []
    for lib in LIBS:
        lib.manual_seed(seed)
        r = plain(fn(lib))
        out.append((r, lib.rand(3).tolist(), lib.randint(0, 1 << 30, (2,)).tolist()) if tail else r)
    assert out[0] == out[1], f"\ntorch: {out[0]}\nember: {out[1]}"
    return out[0]


def errors(fn):
    """Both raise; the same exception type; returns (torch message, ember message)."""
    msgs = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        msgs.append(info)
    assert msgs[1].type is msgs[0].type, f"torch {msgs[0].type.__name__}: {msgs[0].value}\n" \
                                         f"ember {msgs[1].type.__name__}: {msgs[1].value}"
    return str(msgs[0].value), str(msgs[1].value)


def tds(lib, n):
    return lib.utils.data.TensorDataset(lib.arange(n, dtype=lib.float32).reshape(n, 1) * 0.5,
                                        lib.arange(n) % 3)


# ---------------------------------------------------------------- DataLoader order and random state

@pytest.mark.parametrize("n,bs,shuffle,drop_last", [(10, 4, True, False), (10, 4, True, True), (33, 5, True, False),
                                                    (64, 8, True, True), (1, 3, True, False), (10, 4, False, False),
                                                    (10, 4, False, True), (7, 1, True, False)])
@pytest.mark.parametrize("seed", [0, 7])
def test_loader_order_and_state(n, bs, shuffle, drop_last, seed):
    def fn(lib):
        dl = lib.utils.data.DataLoader(tds(lib, n), batch_size=bs, shuffle=shuffle, drop_last=drop_last)
        return [list(dl), list(dl), len(dl)]     # two epochs: each reshuffles
    both(fn, seed)


def test_loader_explicit_generator_and_break():
    def fn(lib):
        g = lib.Generator().manual_seed(123)
        dl = lib.utils.data.DataLoader(tds(lib, 20), batch_size=6, shuffle=True, generator=g)
        first = next(iter(dl))                   # a pass abandoned after one batch
        rest = list(dl)
        return [first, rest, g.initial_seed(), lib.rand(2, generator=g)]
    both(fn)


def test_loader_partial_epoch_state():
    # stopping early leaves the last permutation undrawn, in both
    def fn(lib):
        dl = lib.utils.data.DataLoader(tds(lib, 40), batch_size=8, shuffle=True)
        it = iter(dl)
        return [next(it), next(it)]
    both(fn, 3)


def test_loader_draws_base_seed_without_workers():
    # an unshuffled pass still draws one int64 from the default generator (the workers' base seed)
    def fn(lib):
        list(lib.utils.data.DataLoader(list(range(5)), batch_size=2))
        return lib.rand(2)
    both(fn)
    torch.manual_seed(0)
    untouched = torch.rand(2)
    ember.manual_seed(0)
    list(ember.utils.data.DataLoader(list(range(5)), batch_size=2))
    assert ember.rand(2).tolist() != untouched.tolist()


def test_loader_custom_sampler_batch_sampler_and_no_batching():
    def fn(lib):
        D = lib.utils.data
        ds = tds(lib, 12)
        a = list(D.DataLoader(ds, batch_size=5, sampler=D.RandomSampler(ds, replacement=True, num_samples=14)))
        b = list(D.DataLoader(ds, batch_sampler=D.BatchSampler(D.SequentialSampler(ds), 5, True)))
        c = list(D.DataLoader(ds, batch_size=None, shuffle=True))
        d = list(D.DataLoader(ds, sampler=[3, 1, 4, 1, 5], batch_size=2, collate_fn=lambda b: [len(b), b[0][1]]))
        e = len(D.DataLoader(ds, batch_sampler=[[0, 1], [2]]))
        return [a, b, c, d, e]
    both(fn)


class Stream:
    """An iterable-style dataset of numpy samples; subclassed from each library's IterableDataset."""

    @staticmethod
    def make(lib, n, with_len=True):
        base = lib.utils.data.IterableDataset

        class S(base):
            def __iter__(self):
                return iter({"v": np.float32(i), "i": i} for i in range(n))
        if with_len:
            S.__len__ = lambda self: n
        return S()


def test_loader_iterable_dataset():
    def fn(lib):
        D = lib.utils.data
        s = Stream.make(lib, 7)
        out = [list(D.DataLoader(s, batch_size=3)), list(D.DataLoader(s, batch_size=3, drop_last=True)),
               list(D.DataLoader(s, batch_size=None)), len(D.DataLoader(s, batch_size=3)),
               len(D.DataLoader(s, batch_size=3, drop_last=True))]
        chained = list(D.DataLoader(s + Stream.make(lib, 2), batch_size=4))
        return out + [chained]
    both(fn)


def test_loader_iterable_overrun_warns():
    for lib in LIBS:
        D = lib.utils.data

        class Liar(D.IterableDataset):
            def __iter__(self):
                return iter(range(5))

            def __len__(self):
                return 2
        dl = D.DataLoader(Liar(), batch_size=None)
        assert len(dl) == 2
        with pytest.warns(UserWarning, match="was reported to be 2"):
            assert len(list(dl)) == 5


def test_loader_getitems_used():
    # a dataset's __getitems__ fetches the whole batch (Subset passes it on)
    for lib in LIBS:
        D = lib.utils.data
        calls = []

        class Batched(D.Dataset):
            def __getitem__(self, i):
                raise AssertionError("per-item fetch")

            def __getitems__(self, idx):
                calls.append(list(idx))
                return [i * 10 for i in idx]

            def __len__(self):
                return 6
        out = [b.tolist() for b in D.DataLoader(D.Subset(Batched(), [5, 4, 3, 2]), batch_size=3)]
        assert out == [[50, 40, 30], [20]] and calls == [[5, 4, 3], [2]]


# ---------------------------------------------------------------- samplers

@pytest.mark.parametrize("replacement,num_samples", [(False, None), (False, 25), (False, 10), (False, 3),
                                                     (True, None), (True, 70), (True, 64), (True, 5)])
def test_random_sampler(replacement, num_samples):
    def fn(lib):
        S = lib.utils.data.RandomSampler
        s = S(range(10), replacement=replacement, num_samples=num_samples)
        gen = lib.Generator().manual_seed(5)
        g = S(range(10), replacement=replacement, num_samples=num_samples, generator=gen)
        return [list(s), list(s), list(g), lib.rand(2, generator=gen), len(s)]   # gen's state after a pass
    both(fn)


def test_random_sampler_dataset_sized():
    # an MNIST-sized permutation, then the loader's state
    def fn(lib):
        dl = lib.utils.data.DataLoader(range(60000), batch_size=1000, shuffle=True, collate_fn=lambda b: b[:3])
        return list(dl)[-2:]
    both(fn, seed=2024)


def test_subset_random_and_weighted_samplers():
    w = np.random.RandomState(0).rand(40).tolist()

    def fn(lib):
        D = lib.utils.data
        sub = D.SubsetRandomSampler([7, 3, 11, 2, 9])
        g = lib.Generator().manual_seed(9)
        return [list(sub), len(sub),
                list(D.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 20)),
                list(D.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.6], 5, replacement=False)),
                list(D.WeightedRandomSampler(w, 30, replacement=False, generator=g)),
                list(D.WeightedRandomSampler(w, 100, generator=g)),
                len(D.WeightedRandomSampler(w, 12)),
                list(D.DataLoader(list(range(40)), batch_size=7, sampler=D.WeightedRandomSampler(w, 23)))]
    both(fn)


def test_batch_sampler_and_sequential():
    def fn(lib):
        D = lib.utils.data
        out = []
        for n, bs in [(10, 3), (9, 3), (0, 2), (2, 5)]:
            for dl in (False, True):
                b = D.BatchSampler(D.SequentialSampler(range(n)), bs, dl)
                out.append([list(b), len(b)])
        out.append(list(D.BatchSampler([5, 6, 7], 2, False)))      # any iterable will do
        return out
    both(fn, tail=False)


# ---------------------------------------------------------------- collation

def test_default_collate_nested():
    def sample(lib, i):
        return {"img": np.full((2, 2), i, np.float32), "label": i, "w": 0.5 * i, "flag": bool(i % 2),
                "name": f"s{i}", "np": np.int16(i), "pair": (lib.tensor([i, -i]), np.array([1.5 * i])),
                "pt": Point(i, [float(i), np.float64(i)]), "lst": [i, i + 1], "b": b"x"}

    def fn(lib):
        return lib.utils.data.default_collate([sample(lib, i) for i in range(3)])
    r = both(fn, tail=False)
    d = dict(r[1])
    assert d["label"][1] == "torch.int64" and d["w"][1] == "torch.float64" and d["flag"][1] == "torch.bool"
    assert d["img"][1] == "torch.float32" and d["img"][2] == (3, 2, 2)


def test_default_collate_leaves():
    cases = [[1, 2, 3], [1.5, 2.0], [True, False], [1, 2.5], ["a", "b"], [np.float32(1), np.float32(2)],
             [np.array(1.0), np.array(2.0)], [np.arange(3), np.arange(3)], [(1, "a"), (2, "b")], [[1, 2], [3, 4]],
             [Point(1, 2.0), Point(3, 4.0)], [collections.OrderedDict(a=1, b=2)] * 2]
    for c in cases:
        both(lambda lib: lib.utils.data.default_collate(c), tail=False)
    both(lambda lib: lib.utils.data.default_collate([lib.ones(2, dtype=lib.float64), lib.zeros(2, dtype=lib.float64)]),
         tail=False)


def test_default_convert():
    cases = [np.arange(4), np.float32(2), 3, "s", (np.arange(2), 1), [np.ones(2), "x"], {"a": np.zeros(1), "b": 2},
             Point(np.array(0), np.array(1)), np.array(["a", "b"])]
    for c in cases:
        both(lambda lib: lib.utils.data.default_convert(c), tail=False)


@pytest.mark.parametrize("batch,etype", [
    ([object(), object()], TypeError),
    ([np.array(["a"]), np.array(["b"])], TypeError),
    ([[1, 2], [3]], RuntimeError),
    ([np.zeros(2), np.zeros(3)], RuntimeError),
])
def test_default_collate_errors(batch, etype):
    tm, em = errors(lambda lib: lib.utils.data.default_collate(batch))
    assert isinstance(etype, type)
    if etype is TypeError:
        assert em == tm
    else:
        assert em.split(",")[0] == tm.split(",")[0]


# ---------------------------------------------------------------- datasets, random_split

@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [0.1] * 10, [1.0], [11]])
@pytest.mark.parametrize("use_gen", [False, True])
def test_random_split(lengths, use_gen):
    def fn(lib):
        n = 10 if lengths == [3, 7] else 11
        kw = {"generator": lib.Generator().manual_seed(42)} if use_gen else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # [0.1] * 10 of 11 items: no empty split, still checked below
            parts = lib.utils.data.random_split(range(n), lengths, **kw)
        return [[len(p), list(p.indices), [p[i] for i in range(len(p))]] for p in parts]
    both(fn)


def test_random_split_zero_length_warns_and_errors():
    for lib in LIBS:
        with pytest.warns(UserWarning, match="Length of split at index 2 is 0"):
            lib.utils.data.random_split(range(2), [0.5, 0.5, 0.0])
    errors(lambda lib: lib.utils.data.random_split(range(10), [3, 6]))
    errors(lambda lib: lib.utils.data.random_split(range(10), [1.2, -0.2]))
    tm, em = errors(lambda lib: lib.utils.data.random_split(range(10), [0.2, 0.9]))
    assert tm == em


def test_datasets():
    def fn(lib):
        D = lib.utils.data
        a, b = tds(lib, 4), tds(lib, 3)
        cat = a + b
        stack_t = D.StackDataset(a, list(range(4)))
        stack_d = D.StackDataset(x=a, y=list("abcd"))
        sub = D.Subset(cat, [6, 0, 5])
        return [len(cat), cat[5], cat[-1], cat[-7], cat.cumulative_sizes, stack_t[2], stack_d[1],
                stack_t.__getitems__([0, 3]), len(sub), sub[0], sub[2], D.ConcatDataset.cumsum([[1], [2, 3]]),
                list(D.DataLoader(stack_d, batch_size=3))]
    both(fn, tail=False)


@pytest.mark.parametrize("make", [
    lambda D, lib: D.TensorDataset(lib.zeros(3), lib.zeros(4)),
    lambda D, lib: D.ConcatDataset([]),
    lambda D, lib: D.ConcatDataset([Stream.make(lib, 2)]),
    lambda D, lib: D.ConcatDataset([[1, 2]])[-3],
    lambda D, lib: D.IterableDataset(),
    lambda D, lib: D.Dataset()[0],
    lambda D, lib: len(D.Dataset()),
    lambda D, lib: list(D.ChainDataset([[1, 2]])),
    lambda D, lib: D.StackDataset([1], [1, 2]),
    lambda D, lib: D.StackDataset(),
    lambda D, lib: D.StackDataset([1], x=[1]),
])
def test_dataset_errors(make):
    errors(lambda lib: make(lib.utils.data, lib))


def test_subset_subclass_must_override_getitems():
    for lib in LIBS:
        class Bad(lib.utils.data.Subset):
            def __getitem__(self, i):
                return 0
        with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
            Bad([1, 2], [0])


# ---------------------------------------------------------------- argument errors

@pytest.mark.parametrize("kw", [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
    dict(multiprocessing_context="fork"), dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]), dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True), dict(batch_size=0), dict(batch_size=2, drop_last=1),
])
def test_loader_argument_errors(kw):
    tm, em = errors(lambda lib: lib.utils.data.DataLoader(list(range(4)), **kw))
    assert em == tm


@pytest.mark.parametrize("kw", [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])])
def test_loader_iterable_dataset_refuses_samplers(kw):
    tm, em = errors(lambda lib: lib.utils.data.DataLoader(Stream.make(lib, 3), **kw))
    assert em.split(",")[0] == tm.split(",")[0]


@pytest.mark.parametrize("make", [
    lambda D: D.RandomSampler(range(3), replacement=1),
    lambda D: D.RandomSampler(range(3), num_samples=0),
    lambda D: D.RandomSampler([], num_samples=None),
    lambda D: D.WeightedRandomSampler([1.0, 2.0], 0),
    lambda D: D.WeightedRandomSampler([1.0, 2.0], True),
    lambda D: D.WeightedRandomSampler([1.0, 2.0], 2, replacement=None),
    lambda D: D.WeightedRandomSampler([[1.0, 2.0]], 2),
    lambda D: list(D.WeightedRandomSampler([1.0, 2.0], 3, replacement=False)),
    lambda D: D.BatchSampler(range(3), 1.5, False),
    lambda D: len(D.SequentialSampler(iter([]))),
    lambda D: len(D.Sampler()),
])
def test_sampler_errors(make):
    tm, em = errors(lambda lib: make(lib.utils.data))
    assert em.split(":")[0] == tm.split(":")[0]


def test_loader_setattr_frozen_and_len_errors():
    for lib in LIBS:
        dl = lib.utils.data.DataLoader(list(range(4)))
        with pytest.raises(ValueError, match="batch_size attribute should not be set"):
            dl.batch_size = 3
        dl.collate_fn = lambda b: b                 # not one of the frozen attributes
        with pytest.raises(TypeError):
            len(lib.utils.data.DataLoader(Stream.make(lib, 3, with_len=False)))


# ---------------------------------------------------------------- worker processes

def _aug_dataset(lib):
    """A dataset drawing from ember/torch, NumPy and random in __getitem__, reporting its worker."""
    import random
    D = lib.utils.data

    class Aug(D.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            info = D.get_worker_info()
            return (i, lib.rand(2), float(np.random.rand()), random.random(),
                    -1 if info is None else info.id, 0 if info is None else info.seed - info.id)
    return Aug()


@pytest.mark.parametrize("kw", [dict(num_workers=2), dict(num_workers=2, persistent_workers=True),
                                dict(num_workers=1, prefetch_factor=1, timeout=30)])
def test_workers_match_torch(kw):
    # same batches, same per-worker seeds (so the same random draws inside the dataset), same state after
    def fn(lib):
        dl = lib.utils.data.DataLoader(_aug_dataset(lib), batch_size=3, shuffle=True, **kw)
        return [list(dl), list(dl), len(dl)]
    both(fn, seed=5)


def test_workers_iterable_dataset_sharded_and_duplicated():
    def fn(lib):
        D = lib.utils.data

        class Range(D.IterableDataset):
            def __init__(self):
                self.start, self.end = 3, 10

            def __iter__(self):
                return iter(range(self.start, self.end))

        def shard(worker_id):
            info = D.get_worker_info()
            ds, per = info.dataset, -(-(10 - 3) // info.num_workers)
            ds.start = 3 + worker_id * per
            ds.end = min(ds.start + per, 10)
        return [list(D.DataLoader(Range(), num_workers=2)),
                list(D.DataLoader(Range(), num_workers=2, batch_size=2, worker_init_fn=shard)),
                list(D.DataLoader(Range(), num_workers=2, batch_size=2, drop_last=True, worker_init_fn=shard)),
                [list(dl) for dl in [D.DataLoader(Range(), num_workers=2, batch_size=3, worker_init_fn=shard,
                                                  persistent_workers=True)] for _ in range(2)]]
    both(fn)


def test_workers_unbatched_and_out_of_order():
    D = ember.utils.data
    ds = list(range(9))
    assert [int(v) for v in D.DataLoader(ds, batch_size=None, num_workers=2)] == ds
    got = [b.tolist() for b in D.DataLoader(ds, batch_size=2, num_workers=2, in_order=False)]
    assert sorted(got) == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]


@pytest.mark.parametrize("etype", [ValueError, KeyError])
def test_workers_reraise(etype):
    def fn(lib):
        D = lib.utils.data

        class Bad(D.Dataset):
            def __len__(self):
                return 6

            def __getitem__(self, i):
                if i == 4:
                    raise etype("bad sample 4")
                return i
        it = iter(D.DataLoader(Bad(), batch_size=2, num_workers=2))
        try:
            return list(it)
        finally:
            # now, not when the traceback's cycle is collected: torch's workers then miss their final
            # message and wait out two 5 s timeouts
            it._shutdown_workers()
    tm, em = errors(fn)
    for m in (tm, em):
        assert "Caught " + etype.__name__ + " in DataLoader worker process 0" in m and "bad sample 4" in m


def test_workers_abandoned_pass_and_dead_worker():
    D = ember.utils.data
    dl = D.DataLoader(list(range(50)), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(dl)
    next(it)
    assert [b.tolist() for b in dl][:2] == [[0, 1], [2, 3]]     # stale results of the first pass dropped
    del it, dl

    # an iterator collected in a reference cycle (its queues finalised first) still stops its workers
    import gc
    import time
    it = iter(D.DataLoader(list(range(50)), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    it.cycle = it
    del it
    gc.collect()
    t0 = time.monotonic()
    while any(w.is_alive() for w in workers) and time.monotonic() - t0 < 5:
        time.sleep(0.05)
    assert [w.exitcode for w in workers] == [0, 0]      # exited by themselves, not terminated

    class Dies(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            import os
            os._exit(3)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(D.DataLoader(Dies(), num_workers=1))


@pytest.mark.parametrize("ctx", ["nope", 3])
def test_multiprocessing_context_errors(ctx):
    tm, em = errors(lambda lib: lib.utils.data.DataLoader([1], num_workers=1, multiprocessing_context=ctx))
    assert tm.split("[")[0] == em.split("[")[0]


# ---------------------------------------------------------------- ember only

def test_worker_info_and_pin_memory():
    D = ember.utils.data
    assert D.get_worker_info() is None
    with pytest.warns(UserWarning, match="pin_memory"):
        list(D.DataLoader(list(range(2)), pin_memory=True))
    dl = D.DataLoader(list(range(4)), batch_size=2, worker_init_fn=lambda i: None)  # no workers: unused
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3]]


def test_import_stays_lazy():
    code = "import sys, ember; print('ember.utils.data' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- the TensorDataset batch fast path

def _layout(t):
    return (str(t.dtype), tuple(t.shape), t.stride(), t.is_contiguous(), t.requires_grad, t.is_leaf,
            t.grad_fn is None)


def _sources(lib):
    base = lib.arange(7 * 6, dtype=lib.float64).reshape(7, 6)
    return [
        (base.to(lib.float32), lib.arange(7) % 3),                          # the common case
        (base.t().contiguous().t(),),                                       # a non-contiguous source
        (base[:, ::2], (base > 10), base.to(lib.int8), base.to(lib.uint8)), # strided view, bool, small ints
        (base.reshape(7, 3, 2).transpose(1, 2), base[:, 0].to(lib.int32)),  # 3-d non-contiguous, int32
        (base, base.to(lib.float16), base.to(lib.int16)),
        (base[:, :1].expand(7, 5), base[0].expand(7, 6)),                  # zero-stride (expanded) views
    ]


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("shuffle", [True, False])
def test_tensor_dataset_batches_match_torch(case, shuffle):
    # same values, dtypes, shapes, strides and contiguity as torch's stack of rows
    def fn(lib):
        dl = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(*_sources(lib)[case]), batch_size=3,
                                       shuffle=shuffle)
        batches = list(dl)
        return [batches, [[_layout(t) for t in b] for b in batches], [type(b).__name__ for b in batches]]
    both(fn, seed=case)


def test_tensor_dataset_fast_path_equals_collated_rows():
    # the gather itself against default_collate of the rows, field by field, including an empty feature
    # dimension and inference mode
    from ember.utils.data import _fetch as dlmod
    D = ember.utils.data
    srcs = _sources(ember) + [(ember.zeros(7, 0), ember.zeros(7, 2, 0, dtype=ember.int64))]
    for tensors in srcs:
        ds = D.TensorDataset(*tensors)
        for idx in ([3, 0, 6], [-1, 2, -7], (4,), [5, 5, 5]):
            for mode in (ember.enable_grad, ember.no_grad, ember.inference_mode):
                with mode():
                    fast = dlmod._tensor_batch(ds, idx)
                    slow = D.default_collate([ds[i] for i in idx])
                assert fast is not None and type(fast) is type(slow) is list
                for f, s in zip(fast, slow):
                    # strides aside: ember.stack keeps a non-contiguous input's layout where torch.stack (and
                    # the gather) give a contiguous batch; test_tensor_dataset_batches_match_torch checks them
                    assert _layout(f)[:2] + _layout(f)[4:] == _layout(s)[:2] + _layout(s)[4:]
                    assert f.is_contiguous()
                    assert f.is_inference() == s.is_inference()
                    assert f._version == s._version and f._base is None and s._base is None
                    np.testing.assert_array_equal(f.numpy(), s.numpy())
                    assert f.numpy().flags.c_contiguous


def test_tensor_dataset_fast_path_refuses():
    # where the gather could differ, the ordinary path runs
    from ember.utils.data import _fetch as dlmod
    D = ember.utils.data
    x, y = ember.arange(12.).reshape(6, 2), ember.arange(6)
    ds = D.TensorDataset(x, y)
    for idx in ([], [0, 6], [-7], [True, 1], [np.int64(1)], [1.0]):
        assert dlmod._tensor_batch(ds, idx) is None, idx
    assert dlmod._tensor_batch(D.TensorDataset(x.requires_grad_(True), y), [0, 1]) is None
    assert dlmod._tensor_batch(D.TensorDataset(ember.nn.Parameter(ember.ones(6, 2))), [0, 1]) is None

    class Rows(D.TensorDataset):
        def __getitem__(self, i):
            return super().__getitem__(i)
    assert dlmod._tensor_batch(Rows(x.detach(), y), [0, 1]) is None

    class Prop(D.TensorDataset):
        @property
        def tensors(self):
            return self.__dict__["tensors"][:1]

        @tensors.setter
        def tensors(self, v):
            self.__dict__["tensors"] = v
    assert dlmod._tensor_batch(Prop(x.detach(), y), [0, 1]) is None
    import ember.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        assert dlmod._tensor_batch(D.TensorDataset(x.detach(), y), [0, 1]) is None


def test_tensor_dataset_subclasses_and_requires_grad_match_torch():
    def fn(lib):
        D = lib.utils.data
        calls = []

        class Doubled(D.TensorDataset):
            def __getitem__(self, i):
                calls.append(i)
                return tuple(t[i] * 2 for t in self.tensors)

        class Batched(D.TensorDataset):
            def __getitems__(self, idx):
                calls.append(list(idx))
                return [(self.tensors[0][i] + 100,) for i in idx]

        class Kept(D.TensorDataset):         # keeps __getitem__: rows as TensorDataset's
            pass
        x = lib.arange(12, dtype=lib.float32).reshape(6, 2)
        out = [list(D.DataLoader(cls(x, lib.arange(6)), batch_size=4, shuffle=True))
               for cls in (Doubled, Batched, Kept)]
        w = lib.arange(12, dtype=lib.float32).reshape(6, 2).requires_grad_(True)
        xb, = next(iter(D.DataLoader(D.TensorDataset(w), batch_size=4, shuffle=True)))
        (xb * lib.arange(1, 5).reshape(4, 1)).sum().backward()
        return [out, calls, type(xb.grad_fn).__name__, xb.requires_grad, w.grad]
    both(fn, seed=2)


def test_tensor_dataset_index_errors_and_odd_batches_match_torch():
    def fn(lib):
        D = lib.utils.data
        ds = tds(lib, 6)
        return list(D.DataLoader(ds, batch_sampler=[[0, 1], [-1, -6], (2, 3), [4, 4, 4]]))
    both(fn)
    for bs in ([[0, 6]], [[-7]], [[]], [[0, 1.0]], [[True, 1]]):
        errors(lambda lib: list(lib.utils.data.DataLoader(tds(lib, 6), batch_sampler=bs)))


def test_tensor_dataset_custom_collate_map_respected():
    # a collate function registered for tensors is used, fast path or not
    for lib in LIBS:
        collate = lib.utils.data._utils.collate if lib is torch else ember.utils.data._collate
        fmap = collate.default_collate_fn_map
        saved = dict(fmap)
        fmap[lib.Tensor] = lambda batch, *, collate_fn_map=None: len(batch)
        try:
            out = list(lib.utils.data.DataLoader(tds(lib, 5), batch_size=2))
        finally:
            fmap.clear()
            fmap.update(saved)
        assert out == [[2, 2], [2, 2], [1, 1]], lib


def test_subset_of_tensor_dataset_matches_torch():
    def fn(lib):
        D = lib.utils.data
        ds = tds(lib, 20)
        train, val = D.random_split(ds, [15, 5])
        out = [list(D.DataLoader(train, batch_size=4, shuffle=True)), list(D.DataLoader(val, batch_size=2))]
        out.append(list(D.DataLoader(D.Subset(ds, range(3, 11)), batch_size=3, shuffle=True)))
        out.append(list(D.DataLoader(D.Subset(ds, lib.tensor([1, 0, 5])), batch_size=2)))
        out.append(list(D.DataLoader(D.Subset(ds, [19, -1, 0]), batch_sampler=[[0, -1], [1, 2]])))
        out.append(list(D.DataLoader(D.Subset(D.Subset(ds, list(range(10, 20))), [9, 0]), batch_size=2)))
        return out
    both(fn, seed=4)
    errors(lambda lib: list(lib.utils.data.DataLoader(lib.utils.data.Subset(tds(lib, 5), [0, 1, 9]),
                                                      batch_size=3)))
    errors(lambda lib: list(lib.utils.data.DataLoader(lib.utils.data.Subset(tds(lib, 5), [0, 1]),
                                                      batch_sampler=[[0, 2]])))


@pytest.mark.parametrize("n", [1, 2, 3, 64])
@pytest.mark.parametrize("epochs", [1, 2])
def test_loader_generator_state_after_whole_epochs(n, epochs):
    # the sampler's last, unused permutation advances the generator as torch's does
    def fn(lib):
        g = lib.Generator().manual_seed(11)
        dl = lib.utils.data.DataLoader(tds(lib, n), batch_size=2, shuffle=True, generator=g)
        out = [list(dl) for _ in range(epochs)]
        s = lib.utils.data.RandomSampler(range(n), num_samples=2 * n, generator=g)
        return [out, list(s), lib.rand(3, generator=g), lib.randint(0, 1 << 30, (2,), generator=g)]
    both(fn)


def test_tensor_dataset_in_workers_matches_torch():
    def fn(lib):
        D = lib.utils.data
        ds = tds(lib, 11)
        return [list(D.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2)),
                list(D.DataLoader(D.Subset(ds, list(range(1, 11))), batch_size=3, shuffle=True, num_workers=1))]
    both(fn, seed=9)
