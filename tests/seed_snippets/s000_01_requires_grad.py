# Seed 000_2a66a9701caa613b.txt - "Understanding requires_grad" (requires_grad.py)
import torch

# Create a tensor that tracks gradients
x = torch.tensor([2.0, 3.0], requires_grad=True)
print(x.requires_grad)  # True

# Regular tensor (no gradient tracking)
y = torch.tensor([1.0, 2.0])
print(y.requires_grad)  # False

# Operations on tracked tensors create new tracked tensors
z = x * 2 + 1
print(z.requires_grad)  # True (inherited from x)

# The result stores a reference to its creator
print(z.grad_fn)  # <AddBackward0 object>

# Check if a tensor is a leaf (created directly, not from ops)
print(x.is_leaf)  # True
print(z.is_leaf)  # False
