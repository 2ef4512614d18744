# Seed 000_2a66a9701caa613b.txt - "The Function Class" (function_class.py)
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        # ctx is a context object for saving info for backward
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_output):
        # grad_output is dL/d(output)
        # We need to return dL/dx = dL/d(output) * d(output)/dx
        x, = ctx.saved_tensors
        return grad_output * 2 * x  # d(x^2)/dx = 2x

# Usage
x = torch.tensor([3.0], requires_grad=True)
y = Square.apply(x)  # y = 9
y.backward()
print(x.grad)  # tensor([6.]) = 2 * 3
