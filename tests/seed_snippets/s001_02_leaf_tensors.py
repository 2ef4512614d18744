# Seed 001_07e3a7e51895e890.txt - "Leaf Tensors vs Intermediate Tensors" (leaf tensors)
import torch

x = torch.tensor(1.0, requires_grad=True)  # Leaf tensor
y = torch.randn(3, requires_grad=True)     # Leaf tensor
param = torch.nn.Parameter(torch.randn(10))  # Also a leaf (parameters are leaves)
