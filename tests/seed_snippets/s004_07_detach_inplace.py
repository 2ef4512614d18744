# Seed 004_87e34408a3249366.txt - "3.2. Detach and Inplace Operations"
#@title Python Code - Detach and Inplace Operations

# This script demonstrates detach and inplace operations.
# It uses PyTorch autograd with simple tensor examples.
# Focus on safe gradient control and inplace behavior.

# Install PyTorch if not already available in the environment.
# !pip install torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cpu.

# Import torch for tensor and autograd operations.
import torch

# Set a deterministic seed for reproducible tensor values.
torch.manual_seed(0)

# Print the PyTorch version in one concise line.
print("PyTorch version:", torch.__version__)

# Create a tensor with gradients enabled for autograd.
x = torch.tensor([2.0, 3.0], requires_grad=True)

# Confirm the tensor shape is as expected.
assert x.shape == (2,), "Input tensor must have shape (2,)"

# Build a simple computation graph using x squared.
y = x ** 2

# Sum the outputs to obtain a scalar loss value.
loss = y.sum()

# Run backpropagation to compute gradients for x.
loss.backward()

# Print original gradients for x before any detach operations.
print("Gradients for x before detach:", x.grad)

# Stop tracking gradients by creating a detached view of x.
x_detached = x.detach()

# Verify detached tensor shares data but tracks no gradients.
print("Detached requires_grad flag:", x_detached.requires_grad)

# Perform an inplace operation safely on the detached tensor.
x_detached.add_(1.0)

# Show values of original and detached tensors after inplace update.
print("Original x after detached update:", x)
print("Detached tensor after inplace add_:", x_detached)

# Clear previous gradients on x before next backward pass.
x.grad.zero_()

# Recompute loss using original x to see gradient independence.
new_loss = (x ** 2).sum()

# Backpropagate again to update gradients based on original x.
new_loss.backward()

# Print gradients to confirm they ignore detached inplace changes.
print("Gradients for x after second backward:", x.grad)

# Demonstrate unsafe inplace attempt on tracked tensor inside try block.
try:
    # Create a new tensor that depends on x for demonstration.
    z = x * 2.0

    # Attempt an inplace operation that may confuse autograd.
    z.add_(1.0)

    # Print z to show the inplace modification result.
    print("Inplace on tracked tensor z succeeded:", z)
except RuntimeError as e:
    # Catch and report autograd error from unsafe inplace operation.
    print("RuntimeError from inplace on tracked tensor:")
    print(str(e).split("\n")[0])

# Final confirmation that original x data and gradients remain valid.
print("Final x values:", x)
