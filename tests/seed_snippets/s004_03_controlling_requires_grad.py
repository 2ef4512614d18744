# Seed 004_87e34408a3249366.txt - "2.1. Controlling requires_grad"
#@title Python Code - Controlling requires_grad

# This script explains controlling requires_grad clearly.
# It focuses on simple gradient tracking examples.
# Run cells stepwise and read printed explanations.

# torch is not installed by default in some environments.
# Uncomment the next line if torch import fails.
# !pip install torch torchvision torchaudio.

# Import torch for tensor and autograd operations.
import torch

# Print torch version to confirm environment details.
print("PyTorch version:", torch.__version__)

# Create input tensor without gradient tracking enabled.
x_data = torch.tensor([2.0, 3.0])

# Create parameter tensor with gradient tracking enabled.
w_param = torch.tensor([1.5, -0.5], requires_grad=True)

# Confirm which tensors currently require gradients.
print("x_data requires_grad:", x_data.requires_grad)
print("w_param requires_grad:", w_param.requires_grad)

# Compute simple linear combination using both tensors.
y_output = (x_data * w_param).sum()

# Call backward to compute gradients for w_param only.
y_output.backward()

# Inspect gradient stored on parameter tensor.
print("Gradient for w_param:", w_param.grad)

# Reset gradients to zero for a clean next example.
w_param.grad.zero_()

# Create a tensor with requires_grad set after creation.
scale = torch.tensor(10.0)

# Enable gradient tracking on scale using requires_grad_ method.
scale.requires_grad_()

# Confirm gradient tracking status for scale tensor.
print("scale requires_grad:", scale.requires_grad)

# Build new computation using both tracked tensors.
result = (scale * (x_data * w_param).sum())

# Compute gradients again with respect to both tensors.
result.backward()

# Show gradients for w_param and scale after backward.
print("New gradient w_param:", w_param.grad)
print("Gradient for scale:", scale.grad)

# Demonstrate turning off gradient tracking for efficiency.
with torch.no_grad():
    prediction = (x_data * w_param).sum()

# Confirm prediction has gradient tracking disabled.
print("prediction requires_grad:", prediction.requires_grad)

# Show that w_param still keeps its gradient tracking flag.
print("w_param still requires_grad:", w_param.requires_grad)
