# Seed 000_2a66a9701caa613b.txt - "Example 2: Custom Gradient Modification" (gradient_modification.py)
import torch

# Gradient clipping
x = torch.randn(100, requires_grad=True)
y = (x ** 2).sum()
y.backward()

# Clip gradients to prevent explosion
torch.nn.utils.clip_grad_norm_([x], max_norm=1.0)

# Or manually
x.grad.clamp_(-1, 1)

# Register a backward hook for custom gradient processing
def print_grad(grad):
    print(f"Gradient shape: {grad.shape}, mean: {grad.mean():.4f}")
    return grad  # Return modified gradient or None to use original

x = torch.randn(10, requires_grad=True)
x.register_hook(print_grad)
y = (x ** 2).sum()
y.backward()  # Hook is called during backward
