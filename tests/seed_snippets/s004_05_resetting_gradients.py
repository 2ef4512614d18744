# Seed 004_87e34408a3249366.txt - "2.3. Resetting Gradients Safely"
#@title Python Code - Resetting Gradients Safely

# This script demonstrates resetting gradients safely.
# It uses PyTorch tensors with simple scalar operations.
# Focus on requires_grad backward and grad attributes.

# Install PyTorch if not already available in the environment.
# !pip install torch torchvision torchaudio --quiet.

# Import torch for tensor and autograd operations.
import torch

# Print the PyTorch version for quick verification.
print("PyTorch version:", torch.__version__)

# Create a scalar parameter with gradient tracking enabled.
weight = torch.tensor(2.0, requires_grad=True)

# Confirm that the tensor is a scalar parameter.
assert weight.shape == torch.Size([])

# Define a simple target value for our tiny example.
target = torch.tensor(10.0, requires_grad=False)

# Confirm that target has the same shape as predictions.
assert target.shape == torch.Size([])

# Compute a simple prediction using the parameter.
prediction = weight * 3.0

# Compute a squared error loss for this prediction.
loss = (prediction - target) ** 2

# Run backpropagation to compute gradient for weight.
loss.backward()

# Print the first gradient value for weight.
print("Gradient after first backward:", weight.grad.item())

# Store the first gradient for comparison later.
first_grad = weight.grad.item()

# Compute a new prediction without resetting gradients.
prediction2 = weight * 3.0

# Compute a new loss using the same formula.
loss2 = (prediction2 - target) ** 2

# Call backward again to accumulate gradients.
loss2.backward()

# Print the accumulated gradient value for weight.
print("Gradient after second backward:", weight.grad.item())

# Show that gradient is roughly double the first value.
print("Accumulated equals first times two:", weight.grad.item() >= first_grad * 1.9)

# Safely reset gradients to zero before next step.
weight.grad.zero_()

# Confirm that gradients were cleared successfully.
print("Gradient after zero_ call:", weight.grad.item())

# Compute a fresh prediction after clearing gradients.
prediction3 = weight * 3.0

# Compute a fresh loss for the cleared state.
loss3 = (prediction3 - target) ** 2

# Backpropagate again to get a clean gradient.
loss3.backward()

# Print the new gradient which matches a single step.
print("Gradient after reset and backward:", weight.grad.item())

# Verify that the new gradient matches the original one.
print("Reset kept gradient consistent:", abs(weight.grad.item() - first_grad) < 1e-6)
