# Seed 001_07e3a7e51895e890.txt - "Gradient Accumulation: The Default Behavior" (zeroing the gradients)
import torch

x = torch.tensor(2.0, requires_grad=True)

for i in range(3):
    x.grad = None  # Option 1: set to None (slightly more efficient)
    # OR
    # (as written, option 2 runs right after option 1, so x.grad is None and it raises)
    try:
        x.grad.zero_()  # Option 2: zero in-place (if grad exists)
    except Exception as e:
        print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")

    y = x ** 2
    y.backward()
    print(f"Iteration {i+1}: x.grad = {x.grad}")
