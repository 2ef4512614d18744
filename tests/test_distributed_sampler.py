"""DistributedSampler (torch.utils.data.distributed) against PyTorch's: the same indices per replica, shuffled or
not, padded or cut, for many dataset lengths, replica counts, seeds and epochs; PyTorch's errors."""
import pytest
import torch

import ember
import ember.distributed
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset
from ember.utils.data.distributed import DistributedSampler as FromModule

LENGTHS = list(range(0, 23)) + [31, 64, 100, 257, 1000, 4099]


def _split(mod, n, replicas, **kw):
    """Each replica's indices, its len(), and num_samples/total_size, for epochs 0..2."""
    out = []
    for rank in range(replicas):
        s = mod.utils.data.distributed.DistributedSampler(range(n), num_replicas=replicas, rank=rank, **kw)
        for epoch in range(3):
            s.set_epoch(epoch)
            out.append((rank, epoch, list(s), len(s), s.num_samples, s.total_size))
    return out


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [True, False])
def test_indices_match_torch(shuffle, drop_last):
    for n in LENGTHS:
        for replicas in (1, 2, 3, 4, 7):
            for seed in ((0, 12345) if shuffle else (0,)):
                kw = dict(shuffle=shuffle, seed=seed, drop_last=drop_last)
                assert _split(ember, n, replicas, **kw) == _split(torch, n, replicas, **kw), (n, replicas, kw)


def test_replicas_partition_the_dataset():
    """Without padding (drop_last, or a multiple) the replicas' indices are a partition of the kept ones."""
    seen = sorted(i for r in range(4) for i in DistributedSampler(range(42), num_replicas=4, rank=r, drop_last=True))
    assert len(seen) == 40 and len(set(seen)) == 40


def test_epoch_changes_shuffle_and_leaves_global_generator():
    ember.manual_seed(3)
    before = ember.get_rng_state()
    s = DistributedSampler(range(50), num_replicas=2, rank=0, seed=7)
    first = list(s)
    assert list(s) == first            # same epoch, same order
    s.set_epoch(1)
    assert list(s) != first
    assert ember.equal(ember.get_rng_state(), before)   # its own generator: the global stream is untouched


def test_public_names():
    assert FromModule is DistributedSampler
    assert ember.utils.data.DistributedSampler is DistributedSampler
    assert DistributedSampler.__mro__[1] is ember.utils.data.Sampler


def test_with_dataloader():
    x = ember.arange(20.0).reshape(10, 2)
    ds = TensorDataset(x)
    s = DistributedSampler(ds, num_replicas=3, rank=2, shuffle=True, seed=1)
    s.set_epoch(4)
    got = [b[0].tolist() for b in DataLoader(ds, batch_size=2, sampler=s)]
    ts = torch.utils.data.DistributedSampler(torch.utils.data.TensorDataset(torch.arange(20.0).reshape(10, 2)),
                                            num_replicas=3, rank=2, shuffle=True, seed=1)
    ts.set_epoch(4)
    want = [b[0].tolist() for b in torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(20.0).reshape(10, 2)), batch_size=2, sampler=ts)]
    assert got == want


@pytest.mark.parametrize("kw", [dict(num_replicas=2, rank=2), dict(num_replicas=2, rank=-1),
                                dict(num_replicas=1, rank=5), dict(num_replicas=3, rank=3)])
def test_bad_rank(kw):
    with pytest.raises(ValueError) as want:
        torch.utils.data.DistributedSampler(range(5), **kw)
    with pytest.raises(ValueError) as got:
        DistributedSampler(range(5), **kw)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("kw", [{}, dict(num_replicas=2), dict(rank=0)])
def test_without_process_group(kw):
    """No process group: PyTorch (distributed available) says it is not initialised; a build without the
    distributed package says it is required."""
    if ember.distributed.is_available():
        with pytest.raises(ValueError) as want:
            torch.utils.data.DistributedSampler(range(5), **kw)
        with pytest.raises(ValueError) as got:
            DistributedSampler(range(5), **kw)
        assert str(got.value) == str(want.value)
    else:
        with pytest.raises(RuntimeError, match="^Requires distributed package to be available$"):
            DistributedSampler(range(5), **kw)


def test_asks_the_process_group(monkeypatch):
    """num_replicas and rank come from the default group's world size and rank when not given."""
    monkeypatch.setattr(ember.distributed, "is_available", lambda: True)
    monkeypatch.setattr(ember.distributed, "get_world_size", lambda group=None: 3)
    monkeypatch.setattr(ember.distributed, "get_rank", lambda group=None: 1)
    s = DistributedSampler(range(10), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (3, 1, [1, 4, 7, 0])
