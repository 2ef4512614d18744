"""Checkpoint details: shared storage and views, map_location forms, legacy format, pickle protocol, errors."""
import collections
import io
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(21)
base = torch.arange(10.0)
view = base[2:5]
d = {"base": base, "view": view, "t": base.t() if base.dim() == 2 else base.view(2, 5)}
buf = io.BytesIO()
torch.save(d, buf)
buf.seek(0)
out = torch.load(buf)
out["base"][3] = 100.0
print(out["view"], out["t"][0], out["view"].storage_offset(), out["view"].is_contiguous())
buf = io.BytesIO()
torch.save(base[:3], buf)
print(len(buf.getvalue()) > 0, torch.load(io.BytesIO(buf.getvalue())).untyped_storage().nbytes())
for ml in ("cpu", torch.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s, None):
    print(torch.load(io.BytesIO(buf.getvalue()), map_location=ml))
od = collections.OrderedDict([("w", torch.ones(2)), ("n", 3), ("s", {"a", "b"} if False else "str"), ("tup", (1, 2.5, None, True))])
buf = io.BytesIO()
torch.save(od, buf, pickle_protocol=4)
buf.seek(0)
print(torch.load(buf, weights_only=False))   # (PyTorch's weights_only unpickler refuses protocol 4's FRAME opcode)
# (the legacy format, _use_new_zipfile_serialization=False, is not built in ember)
path = os.path.join(tempfile.mkdtemp(), "m.pt")
m = nn.Linear(3, 2)
torch.save(m.state_dict(), path)
sd = torch.load(path, mmap=True, weights_only=True)
print(type(sd).__name__, list(sd), sd["weight"].requires_grad)
m2 = nn.Linear(3, 2)
print(m2.load_state_dict(sd, assign=True), m2.weight.requires_grad, type(m2.weight).__name__)
try:
    nn.Linear(3, 4).load_state_dict(sd)
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.load(io.BytesIO(b"not a checkpoint"))
except Exception as e:
    print(type(e).__name__)   # (ember says what the file is instead of PyTorch's weights_only advice)
try:
    torch.load(os.path.join(tempfile.mkdtemp(), "missing.pt"))
except Exception as e:
    print(type(e).__name__, str(e).split(":")[0])
g = torch.Generator().manual_seed(3)
buf = io.BytesIO()
torch.save({"gstate": g.get_state(), "dtype": torch.float16, "dev": torch.device("cpu"), "size": torch.Size([2, 3])}, buf)
buf.seek(0)
ck = torch.load(buf)
print(ck["dtype"], ck["dev"], ck["size"], ck["gstate"].shape)
g2 = torch.Generator()
g2.set_state(ck["gstate"])
print(torch.rand(2, generator=g2), torch.rand(2, generator=torch.Generator().manual_seed(3)))
