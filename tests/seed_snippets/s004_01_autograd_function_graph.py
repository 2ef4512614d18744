# Seed 004_87e34408a3249366.txt - "1.2. Autograd Function Graph"
#@title Python Code - Autograd Function Graph

# This script explains PyTorch autograd graphs.
# It shows how operations create function nodes.
# It keeps outputs small and beginner friendly.

# !pip install torch torchvision torchaudio.

# Import torch for tensor and autograd features.
import torch

# Print PyTorch version in one short line.
print("PyTorch version:", torch.__version__)

# Create a simple input tensor with gradients enabled.
x = torch.tensor([2.0, 3.0], requires_grad=True)

# Verify tensor shape to avoid unexpected issues.
assert x.shape == (2,), "Input tensor must have length two"

# Build a small computation that uses x twice.
y = x[0] ** 2 + 3 * x[1]

# Confirm output is a scalar suitable for backward.
assert y.dim() == 0, "Output y must be a scalar"

# Inspect requires_grad flag and value of y.
print("x requires_grad:", x.requires_grad)
print("y value:", y.item())

# Show which function created y in the graph.
print("y.grad_fn type:", type(y.grad_fn).__name__)

# Call backward to traverse the autograd function graph.
y.backward()

# Inspect gradients accumulated on the leaf tensor x.
print("Gradient dy/dx:", x.grad)

# Build another tensor from x without tracking gradients.
with torch.no_grad():
    z = x * 5.0 + 1.0

# Confirm z does not require gradients or graph links.
print("z requires_grad:", z.requires_grad)
print("z grad_fn is:", z.grad_fn)

# Create a detached view that breaks the function graph.
x_detached = x.detach()

# Show that detached tensor no longer tracks gradients.
print("Detached requires_grad:", x_detached.requires_grad)
