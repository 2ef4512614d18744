# Seed 001_07e3a7e51895e890.txt - "Basic Backward: The Simplest Case"
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x ** 3  # y = x³

y.backward()  # Compute dy/dx

print(x.grad)  # tensor(12.) = 3 * x² = 3 * 2² = 12
