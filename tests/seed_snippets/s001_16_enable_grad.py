# Seed 001_07e3a7e51895e890.txt - "torch.enable_grad(): Selective Re-enabling"
import torch

x = torch.randn(3, requires_grad=True)

with torch.no_grad():
    # Gradients disabled here
    y = x ** 2

    with torch.enable_grad():
        # Gradients re-enabled for this block
        z = x ** 3
        z.sum().backward()  # This works!
        print(x.grad)  # Gradients computed
