"""ember.multiprocessing (torch.multiprocessing) and shared memory: spawn/start_processes with PyTorch's exceptions
and messages (differential: the same failing children under torch), tensors through queues and pools arriving in
shared memory, share_memory_()/is_shared(), and Hogwild training (two processes updating one model in place).

Children run the functions of tests/mp_workers.py. Most tests fork (fast); the Hogwild tests use the 'spawn' start
method, as pytorch/examples' mnist_hogwild does, with two processes.
"""
import multiprocessing
import pickle
import re
import sys
import warnings

import pytest
import torch
import torch.multiprocessing as tmp

import ember
import ember.multiprocessing as mp
import mp_workers as w

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork start method and memfd: Linux")


# ----- the module ---------------------------------------------------------------------------------------------------

def test_names_are_multiprocessing_and_pytorch():
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "get_context", "set_start_method", "get_start_method",
                 "get_all_start_methods", "Manager", "cpu_count"):
        assert getattr(mp, name) is getattr(multiprocessing, name) is getattr(tmp, name)
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
                 "SpawnContext", "set_sharing_strategy", "get_sharing_strategy",
                 "get_all_sharing_strategies"):
        assert hasattr(mp, name) and hasattr(tmp, name), name
    assert not hasattr(mp, "ProcessException") and not hasattr(tmp, "ProcessException")   # (in .spawn only)
    assert set(tmp.__all__) == set(mp.__all__)
    assert ember.multiprocessing is mp


def test_sharing_strategy():
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError) as want:
        tmp.set_sharing_strategy("nope")
    with pytest.raises(AssertionError) as got:
        mp.set_sharing_strategy("nope")
    # (a set's order of printing may differ between runs: compare the words)
    assert sorted(re.findall(r"\w+", str(got.value))) == sorted(re.findall(r"\w+", str(want.value)))
    mp.set_sharing_strategy("file_system")
    try:
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy("file_descriptor")


# ----- share_memory_ ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "bfloat16", "float16", "uint8"])
def test_share_memory_keeps_values(dtype):
    a = torch.arange(12).reshape(3, 4).to(getattr(torch, dtype))
    e = ember.arange(12).reshape(3, 4).to(getattr(ember, dtype))
    assert e.is_shared() is a.is_shared() is False
    assert e.share_memory_() is e and a.share_memory_() is a
    assert e.is_shared() is a.is_shared() is True
    assert e.tolist() == a.tolist() and e.dtype == getattr(ember, dtype)
    assert e.untyped_storage().data_ptr() == e.data_ptr()
    e.share_memory_()   # already shared: nothing moves
    assert e.is_shared()


def test_share_memory_of_a_view_moves_its_storage():
    """Every tensor on the storage follows it to shared memory, as in PyTorch (layouts kept)."""
    for lib in (torch, ember):
        base = lib.arange(24.0).reshape(4, 6)
        v = base[1:, ::2].t()
        other = base[0]
        v.share_memory_()
        assert v.is_shared() and base.is_shared() and other.is_shared()
        assert (v.shape, v.stride(), v.storage_offset()) == ((3, 3), (2, 6), 6)
        v.add_(1)
        assert base[1, 0].item() == 7.0 and v[0, 0].item() == 7.0
        assert v.untyped_storage().data_ptr() == base.data_ptr() and other.data_ptr() == base.data_ptr()


def test_meta_refused_as_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="^_share_fd_: only available on CPU$"):
            lib.ones(2, device="meta").share_memory_()


def test_module_share_memory():
    m, tm = ember.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    m.weight.grad, tm.weight.grad = ember.ones(2, 3), torch.ones(2, 3)
    m.register_buffer("running", ember.zeros(2))
    tm.register_buffer("running", torch.zeros(2))
    w_obj = m.weight
    assert m.share_memory() is m and tm.share_memory() is tm
    assert m.weight is w_obj and isinstance(m.weight, ember.nn.Parameter) and m.weight.requires_grad
    got = [m.weight.is_shared(), m.bias.is_shared(), m.weight.grad.is_shared(), m.running.is_shared()]
    want = [tm.weight.is_shared(), tm.bias.is_shared(), tm.weight.grad.is_shared(), tm.running.is_shared()]
    assert got == want == [True] * 4
    opt = ember.optim.SGD(m.parameters(), lr=0.1)   # an optimizer made after still updates the shared memory
    opt.step()
    assert m.weight.is_shared()


