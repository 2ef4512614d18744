"""A training loop under torch.profiler.profile with a schedule and record_function."""
import re

import torch
import torch.nn as nn
from torch.profiler import profile, record_function, ProfilerActivity, schedule

torch.manual_seed(7)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
traces = []
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
             record_shapes=True, on_trace_ready=lambda p: traces.append(p.step_num)) as prof:
    for step in range(6):
        with record_function("train_step"):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        prof.step()
print("traces at", traces)
ka = prof.key_averages()
names = sorted({e.key for e in ka})
want = ["train_step", "aten::linear", "aten::addmm", "aten::relu", "aten::cross_entropy_loss", "aten::log_softmax",
        "aten::nll_loss", "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad", "autograd::engine::evaluate_function: AddmmBackward0"]
print({n: n in names for n in want})
print({e.key: e.count for e in ka if e.key in want})
table = ka.table(sort_by="cpu_time_total", row_limit=5)
lines = table.splitlines()
print(re.sub(r"\s+", " ", lines[1]).strip())
print(len(lines), lines[-2].split(":")[0], lines[-1].split(":")[0])
with profile() as p2:
    with record_function("outer"):
        torch.ones(3).mul(2.0).exp()
print(sorted(e.key for e in p2.key_averages()))
print([(e.key, e.input_shapes) for e in p2.key_averages(group_by_input_shape=True) if e.key == "aten::exp"])
