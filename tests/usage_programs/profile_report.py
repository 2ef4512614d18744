"""The profiler's reports as a user reads them: table layout (numbers masked), shapes, memory, chrome trace, stacks."""
import json
import os
import re
import tempfile

import torch
import torch.nn as nn
from torch.profiler import profile, record_function, ProfilerActivity

torch.manual_seed(16)
model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
x = torch.randn(2, 1, 6, 6)


def masked(table):
    return [re.sub(r"-?\d+(\.\d+)?(%|us|ms|s|b|Kb|Mb|Gb)?", "#", line) for line in table.splitlines()]


with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
    with record_function("forward"):
        out = model(x)
    with record_function("backward"):
        out.sum().backward()
ka = prof.key_averages()
t = masked(ka.table(sort_by="self_cpu_time_total", row_limit=3))
print(t[0] == t[2], t[1])
print(len(t), t[-1])
keys = {e.key for e in ka}
# (PyTorch also records the ATen internals of each op: aten::_convolution, aten::mkldnn_convolution, aten::empty,
# aten::as_strided, aten::clamp_min...; ember records the ops a user calls and their backward nodes)
user = ["aten::conv2d", "aten::convolution", "aten::relu", "aten::flatten", "aten::linear", "aten::addmm", "aten::t",
        "aten::sum", "aten::ones_like", "aten::view", "aten::reshape", "forward", "backward", "ConvolutionBackward0",
        "AddmmBackward0", "ReluBackward0", "SumBackward0", "TBackward0", "ViewBackward0", "torch::autograd::AccumulateGrad"]
print({k: k in keys for k in user})
print(sorted(k for k in keys if k.startswith("autograd::")))
shapes = {(e.key, str(e.input_shapes)) for e in prof.key_averages(group_by_input_shape=True) if e.key in ("aten::conv2d", "aten::relu")}
print(sorted(shapes))
ev = {e.key: e for e in ka}
print(ev["aten::conv2d"].count, ev["aten::relu"].cpu_memory_usage > 0)
mt = masked(ka.table(sort_by="self_cpu_memory_usage", row_limit=2))
print(mt[1])
d = tempfile.mkdtemp()
path = os.path.join(d, "trace.json")
prof.export_chrome_trace(path)
tr = json.load(open(path))
evs = tr["traceEvents"] if isinstance(tr, dict) else tr
print(type(tr).__name__, sorted({e.get("ph") for e in evs if e.get("cat") in ("cpu_op", "user_annotation")}),
      sorted({e.get("cat") for e in evs if e.get("cat")})[:6], tr.get("record_shapes"), tr.get("profile_memory"), tr.get("with_stack"))
flows = [e for e in evs if e.get("cat") == "fwdbwd"]
print(sorted({e["ph"] for e in flows}), len(flows) % 2, [(e["name"], e["pid"], e["tid"]) for e in evs if e.get("cat") == "Trace"])
names = [e["name"] for e in evs if e.get("cat") == "user_annotation"]
print(sorted(set(names)))
one = next(e for e in evs if e.get("name") == "aten::addmm")
# (PyTorch's args also hold "Concrete Inputs", "Input type", "Input Strides"; ember's do not)
print(sorted(one), {k: k in one["args"] for k in ("External id", "Ev Idx", "Input Dims", "Record function id", "Sequence number", "Fwd thread id")})
print(prof.key_averages().table(sort_by="count", row_limit=0).count("\n") > 0)
try:
    prof.key_averages().table(sort_by="nonsense")
except Exception as e:
    print(type(e).__name__, str(e)[:120])
