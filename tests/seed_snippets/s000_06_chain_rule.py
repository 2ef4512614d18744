# Seed 000_2a66a9701caa613b.txt - "The Chain Rule in Action" (chain_rule.py)
import torch

# Compute gradient of z = (x + y)^2 where x=2, y=3
x = torch.tensor([2.0], requires_grad=True)
y = torch.tensor([3.0], requires_grad=True)

# Forward pass: build the graph
s = x + y      # s = 5, grad_fn=AddBackward0
z = s ** 2     # z = 25, grad_fn=PowBackward0

# Backward pass: apply chain rule
z.backward()

# dz/dx = dz/ds * ds/dx = 2s * 1 = 2*5 = 10
print(x.grad)  # tensor([10.])

# dz/dy = dz/ds * ds/dy = 2s * 1 = 2*5 = 10
print(y.grad)  # tensor([10.])
