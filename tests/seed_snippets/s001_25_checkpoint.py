# Seed 001_07e3a7e51895e890.txt - "Gradient Checkpointing: Trading Compute for Memory"
import torch
from torch.utils.checkpoint import checkpoint

def expensive_function(x):
    # Imagine this is a very deep network segment
    return x ** 2

x = torch.randn(1000, 1000, requires_grad=True)

# Normal: stores all intermediate activations (uses more memory)
y = expensive_function(x)

# Checkpointed: only stores input, recomputes activations during backward
y = checkpoint(expensive_function, x)
