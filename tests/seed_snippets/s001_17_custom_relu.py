# Seed 001_07e3a7e51895e890.txt - "Example: Custom ReLU Implementation"
import torch

class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        # Save input for backward (we need to know which elements were positive)
        ctx.save_for_backward(input)

        # ReLU forward: max(0, x) for each element
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        # Retrieve saved input
        input, = ctx.saved_tensors

        # Create gradient tensor (start with a copy of upstream gradient)
        grad_input = grad_output.clone()

        # ReLU gradient: 1 if input > 0, else 0
        # (zero out gradients where input was negative)
        grad_input[input < 0] = 0

        return grad_input

# Usage: call via .apply()
my_relu = MyReLU.apply

x = torch.randn(5, requires_grad=True)
y = my_relu(x)
y.sum().backward()
print(x.grad)  # Non-zero only where x was positive
