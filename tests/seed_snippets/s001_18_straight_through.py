# Seed 001_07e3a7e51895e890.txt - "Example: Straight-Through Estimator"
import torch

class StraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        # Forward: round to nearest integer (non-differentiable!)
        return input.round()

    @staticmethod
    def backward(ctx, grad_output):
        # Backward: pretend the operation was identity
        # (pass gradient through unchanged)
        return grad_output

quantize = StraightThrough.apply

x = torch.tensor([1.2, 2.7, -0.3], requires_grad=True)
y = quantize(x)  # tensor([1., 3., -0.])
y.sum().backward()
print(x.grad)  # tensor([1., 1., 1.]) - gradient passed through!
