# Seed 000_2a66a9701caa613b.txt - "Example 3: Higher-Order Gradients" (higher_order.py)
import torch

# Second derivative: d²y/dx²
x = torch.tensor([2.0], requires_grad=True)
y = x ** 3  # y = 8

# First derivative
grad1 = torch.autograd.grad(y, x, create_graph=True)[0]
print(grad1)  # tensor([12.]) = 3x² = 3*4 = 12

# Second derivative
grad2 = torch.autograd.grad(grad1, x)[0]
print(grad2)  # tensor([12.]) = 6x = 6*2 = 12

# Useful for: physics-informed neural networks, Hessian computation
