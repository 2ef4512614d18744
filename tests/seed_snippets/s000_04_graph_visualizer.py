# Seed 000_2a66a9701caa613b.txt - "Interactive: Computational Graph Builder" (PyTorch Code panel)
import torch

x = torch.tensor([2.0], requires_grad=True)
y = x ** 2 + 3 * x
# dy/dx = 2x + 3 = 7
