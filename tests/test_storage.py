"""The storage side of a tensor against torch: untyped_storage/storage, storage_offset, data_ptr across views,
is_set_to, set_, resize_, resize_as_, resize, new, nbytes/itemsize, sharing and pinning."""
from __future__ import annotations

import warnings

import pytest
import torch

import ember


def test_untyped_storage():
    for m in (ember, torch):
        x = m.arange(12.0)
        v = x[3:].view(3, 3)
        s = x.untyped_storage()
        assert (s.nbytes(), s.size(), len(s), s.element_size()) == (48, 48, 48, 1)
        assert s.data_ptr() == x.data_ptr() == v.untyped_storage().data_ptr()
        assert v.data_ptr() - x.data_ptr() == 3 * 4 and v.storage_offset() == 3
        assert m.is_storage(s) and not m.is_storage(x)
        assert isinstance(s, m.UntypedStorage)
        assert s.tolist()[4:8] == list(bytes(memoryview(torch.tensor([1.0]).numpy())))
        assert s.device.type == "cpu" and not s.is_pinned() and s.untyped() is s


def test_typed_storage_warns():
    for m in (ember, torch):
        x = m.arange(6, dtype=m.int64)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ts = x[2:].storage()
        assert w and w[0].category is UserWarning and "TypedStorage is deprecated" in str(w[0].message)
        assert isinstance(ts, m.TypedStorage)
        assert (ts.size(), len(ts), ts.element_size(), ts.nbytes(), ts[4]) == (6, 6, 8, 48, 4)
        assert ts.tolist() == [0, 1, 2, 3, 4, 5] and str(ts.dtype) == "torch.int64"
        assert ts.data_ptr() == x.data_ptr()


def test_metadata():
    for m in (ember, torch):
        x = m.zeros(2, 3, dtype=m.float16)
        assert (x.nbytes, x.itemsize) == (12, 2)
        assert x.storage_type().__name__ == "HalfStorage"
        assert not x.is_shared()
        y = x[1]
        assert x.share_memory_() is x and x.is_shared() and y.is_shared()
        assert not x.is_pinned()
        with pytest.raises(RuntimeError, match="accelerator"):
            x.pin_memory()


def test_is_set_to():
    for m in (ember, torch):
        x = m.arange(6.0)
        assert x.is_set_to(x) and x[:3].is_set_to(x[:3])
        assert not x.is_set_to(x.view(2, 3)) and not x.is_set_to(x.clone()) and not x[1:].is_set_to(x[:5])


def test_set_():
    for m in (ember, torch):
        a = m.arange(4.0)
        b = m.zeros(1)
        v = b._version
        assert b.set_(a) is b
        assert b.tolist() == [0, 1, 2, 3] and b.is_set_to(a) and a.is_set_to(b) and b._version == v + 1
        b.add_(1)
        assert a.tolist() == [1, 2, 3, 4]
        b.set_(a.untyped_storage(), 1, (2,), (1,))
        assert b.tolist() == [2, 3] and b.storage_offset() == 1
        b.set_(a.untyped_storage(), 0, (2, 2), (1, 2))
        assert b.tolist() == [[1, 3], [2, 4]] and b.stride() == (1, 2)
        b.set_()
        assert tuple(b.shape) == (0,)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            m.zeros(2, requires_grad=True).set_(a)


def test_resize():
    for m in (ember, torch):
        z = m.arange(4.0)
        v = z[1:]
        assert v.resize_(2) is v and v.tolist() == [1, 2] and v.stride() == (1,) and v.storage_offset() == 1
        z = m.arange(4.0)
        z.resize_(2, 2)
        assert z.tolist() == [[0, 1], [2, 3]]
        z = m.arange(4.0)
        z.resize_(6)
        assert tuple(z.shape) == (6,) and z[:4].tolist() == [0, 1, 2, 3] and z.untyped_storage().nbytes() == 24
        z.resize_as_(m.zeros(2, 1))
        assert tuple(z.shape) == (2, 1)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            m.zeros(2, requires_grad=True).resize_(3)
        x = m.arange(6.0)
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            assert tuple(x.resize(2, 3).shape) == (2, 3)
        with pytest.raises(RuntimeError), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x.resize(2)


def test_new():
    for m in (ember, torch):
        x = m.zeros(2, dtype=m.int64)
        assert tuple(x.new(2, 3).shape) == (2, 3) and str(x.new(2, 3).dtype) == "torch.int64"
        assert tuple(x.new().shape) == (0,)
        assert x.new((1.5, 2)).tolist() == [1, 2]
        f = m.ones(2)
        assert f.new(f).data_ptr() == f.data_ptr()
        with pytest.raises(TypeError):
            f.new(m.ones(2, dtype=m.int64))


def test_untyped_storage_constructor_and_set_():
    res = []
    for m in (ember, torch):
        s = m.UntypedStorage(8)
        t = m.zeros(0).set_(s, 0, (2,), (1,))
        t.fill_(1.5)
        res.append((s.nbytes(), len(s), t.tolist(), s.tolist(), t.untyped_storage().data_ptr() == s.data_ptr()))
    assert res[0] == res[1]
