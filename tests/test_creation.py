"""Creation and conversion functions against PyTorch: linspace/logspace/arange values to the last bit,
tril/triu_indices, asarray and frombuffer memory sharing, new_* and type_as, dtype objects, finfo/iinfo,
can_cast, promote_types and result_type."""
import array
import itertools

import numpy as np
import pytest

import ember
from parity import same

torch = pytest.importorskip("torch")

FLOATS = ["float16", "float32", "float64"]
DTYPES = FLOATS + ["int64", "int32", "int16", "int8", "uint8", "bool"]


def exact(lib_fn):
    """Both libraries' results, compared bit for bit (rtol=atol=0)."""
    return same(lib_fn, rtol=0, atol=0)


@pytest.mark.parametrize("start,end,steps", [(0.5, 2, 19), (0, 1, 7), (-3.3, 7.1, 100), (1, -1, 5), (0, 1, 1),
                                              (2, 2, 4), (0, 1, 0), (-1e3, 1e-3, 33), (0.1, 0.7, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8"])
def test_linspace_matches_to_the_last_bit(start, end, steps, dtype):
    exact(lambda m: m.linspace(start, end, steps, dtype=getattr(m, dtype)))


@pytest.mark.parametrize("start,end,steps,base", [(0, 2, 3, 10.0), (-1, 1, 9, 2.0), (0.5, 3.5, 17, 10.0),
                                                   (2, -2, 6, 3.0), (0, 1, 1, 10.0), (0, 1, 0, 10.0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_logspace(start, end, steps, base, dtype):
    same(lambda m: m.logspace(start, end, steps, base, dtype=getattr(m, dtype)), rtol=1e-6, atol=0)


@pytest.mark.parametrize("args", [(0, 10), (0, 1, 0.1), (-2.5, 3, 0.7), (5, 0, -1), (1, 2, 0.3), (10,)])
def test_arange(args):
    exact(lambda m: m.arange(*args))


@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("args", [(3, 3), (4, 2), (2, 5, 1), (3, 3, -1), (0, 3), (3, 4, 10), (3, 4, -10)])
def test_tri_indices(fn, args):
    exact(lambda m: getattr(m, fn)(*args))


def test_tri_indices_errors_and_dtype():
    same(lambda m: m.tril_indices(3, 3, dtype=m.int32))
    same(lambda m: m.triu_indices(-1, 3))
    same(lambda m: m.tril_indices(3, 3, dtype=m.float32))


def test_asarray_shares_memory_as_pytorch():
    def f(m):
        a = np.arange(6.0)
        t = m.asarray(a)
        a[0] = 42.0
        u = m.asarray(a, dtype=m.float32)
        a[1] = 43.0
        x = m.ones(3)
        same_obj = m.asarray(x) is x
        c = m.asarray(x, copy=True)
        x.add_(1)
        return t, u, c, same_obj, m.asarray([1, 2.5]), m.asarray(3)
    same(f)


def test_asarray_copy_false_refuses():
    same(lambda m: m.asarray([1.0, 2.0], copy=False))


def test_frombuffer_shares_memory():
    def f(m):
        buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
        t = m.frombuffer(buf, dtype=m.float32)
        buf[0:4] = np.float32(9.0).tobytes()
        return t, m.frombuffer(array.array("i", [1, 2, 3, 4]), dtype=m.int32, count=2, offset=4)
    same(f)


def test_new_tensor_new_full_type_as():
    def f(m):
        x = m.ones(2, dtype=m.float64)
        return (x.new_tensor([1, 2]), x.new_tensor([1, 2], dtype=m.int32), x.new_full((2, 3), 7),
                x.new_zeros(3), x.new_ones((1, 2)), m.ones(3).type_as(x), x.type_as(m.ones(1, dtype=m.int64)))
    same(f)


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_objects(name):
    same(lambda m: (lambda d: (d.is_floating_point, d.is_signed, d.itemsize, d.is_complex, str(d)))(getattr(m, name)))


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    same(lambda m: (lambda f: (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.resolution, f.dtype,
                               repr(f)))(m.finfo(getattr(m, name))))


@pytest.mark.parametrize("name", ["int64", "int32", "int16", "int8", "uint8"])
def test_iinfo(name):
    same(lambda m: (lambda f: (f.bits, f.max, f.min, f.dtype, repr(f)))(m.iinfo(getattr(m, name))))


def test_finfo_iinfo_refuse_the_other_kind():
    same(lambda m: m.finfo(m.int32))
    same(lambda m: m.iinfo(m.float32))


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_can_cast_and_promote_types(a, b):
    same(lambda m: (m.can_cast(getattr(m, a), getattr(m, b)), str(m.promote_types(getattr(m, a), getattr(m, b)))))


@pytest.mark.parametrize("operands", [("t64", 2.5), ("t32", True), ("i64", 2.5), ("i32", "i64"), ("b", 1),
                                      ("0d-f64", "t32"), ("i32", 2)])
def test_result_type(operands):
    def mk(m, spec):
        table = {"t64": m.ones(2, dtype=m.float64), "t32": m.ones(2), "i64": m.ones(2, dtype=m.int64),
                 "i32": m.ones(2, dtype=m.int32), "b": m.ones(2, dtype=m.bool),
                 "0d-f64": m.tensor(1.0, dtype=m.float64)}
        return table.get(spec, spec) if isinstance(spec, str) else spec
    same(lambda m: str(m.result_type(*(mk(m, o) for o in operands))))


def _subclass_arrays(tmp_path):
    """ndarray subclasses user code hands over: a memmap (nanoGPT's get_batch), np.matrix, a masked array."""
    fn = tmp_path / "data.bin"
    np.arange(10, dtype=np.int64).tofile(fn)
    mm = np.memmap(fn, dtype=np.int64, mode="r+")
    return {"memmap": lambda: mm[2:6].astype(np.int64), "memmap_view": lambda: mm[1:4],
            "matrix": lambda: np.asmatrix(np.array([[1.0, 2.0], [3.0, 4.0]])),
            "masked": lambda: np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])}


@pytest.mark.parametrize("kind", ["memmap", "memmap_view", "matrix", "masked"])
@pytest.mark.parametrize("fn", ["from_numpy", "as_tensor", "asarray", "tensor"])
def test_ndarray_subclasses_work_as_ndarrays(tmp_path, kind, fn):
    make = _subclass_arrays(tmp_path)[kind]
    same(lambda m: (lambda t: (t, t + 1, t.sum(), t * t, t.reshape(-1)[:2]))(getattr(m, fn)(make())))


@pytest.mark.parametrize("fn", ["from_numpy", "as_tensor", "asarray"])
def test_ndarray_subclasses_share_memory(tmp_path, fn):
    a = _subclass_arrays(tmp_path)["memmap_view"]()
    t = getattr(ember, fn)(a)
    t[0] = 99
    assert a[0] == 99 and type(t.numpy()) is np.ndarray


def test_ndarray_subclass_as_index_and_in_collate(tmp_path):
    mm = _subclass_arrays(tmp_path)["memmap_view"]()
    same(lambda m: m.arange(20.0)[mm])
    from ember.utils.data import default_collate
    from torch.utils.data import default_collate as torch_collate
    assert default_collate([mm, mm]).tolist() == torch_collate([mm, mm]).tolist()
