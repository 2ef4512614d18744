# Seed 001_07e3a7e51895e890.txt - "Multiple Backward Calls: A Common Pitfall" (retain_graph=True)
import torch

# setup from the previous snippet in the document (before its first backward)
x = torch.tensor(2.0, requires_grad=True)
y = x ** 2

y.backward(retain_graph=True)  # Keep graph
y.backward()  # Now this works
