"""Functions that tests/test_multiprocessing.py runs in child processes (importable by a spawned child, and light:
only ember, never torch, so each spawned interpreter starts quickly)."""
import os
import signal
import sys

import ember
from ember import nn


def fill_own_slot(i, shared, value):
    """spawn target: writes ``value + i`` into element i of a tensor in shared memory."""
    shared[i] = value + i


def raise_at(i, bad):
    if i == bad:
        raise ValueError(f"boom from {i}")


def exit_with(i, code):
    sys.exit(code)


def kill_self(i):
    os.kill(os.getpid(), signal.SIGKILL)


def double_in_place(t):
    """Pool/Queue target: doubles a received tensor in place (the sender sees it) and returns it."""
    t.mul_(2)
    return t


def echo_doubled(inq, outq):
    t = inq.get()
    t.mul_(2)
    outq.put(t)
    outq.put(t + 1)   # a new tensor made here travels back the same way
    inq.get()         # stay alive until the parent has received them (it maps them through this process)


class TwoHeads(nn.Module):
    """Two independent linear maps: a Hogwild worker ``rank`` trains head ``rank`` only (disjoint parameters, so
    the processes' writes never overlap and the result is deterministic)."""

    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(3, 1), nn.Linear(3, 1)])

    def forward(self, x, which):
        return self.heads[which](x)


def hogwild_head(rank, model, steps):
    """Trains head ``rank`` of the shared model for ``steps`` SGD steps on data seeded by rank."""
    ember.manual_seed(100 + rank)
    x = ember.randn(16, 3)
    y = x @ ember.tensor([[1.0], [-2.0], [0.5]]) + rank
    opt = ember.optim.SGD(model.heads[rank].parameters(), lr=0.1, momentum=0.5)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x, rank), y).backward()
        opt.step()


class Net(nn.Module):
    """A small classifier (mnist_hogwild's shape of training, on synthetic data)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return nn.functional.log_softmax(self.fc2(nn.functional.relu(self.fc1(x))), dim=1)


def synthetic(seed, n=96):
    """Three separable classes in 8 dimensions."""
    g = ember.Generator().manual_seed(seed)
    y = ember.randint(0, 3, (n,), generator=g)
    x = ember.randn(n, 8, generator=g) * 0.5
    x[:, 0] += y.float() * 4
    return x, y


def hogwild_train(rank, model, epochs, done):
    """A Hogwild worker: both processes train the whole shared model, as pytorch/examples' mnist_hogwild."""
    ember.manual_seed(1 + rank)
    x, y = synthetic(rank)
    loader = ember.utils.data.DataLoader(ember.utils.data.TensorDataset(x, y), batch_size=16, shuffle=True)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for _ in range(epochs):
        for data, target in loader:
            opt.zero_grad()
            nn.functional.nll_loss(model(data), target).backward()
            opt.step()
    done[rank] = 1


def views_agree(i, a, b, flag):
    """spawn target: ``a`` and ``b`` view one storage (sent as one descriptor twice); a write through ``a`` shows
    in ``b`` and in the parent, and the descriptor outlives the second tensor's unpickling."""
    a.add_(1)
    del a
    import gc
    gc.collect()
    flag[0] = 1 if b.tolist() == [[1.0, 2.0], [3.0, 4.0]] else -1
    b.mul_(10)


def raise_or_sleep(i):
    """Process 0 fails at once; the others would run for a minute."""
    if i == 0:
        raise RuntimeError("first")
    import time
    time.sleep(60)
