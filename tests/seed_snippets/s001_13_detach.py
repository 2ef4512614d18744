# Seed 001_07e3a7e51895e890.txt - "Detaching Tensors: Stopping Gradient Flow"
import torch

x = torch.randn(3, requires_grad=True)
y = x ** 2

# Detach y from the graph
z = y.detach() + x

# Backward through z computes gradients w.r.t. x (from the "x" term)
# but NOT through y (because y was detached)
loss = z.sum()
loss.backward()

print(x.grad)  # Only gradient from the "x" term in z = y.detach() + x
