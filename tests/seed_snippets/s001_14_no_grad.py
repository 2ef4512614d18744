# Seed 001_07e3a7e51895e890.txt - "torch.no_grad(): Disabling Gradient Tracking"
import torch

x = torch.randn(3, requires_grad=True)

with torch.no_grad():
    y = x ** 2  # This operation is not tracked
    print(y.requires_grad)  # False - no gradient tracking

# Outside the context, tracking resumes
z = x ** 3
print(z.requires_grad)  # True - tracking is back on
