# Seed 000_2a66a9701caa613b.txt - "Using backward()" (backward_method.py)
import torch

# Simple example: y = x^2, find dy/dx at x=3
x = torch.tensor([3.0], requires_grad=True)
y = x ** 2  # y = 9

# Compute gradients
y.backward()

# Gradient is stored in x.grad
print(x.grad)  # tensor([6.]) since dy/dx = 2x = 6

# For multiple outputs, backward works on scalars
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = a ** 2  # b = [1, 4]
loss = b.sum()  # loss = 5 (scalar)
loss.backward()
print(a.grad)  # tensor([2., 4.]) since d(sum)/da = 2a

# For non-scalar outputs, provide gradient argument
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x ** 2  # y = [1, 4]
# This is the "vector-Jacobian product"
y.backward(torch.tensor([1.0, 1.0]))  # gradient = ones
print(x.grad)  # tensor([2., 4.])
