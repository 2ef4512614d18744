# Seed 001_07e3a7e51895e890.txt - "Leaf Tensors vs Intermediate Tensors" (retaining gradients for intermediates)
import torch

# setup from the earlier snippet in the document
x = torch.tensor(1.0, requires_grad=True)  # Leaf tensor
y = torch.randn(3, requires_grad=True)     # Leaf tensor

z = x + y
z.retain_grad()  # Tell PyTorch to save z's gradient
loss = (z ** 2).sum()
loss.backward()
print(z.grad)  # Now this works!
