"""The demo's models and training loop, written against the PyTorch API for any ``lib`` (ember or torch).

Everything random (the train/test split, the initial weights, the shuffled batches) is drawn from
``lib``'s generator after ``lib.manual_seed(seed)``, so ember and torch start from the same numbers.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field


def load_digits(lib, seed: int, test_fraction: float = 0.2):
    """scikit-learn's 8x8 digits (1797 images, no download) as float32 tensors scaled to [0, 1], split
    by a permutation drawn from ``lib``'s generator seeded with ``seed``."""
    from sklearn.datasets import load_digits as _load

    d = _load()
    x = lib.tensor(d.data, dtype=lib.float32) / 16.0
    y = lib.tensor(d.target, dtype=lib.int64)
    g = lib.Generator().manual_seed(seed)
    perm = lib.randperm(len(y), generator=g)
    n_test = int(len(y) * test_fraction)
    test, train = perm[:n_test], perm[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def make_model(lib, kind: str):
    nn = lib.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    if kind == "cnn":
        return nn.Sequential(
            nn.Unflatten(1, (1, 8, 8)),
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 16 x 4 x 4
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 32 x 2 x 2
            nn.Flatten(), nn.Linear(128, 10))
    raise ValueError(f"unknown model {kind!r}: use 'mlp' or 'cnn'")


@dataclass
class History:
    """Per epoch: mean training loss, training accuracy, test accuracy, seconds."""
    loss: list = field(default_factory=list)
    train_acc: list = field(default_factory=list)
    test_acc: list = field(default_factory=list)
    seconds: list = field(default_factory=list)


def accuracy(lib, model, x, y) -> float:
    model.eval()
    with lib.inference_mode():
        pred = model(x).argmax(dim=1)
    model.train()
    return (pred == y).float().mean().item()


def fit(lib, kind: str, *, epochs: int, seed: int, batch_size: int = 64, lr: float = 1e-2,
        progress: bool = True, label: str = ""):
    """Train model ``kind`` on the digits with Adam and cross-entropy; returns (model, History)."""
    import importlib
    data = importlib.import_module(lib.__name__ + ".utils.data")
    lib.manual_seed(seed)
    (xtr, ytr), (xte, yte) = load_digits(lib, seed)
    model = make_model(lib, kind)
    opt = lib.optim.Adam(model.parameters(), lr=lr)
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = lib.nn.CrossEntropyLoss()
    loader = data.DataLoader(data.TensorDataset(xtr, ytr), batch_size=batch_size, shuffle=True,
                             generator=lib.Generator().manual_seed(seed))
    hist = History()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=epochs * len(loader), desc=f"{label}{kind}", unit="step", leave=True)
    for epoch in range(epochs):
        t0 = time.perf_counter()
        total, correct, seen = 0.0, 0, 0
        for xb, yb in loader:
            opt.zero_grad()
            out = model(xb)
            loss = loss_fn(out, yb)
            loss.backward()
            opt.step()
            total += loss.item() * len(yb)
            correct += (out.argmax(dim=1) == yb).sum().item()
            seen += len(yb)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{total / seen:.4f}", acc=f"{correct / seen:.3f}")
        sched.step()
        hist.seconds.append(time.perf_counter() - t0)
        hist.loss.append(total / seen)
        hist.train_acc.append(correct / seen)
        hist.test_acc.append(accuracy(lib, model, xte, yte))
    if bar is not None:
        bar.close()
    return model, hist, (xte, yte)
