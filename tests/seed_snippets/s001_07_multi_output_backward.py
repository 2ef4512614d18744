# Seed 001_07e3a7e51895e890.txt - "Multi-Output Backward: Handling Vector Outputs"
import torch

x = torch.randn(3, requires_grad=True)
y = x ** 2  # Element-wise: y = [x₀², x₁², x₂²]

# This would error: y.backward()  ← can't backward through non-scalar
# Instead, need to specify a gradient tensor:
gradient = torch.tensor([1.0, 1.0, 1.0])
y.backward(gradient)

print(x.grad)  # [2*x₀, 2*x₁, 2*x₂]
