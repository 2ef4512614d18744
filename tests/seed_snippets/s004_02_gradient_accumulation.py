# Seed 004_87e34408a3249366.txt - "1.3. Gradient Accumulation Essentials"
#@title Python Code - Gradient Accumulation Essentials

# This script explains gradient accumulation basics.
# It uses tiny tensors for clear illustration.
# Run cells in order to follow comments.

# !pip install torch torchvision torchaudio.

# Import torch for tensor and autograd operations.
import torch

# Set a deterministic seed for reproducibility.
torch.manual_seed(0)

# Check and print the PyTorch version briefly.
print("PyTorch version:", torch.__version__)

# Create a simple parameter tensor with gradients.
param = torch.tensor([2.0], requires_grad=True)

# Show initial parameter and its gradient value.
print("Initial param:", param.item())
print("Initial grad:", param.grad)

# Define a helper function to compute a tiny loss.
def compute_loss(scale: float) -> torch.Tensor:
    # Compute a simple squared loss scaled externally.
    loss = (scale * param) ** 2
    return loss

# First forward pass with scale one for loss.
loss1 = compute_loss(scale=1.0)

# Backward computes gradient and stores in param.grad.
loss1.backward()

# Show gradient after first backward call.
print("Grad after first backward:", param.grad.item())

# Second forward pass with different loss scale.
loss2 = compute_loss(scale=0.5)

# Backward again accumulates into existing gradient.
loss2.backward()

# Show gradient after second backward accumulation.
print("Grad after second backward:", param.grad.item())

# Manually compute expected accumulated gradient value.
expected_grad = 2 * 1.0 ** 2 * param.detach() + 2 * (0.5 ** 2) * param.detach()

# Print expected gradient for comparison clarity.
print("Expected accumulated grad:", expected_grad.item())

# Always clear gradients before a fresh accumulation.
param.grad.zero_()

# Confirm gradient has been reset to zero now.
print("Grad after manual zero_():", param.grad.item())

# Final line prints a short completion confirmation.
print("Gradient accumulation demo finished.")
