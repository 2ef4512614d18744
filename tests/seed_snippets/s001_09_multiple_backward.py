# Seed 001_07e3a7e51895e890.txt - "Multiple Backward Calls: A Common Pitfall"
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x ** 2

y.backward()  # First backward - works fine
# y.backward()  # Second backward - ERROR: graph has been freed!
