"""A SummaryWriter loop; read the scalars back with tensorboard's event reader."""
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

torch.manual_seed(8)
d = tempfile.mkdtemp()
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(10, 3), torch.randn(10, 1)
with SummaryWriter(log_dir=d) as w:
    for step in range(5):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.add_scalar("loss/train", loss.item(), step)
        w.add_scalars("lr", {"a": 0.1, "b": 0.2 * step}, step)
        w.add_histogram("weight", model.weight, step)
    w.add_text("note", "hello", 0)
    w.add_image("img", torch.rand(3, 4, 4), 0)
    w.add_hparams({"lr": 0.1, "bs": 10}, {"hparam/loss": loss.item()})
print(w.get_logdir() == d)
ea = EventAccumulator(d)
ea.Reload()
tags = ea.Tags()
print(sorted(tags["scalars"]), sorted(tags["histograms"]), sorted(tags["images"]), sorted(tags["tensors"]))
print([(e.step, round(e.value, 6)) for e in ea.Scalars("loss/train")])
h = ea.Histograms("weight")[-1].histogram_value
print(h.num, round(h.min, 6), round(h.max, 6), round(h.sum, 6))
print(sorted(os.listdir(d))[:0], len([s for s in os.listdir(d) if os.path.isdir(os.path.join(d, s))]))
