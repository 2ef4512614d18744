# Seed 000_2a66a9701caa613b.txt - "Gradient Accumulation" (accumulation_bug.py)
import torch

x = torch.tensor([2.0], requires_grad=True)

# First backward
y1 = x ** 2
y1.backward()
print(x.grad)  # tensor([4.])

# Second backward WITHOUT zeroing
y2 = x ** 2
y2.backward()
print(x.grad)  # tensor([8.]) - ACCUMULATED! 4 + 4 = 8

# This is a bug in most training loops!

# Correct approach: zero gradients
x.grad.zero_()  # or x.grad = None
y3 = x ** 2
y3.backward()
print(x.grad)  # tensor([4.]) - correct!