def test_adagrad_share_memory():
    m = ember.nn.Linear(2, 2)
    opt = ember.optim.Adagrad(m.parameters())
    opt.share_memory()
    assert all(opt.state[p]["sum"].is_shared() for p in m.parameters())


def test_untyped_storage_share_memory():
    s, ts = ember.UntypedStorage(8), torch.UntypedStorage(8)
    assert s.is_shared() is ts.is_shared() is False
    assert s.share_memory_() is s and ts.share_memory_() is ts
    assert s.is_shared() is ts.is_shared() is True
    assert len(s.tolist()) == len(ts.tolist()) == 8


def test_plain_pickle_copies_and_save_works(tmp_path):
    t = ember.arange(4.0).share_memory_()
    u = pickle.loads(pickle.dumps(t))
    assert u.tolist() == t.tolist() and not u.is_shared()
    ember.save({"t": t}, tmp_path / "t.pt")
    assert torch.load(tmp_path / "t.pt")["t"].tolist() == t.tolist()


# ----- queues and pools ---------------------------------------------------------------------------------------------

def test_queue_in_one_process_shares():
    q = mp.Queue()
    t = ember.arange(5.0)
    q.put(t)
    r = q.get(timeout=30)
    assert t.is_shared() and r.is_shared()
    assert r.data_ptr() == t.data_ptr()   # the same segment maps once per process
    p = ember.nn.Parameter(ember.ones(2, 2))
    q.put(p)
    rp = q.get(timeout=30)
    assert type(rp) is ember.nn.Parameter and rp.requires_grad and rp.data_ptr() == p.data_ptr()


def test_queue_between_processes_shares_memory():
    ctx = mp.get_context("fork")
    inq, outq = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=w.echo_doubled, args=(inq, outq))
    p.start()
    t = ember.arange(6.0).reshape(2, 3)[:, 1:]   # a view: its layout travels
    inq.put(t)
    back, plus = outq.get(timeout=60), outq.get(timeout=60)
    inq.put(None)
    p.join(60)
    assert p.exitcode == 0
    assert t.tolist() == [[2.0, 4.0], [8.0, 10.0]]          # the child's in-place write, seen here
    assert back.tolist() == t.tolist() and back.data_ptr() == t.data_ptr()
    assert plus.tolist() == [[3.0, 5.0], [9.0, 11.0]] and plus.is_shared()


def test_simple_queue_and_storage():
    q = mp.SimpleQueue()
    s = ember.UntypedStorage(4)
    q.put(s)
    r = q.get()
    assert isinstance(r, ember.UntypedStorage) and r.is_shared() and r.data_ptr() == s.data_ptr()


def test_pool_map_shares():
    ts = [ember.ones(3), ember.full((2,), 3.0)]
    with mp.get_context("fork").Pool(1) as pool:
        out = pool.map(w.double_in_place, ts)
    assert [t.tolist() for t in ts] == [[2.0] * 3, [6.0, 6.0]]
    assert [o.tolist() for o in out] == [[2.0] * 3, [6.0, 6.0]]


def test_non_leaf_refused_as_torch():
    msg = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
           "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
           "before serializing (e.g., putting it on the queue).")
    from multiprocessing.reduction import ForkingPickler
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError) as e:
            ForkingPickler.dumps(x)
        assert str(e.value) == msg


def test_dataloader_workers_still_work():
    ds = ember.utils.data.TensorDataset(ember.arange(20.0).reshape(10, 2))
    plain = [b[0].tolist() for b in ember.utils.data.DataLoader(ds, batch_size=3)]
    workers = [b[0].tolist() for b in ember.utils.data.DataLoader(ds, batch_size=3, num_workers=2)]
    assert plain == workers


# ----- spawn / start_processes: PyTorch's exceptions and messages ---------------------------------------------------

def _frames_out(msg: str) -> str:
    """The message without the wrapper frame's file and line (torch/multiprocessing vs ember/multiprocessing)."""
    return re.sub(r'File "[^"]*multiprocessing/spawn\.py", line \d+', "File SPAWN", msg)


def _failure(lib, fn, args, nprocs=2):
    with pytest.raises((lib.multiprocessing.ProcessRaisedException, lib.multiprocessing.ProcessExitedException)) as e:
        lib.multiprocessing.start_processes(fn, args=args, nprocs=nprocs, start_method="fork")
    return e.value


