# Seed 001_07e3a7e51895e890.txt - "Example: Multiple Inputs and Outputs"
import torch

class Multiply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        # Save both inputs for backward
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        # Retrieve saved tensors
        a, b = ctx.saved_tensors

        # Apply chain rule:
        # ∂(a*b)/∂a = b
        # ∂(a*b)/∂b = a
        grad_a = grad_output * b
        grad_b = grad_output * a

        # Return one gradient per input
        return grad_a, grad_b

multiply = Multiply.apply

x = torch.tensor(3.0, requires_grad=True)
y = torch.tensor(4.0, requires_grad=True)
z = multiply(x, y)  # z = 12
z.backward()

print(x.grad)  # tensor(4.) = y
print(y.grad)  # tensor(3.) = x
