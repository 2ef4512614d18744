# Seed 004_87e34408a3249366.txt - "3.1. No Grad Context"
#@title Python Code - No Grad Context

# This script shows torch no grad context.
# We compare gradients with and without context.
# Focus on simple tensors not full models.

# Uncomment if torch is not already installed.
# !pip install torch torchvision torchaudio.

# Import torch for tensor and autograd operations.
import torch

# Set a manual seed for deterministic behavior.
torch.manual_seed(0)

# Create a tensor with gradient tracking enabled.
x = torch.tensor(2.0, requires_grad=True)

# Confirm that requires_grad is correctly set.
print("x requires_grad:", x.requires_grad)

# Build a simple computation that will track gradients.
y = x ** 3 + 2 * x

# Call backward to compute gradient dy/dx at x.
y.backward()

# Print the gradient computed for x in this graph.
print("Gradient of y with grad tracking:", x.grad.item())

# Reset gradient on x to avoid accumulation issues.
x.grad.zero_()

# Use a no grad context to disable tracking temporarily.
with torch.no_grad():
    y_no_grad = x ** 3 + 2 * x

# Show that result is still a normal tensor value.
print("Value inside no_grad context:", y_no_grad.item())

# Check that the new tensor does not require gradients.
print("y_no_grad requires_grad:", y_no_grad.requires_grad)

# Try calling backward on a tensor from no_grad context.
try:
    y_no_grad.backward()
except RuntimeError as e:
    print("Backward failed inside no_grad:", type(e).__name__)

# Show that x gradient was not changed by no_grad block.
print("Gradient of x after no_grad block:", x.grad.item())
