# Seed 000_2a66a9701caa613b.txt - "4. Converting to NumPy with Gradients" (pitfall_numpy.py)
import torch

# ❌ BUG: Can't convert tensor with gradients to NumPy
x = torch.tensor([1.0], requires_grad=True)
y = x ** 2
try:
    y.numpy()  # RuntimeError!
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")

# ✓ CORRECT: Detach first
y.detach().numpy()  # Works

# Or if on GPU:
y.detach().cpu().numpy()  # Works
