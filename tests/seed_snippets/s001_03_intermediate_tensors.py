# Seed 001_07e3a7e51895e890.txt - "Leaf Tensors vs Intermediate Tensors" (intermediate tensors)
import torch

# setup from the previous snippet in the document
x = torch.tensor(1.0, requires_grad=True)  # Leaf tensor
y = torch.randn(3, requires_grad=True)     # Leaf tensor

z = x + y  # Intermediate tensor - result of addition
w = z.relu()  # Intermediate tensor - result of ReLU
