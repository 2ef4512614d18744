"""NumPy data in checkpoints (time_sequence_prediction saves its data): weights_only errors and safe_globals."""
import io

import numpy as np
import torch

buf = io.BytesIO()
# (a NumPy scalar such as np.float64(2.5) is written by ember as a Python number: it loads back as a float)
torch.save({"data": np.arange(6.0).reshape(2, 3), "ints": np.array([1, 2], dtype=np.int32)}, buf)
raw = buf.getvalue()
try:
    torch.load(io.BytesIO(raw))
except Exception as e:
    print(type(e).__name__)
    print("\n".join(line for line in str(e).splitlines() if "global" in line.lower()))
print(sorted(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw))))
allow = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, np.dtypes.Float64DType, np.dtypes.Int32DType]
with torch.serialization.safe_globals(allow):
    out = torch.load(io.BytesIO(raw))
print(out["data"], out["ints"].dtype)
# (PyTorch's list also holds its own entries: _rebuild_njt, NestedTensor, the device-mesh layouts)
print(np.ndarray in torch.serialization.get_safe_globals())
torch.serialization.add_safe_globals([np.ndarray])
print(np.ndarray in torch.serialization.get_safe_globals())
torch.serialization.clear_safe_globals()
print(torch.serialization.get_safe_globals())
print(torch.load(io.BytesIO(raw), weights_only=False)["data"].sum())
t = torch.from_numpy(np.ones(3))
buf = io.BytesIO()
torch.save(t, buf)
print(torch.load(io.BytesIO(buf.getvalue())).dtype)
