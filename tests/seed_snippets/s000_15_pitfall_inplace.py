# Seed 000_2a66a9701caa613b.txt - "2. Modifying Tensors In-Place" (pitfall_inplace.py)
import torch

# ❌ BUG: In-place operations can break autograd
x = torch.tensor([2.0], requires_grad=True)
y = x ** 2
try:
    x.add_(1)  # In-place modification after y was computed
    y.backward()  # RuntimeError!
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")

# ✓ CORRECT: Use out-of-place operations
x = torch.tensor([2.0], requires_grad=True)
y = x ** 2
x = x + 1  # Creates new tensor
# (Note: y still depends on original x value)
