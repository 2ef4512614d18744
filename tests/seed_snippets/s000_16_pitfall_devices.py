# Seed 000_2a66a9701caa613b.txt - "3. Mixing Devices" (pitfall_devices.py)
import torch

# ❌ BUG: Tensors on different devices
try:
    x = torch.tensor([1.0], device='cuda', requires_grad=True)
    y = torch.tensor([2.0], device='cpu', requires_grad=True)
    z = x + y  # RuntimeError!
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")

# ✓ CORRECT: Same device
# (wrapped too: on a machine without CUDA, creating a 'cuda' tensor raises)
try:
    x = torch.tensor([1.0], device='cuda', requires_grad=True)
    y = torch.tensor([2.0], device='cuda', requires_grad=True)
    z = x + y  # Works
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
