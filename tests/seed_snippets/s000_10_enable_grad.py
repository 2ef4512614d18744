# Seed 000_2a66a9701caa613b.txt - "4. torch.enable_grad()" (enable_grad.py)
import torch

with torch.no_grad():
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2  # No gradient tracking

    with torch.enable_grad():
        z = x * 3  # Gradient tracking re-enabled
        print(z.requires_grad)  # True
