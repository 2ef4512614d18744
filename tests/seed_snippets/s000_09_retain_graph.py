# Seed 000_2a66a9701caa613b.txt - "3. retain_graph" (retain_graph.py)
import torch

x = torch.tensor([2.0], requires_grad=True)
y = x ** 2

# First backward - graph is retained
y.backward(retain_graph=True)
print(x.grad)  # tensor([4.])

x.grad.zero_()  # Reset gradient

# Second backward on same graph
y.backward()  # Works because graph was retained
print(x.grad)  # tensor([4.])

# Without retain_graph=True, second backward would fail!