def test_child_exception_as_torch():
    got, want = _failure(ember, w.raise_at, (1,)), _failure(torch, w.raise_at, (1,))
    assert type(got).__name__ == type(want).__name__ == "ProcessRaisedException"
    assert isinstance(got, sys.modules["ember.multiprocessing.spawn"].ProcessException)
    assert got.error_index == want.error_index == 1
    assert _frames_out(str(got)) == _frames_out(str(want))
    assert str(got).startswith("\n\n-- Process 1 terminated with the following error:\nTraceback")
    assert str(got).endswith("ValueError: boom from 1\n")
    assert pickle.loads(pickle.dumps(got)).msg == got.msg


@pytest.mark.parametrize("fn, args", [(w.exit_with, (3,)), (w.kill_self, ())])
def test_child_exit_as_torch(fn, args):
    got, want = _failure(ember, fn, args, 1), _failure(torch, fn, args, 1)
    assert type(got).__name__ == type(want).__name__ == "ProcessExitedException"
    assert (str(got), got.exit_code, got.signal_name, got.error_index) == \
           (str(want), want.exit_code, want.signal_name, want.error_index)


def test_exit_code_zero_is_success():
    assert mp.start_processes(w.exit_with, args=(0,), nprocs=2, start_method="fork") is None


def test_spawn_other_start_method_warns_as_torch():
    def record(lib):
        with warnings.catch_warnings(record=True) as r:
            warnings.simplefilter("always")
            assert lib.multiprocessing.spawn(w.raise_at, args=(9,), nprocs=0, start_method="fork") is None
        return [(x.category, str(x.message)) for x in r]
    assert record(ember) == record(torch) != []


def test_join_false_returns_context():
    shared = ember.zeros(3).share_memory_()
    ctx = mp.start_processes(w.fill_own_slot, args=(shared, 10.0), nprocs=3, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 3
    while not ctx.join(timeout=60):
        pass
    assert ctx.join() is True
    assert shared.tolist() == [10.0, 11.0, 12.0]


def test_join_stops_the_others():
    """The first failure ends the others (SIGTERM) instead of waiting for them."""
    import time
    start = time.monotonic()
    ctx = mp.start_processes(w.raise_or_sleep, nprocs=2, join=False, start_method="fork")
    with pytest.raises(mp.ProcessRaisedException, match="RuntimeError: first") as e:
        while not ctx.join(timeout=60, grace_period=1):
            pass
    assert e.value.error_index == 0 and time.monotonic() - start < 30
    assert ctx.processes[1].exitcode == -15   # SIGTERM


def test_spawn_args_sharing_a_storage():
    """Two arguments on one storage reach a spawned child as one mapping (the descriptor passed once per tensor)."""
    t = ember.arange(4.0)
    flag = ember.zeros(1, dtype=ember.int64)
    mp.spawn(w.views_agree, args=(t, t.view(2, 2), flag), nprocs=1)
    assert flag.tolist() == [1]
    assert t.tolist() == [10.0, 20.0, 30.0, 40.0]


# ----- Hogwild (start method 'spawn', two processes) ----------------------------------------------------------------

def test_hogwild_both_updates_land():
    """Each process trains its own head of one shared model: the parameters after both equal each head's
    training replayed here, so both processes' in-place updates reached the shared memory."""
    ember.manual_seed(0)
    model = w.TwoHeads()
    replay = w.TwoHeads()
    replay.load_state_dict(model.state_dict())
    model.share_memory()
    mp.spawn(w.hogwild_head, args=(model, 5), nprocs=2)
    for rank in (0, 1):
        w.hogwild_head(rank, replay, 5)
    for (name, p), q in zip(model.named_parameters(), replay.parameters()):
        assert p.is_shared()
        assert ember.equal(p, q), name


def test_hogwild_training():
    """mnist_hogwild's pattern on synthetic data: mp.Process workers train the whole shared model at once."""
    ember.manual_seed(1)
    model = w.Net()
    x, y = w.synthetic(7)
    before = ember.nn.functional.nll_loss(model(x), y).item()
    model.share_memory()
    done = ember.zeros(2, dtype=ember.int64).share_memory_()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=w.hogwild_train, args=(rank, model, 6, done)) for rank in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert done.tolist() == [1, 1]
    with ember.no_grad():
        after = ember.nn.functional.nll_loss(model(x), y).item()
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    assert after < 0.4 * before and accuracy > 0.75, (before, after, accuracy)
