# Seed 001_07e3a7e51895e890.txt - "Gradient Hooks: Inspecting Gradients During Backprop"
import torch

def inspect_grad(grad):
    print(f"Gradient: mean={grad.mean():.4f}, std={grad.std():.4f}")
    return grad  # Can modify gradient here if needed

x = torch.randn(100, requires_grad=True)
x.register_hook(inspect_grad)

y = (x ** 2).sum()
y.backward()  # Prints gradient statistics during backprop
