# Seed 001_07e3a7e51895e890.txt - "torch.inference_mode(): Even Stronger Optimization"
import torch

# setup from the previous snippet in the document
x = torch.randn(3, requires_grad=True)

with torch.inference_mode():
    y = x ** 2  # Even faster than no_grad()
