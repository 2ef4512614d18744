# Seed 001_07e3a7e51895e890.txt - "The Common Case: Scalar Loss Functions"
import torch

x = torch.randn(3, requires_grad=True)
y = x ** 2  # Vector
loss = y.sum()  # Scalar loss - sum of squared values

loss.backward()  # No argument needed!
print(x.grad)  # [2*x₀, 2*x₁, 2*x₂]
