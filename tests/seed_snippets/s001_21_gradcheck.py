# Seed 001_07e3a7e51895e890.txt - "Gradient Checking: Numerical Verification"
import torch

# setup: the document's MyFunction is a template with elided bodies; use the
# document's runnable custom function (MyReLU, from "Example: Custom ReLU Implementation")
class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input

MyFunction = MyReLU

from torch.autograd import gradcheck

def test_my_function():
    # Use double precision for numerical stability
    input = torch.randn(5, dtype=torch.double, requires_grad=True)

    # gradcheck compares your analytical gradient to numerical gradient
    test = gradcheck(MyFunction.apply, input, eps=1e-6, atol=1e-4)
    print(f"Gradient check passed: {test}")

test_my_function()
