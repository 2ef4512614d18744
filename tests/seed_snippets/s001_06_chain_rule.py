# Seed 001_07e3a7e51895e890.txt - "The Chain Rule: Composition of Functions"
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x ** 2      # y = x²
z = y + 3       # z = y + 3 = x² + 3
w = z ** 2      # w = z² = (x² + 3)²

w.backward()
print(x.grad)   # How much does w change when x changes?
