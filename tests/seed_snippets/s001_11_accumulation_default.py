# Seed 001_07e3a7e51895e890.txt - "Gradient Accumulation: The Default Behavior"
import torch

x = torch.tensor(2.0, requires_grad=True)

for i in range(3):
    y = x ** 2
    y.backward()
    print(f"Iteration {i+1}: x.grad = {x.grad}")

# Output:
# Iteration 1: x.grad = 4.0
# Iteration 2: x.grad = 8.0   ← 4.0 + 4.0 (accumulated!)
# Iteration 3: x.grad = 12.0  ← 8.0 + 4.0 (accumulated again!)
