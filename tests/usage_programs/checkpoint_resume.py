"""Checkpoint {model, optimizer, scheduler, epoch, rng state} and resume; weights_only default and safe_globals."""
import os
import sys
import tempfile
import warnings

import torch
import torch.nn as nn

torch.manual_seed(5)
x, y = torch.randn(32, 4), torch.randn(32, 1)


def make():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def epoch(model, opt, sched):
    idx = torch.randperm(32)[:16]
    loss = nn.functional.mse_loss(model(x[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    return loss.item()


model, opt, sched = make()
d = tempfile.mkdtemp()
path = os.path.join(d, "ckpt.pt")
for ep in range(3):
    print("ep", ep, f"{epoch(model, opt, sched):.6f}", sched.get_last_lr())
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "epoch": 3, "rng": torch.get_rng_state(), "note": "run-1", "best": 0.5}, path)
ref = [f"{epoch(model, opt, sched):.6f}" for _ in range(3)]
print("continued", ref)

model2, opt2, sched2 = make()
ck = torch.load(path)
print(sorted(ck), ck["epoch"], ck["note"], type(ck["rng"]).__name__, ck["rng"].dtype, ck["rng"].shape)
model2.load_state_dict(ck["model"])
opt2.load_state_dict(ck["optimizer"])
sched2.load_state_dict(ck["scheduler"])
torch.set_rng_state(ck["rng"])
print("resumed", [f"{epoch(model2, opt2, sched2):.6f}" for _ in range(3)])
print(opt2.state_dict()["param_groups"][0]["lr"], sched2.last_epoch)
print(list(opt2.state_dict()["state"][0].keys()))


class Config:
    def __init__(self, lr):
        self.lr = lr

    def __repr__(self):
        return f"Config(lr={self.lr})"


torch.save({"cfg": Config(0.1), "w": torch.ones(2)}, path)
try:
    torch.load(path)
except Exception as e:
    print(type(e).__name__, str(e).replace(__name__, "MOD").splitlines()[0][:120])
    print([line for line in str(e).splitlines() if "WeightsUnpickler error" in line])
print(torch.serialization.get_unsafe_globals_in_checkpoint(path))
with torch.serialization.safe_globals([Config]):
    print(torch.load(path))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    print(torch.load(path, weights_only=False))
print(len(w))
torch.save(x[:2, :2], path)
print(torch.load(path, map_location="cpu"), torch.load(path, mmap=True))
