# Seed 004_87e34408a3249366.txt - "3.3. Memory and Speed"
#@title Python Code - Memory and Speed

# This script demonstrates PyTorch autograd memory control.
# We compare gradient tracking for speed and memory usage.
# Focus on torch.no_grad and detach for beginners.

# !pip install torch torchvision torchaudio.

# Import required standard libraries.
import time
import os
import random

# Import torch for tensor and autograd features.
import torch

# Set deterministic random seeds for reproducibility.
random.seed(0)
torch.manual_seed(0)

# Select device based on GPU availability.
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Print PyTorch version and selected device.
print("PyTorch version:", torch.__version__, "Device:", device)

# Define a helper to measure execution time.
def measure_time(fn, label):
    start = time.time()
    result = fn()
    end = time.time()
    elapsed = (end - start) * 1000.0
    print(label, "time_ms=", round(elapsed, 3))
    return result

# Create an input tensor with gradient tracking enabled.
input_size = 1024 * 16
x = torch.randn(input_size, device=device, requires_grad=True)

# Confirm tensor shape and gradient requirement.
assert x.shape[0] == input_size
assert x.requires_grad is True

# Define a simple computation with gradients enabled.
def forward_with_grad():
    y = x * 2.0 + 1.0
    z = torch.relu(y)
    loss = z.mean()
    loss.backward()
    return loss

# Define the same computation with gradients disabled.
def forward_no_grad():
    with torch.no_grad():
        y = x * 2.0 + 1.0
        z = torch.relu(y)
        loss = z.mean()
    return loss

# Run both functions once to warm up device.
_ = forward_with_grad()
_ = forward_no_grad()

# Zero gradients before timing to avoid accumulation.
if x.grad is not None:
    x.grad.zero_()

# Measure time for computation with gradients.
loss_grad = measure_time(forward_with_grad, "With_grad_forward_backward")

# Clear gradients again to free memory.
if x.grad is not None:
    x.grad.zero_()

# Measure time for computation without gradients.
loss_nograd = measure_time(forward_no_grad, "No_grad_forward_only")

# Show that no_grad result has no computation graph.
print("loss_grad_requires_grad:", loss_grad.requires_grad)
print("loss_nograd_requires_grad:", loss_nograd.requires_grad)

# Demonstrate detach to stop gradients from flowing.
intermediate = x * 3.0
intermediate_detached = intermediate.detach()

# Confirm detached tensor does not require gradients.
print("intermediate_requires_grad:", intermediate.requires_grad)
print("detached_requires_grad:", intermediate_detached.requires_grad)

# Use detached tensor in further computation without tracking.
with torch.no_grad():
    summary_value = intermediate_detached.abs().mean().item()

# Print final summary to show script completed.
print("Summary_value_from_detached_tensor:", round(summary_value, 4))
