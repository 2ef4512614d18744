"""DataLoader over a TensorDataset, clip_grad_norm_, schedulers (OneCycle, Plateau, warm restarts), EMA averaging."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(14)
X = torch.randn(40, 3)
Y = (X @ torch.tensor([1.0, -1.0, 2.0]) + 0.1 * torch.randn(40)).unsqueeze(1)
ds = TensorDataset(X, Y)
train, val = random_split(ds, [32, 8], generator=torch.Generator().manual_seed(0))
print(len(train), len(val), train.indices[:5])
dl = DataLoader(train, batch_size=8, shuffle=True, drop_last=True)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=12)
plateau_opt = torch.optim.Adam([nn.Parameter(torch.zeros(1))], lr=0.1)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(plateau_opt, patience=0, factor=0.5)
warm_opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
warm = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(warm_opt, T_0=2, T_mult=2, eta_min=0.01)
ema = torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))
for epoch in range(3):
    for xb, yb in dl:
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        sched.step()
        ema.update_parameters(model)
    with torch.no_grad():
        vl = sum(nn.functional.mse_loss(model(x), y, reduction="sum") for x, y in DataLoader(val, batch_size=4)) / len(val)
    plateau.step(1.0)
    warm.step()
    print(f"epoch {epoch} loss {loss.item():.5f} norm {norm.item():.5f} val {vl.item():.5f} lr {sched.get_last_lr()[0]:.6f}"
          f" plateau {plateau_opt.param_groups[0]['lr']} warm {warm.get_last_lr()[0]:.6f}")
print(ema.n_averaged, ema.module.weight)
print(nn.utils.clip_grad_value_(model.parameters(), 0.01), model.weight.grad)
print(nn.utils.parameters_to_vector(model.parameters()))
print(next(iter(DataLoader(ds, batch_size=3)))[0].shape, len(DataLoader(ds, batch_size=7)))
