# Seed 004_87e34408a3249366.txt - "2.2. Understanding backward and grad"
#@title Python Code - Understanding backward and grad

# This script explains backward and grad basics.
# It uses tiny tensors for clear gradients.
# Run cells in order to follow explanations.

# Install PyTorch if not already available.
# !pip install torch torchvision torchaudio.

# Import torch for tensor and autograd features.
import torch

# Print PyTorch version for reproducibility.
print("PyTorch version:", torch.__version__)

# Create a simple tensor marked for gradient tracking.
x = torch.tensor([2.0], requires_grad=True)

# Confirm that x is a leaf tensor with grad tracking.
print("x:", x, "requires_grad:", x.requires_grad)

# Build a tiny computation that depends on x.
y = x ** 2 + 3 * x

# Show the computed output value before backward.
print("y before backward:", y)

# Check that y is not a leaf and has grad_fn.
print("Is y leaf?", y.is_leaf, "grad_fn:", y.grad_fn)

# Ensure x.grad is empty before calling backward.
print("x.grad before backward:", x.grad)

# Call backward on scalar y to compute dy/dx.
y.backward()

# After backward, x.grad holds the derivative.
print("x.grad after backward:", x.grad)

# Manually compute derivative for comparison.
manual_grad = 2 * x.detach() + 3

# Show that autograd matches manual derivative.
print("Manual gradient:", manual_grad)

# Reset gradients to zero before another backward.
x.grad.zero_()

# Build a new output using mean over multiple elements.
values = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# Confirm shape so backward behavior is predictable.
print("values shape:", values.shape)

# Compute mean to get a scalar output.
mean_output = values.mean()

# Call backward to get gradient of mean w.r.t values.
mean_output.backward()

# Inspect gradients stored in values.grad attribute.
print("values.grad after backward:", values.grad)

# Show that gradients match derivative of mean function.
print("Expected grad for mean is 1/3 each.")
