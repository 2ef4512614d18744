# Seed 001_07e3a7e51895e890.txt - "Higher-Order Gradients: Gradients of Gradients"
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x ** 3

# First derivative: dy/dx
grad_y = torch.autograd.grad(y, x, create_graph=True)[0]
print(f"First derivative: {grad_y}")  # 12.0 = 3*x²

# Second derivative: d²y/dx²
grad2_y = torch.autograd.grad(grad_y, x)[0]
print(f"Second derivative: {grad2_y}")  # 12.0 = 6*x
