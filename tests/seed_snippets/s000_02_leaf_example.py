# Seed 000_2a66a9701caa613b.txt - "Leaf Tensors vs Non-Leaf Tensors" (leaf_example.py)
import torch

x = torch.tensor([2.0], requires_grad=True)  # Leaf
y = x ** 2                                     # Non-leaf
z = y + 1                                      # Non-leaf

z.backward()

print(x.grad)  # tensor([4.]) - gradient stored here!
print(y.grad)  # None - non-leaf, not retained

# To retain non-leaf gradients:
x = torch.tensor([2.0], requires_grad=True)
y = x ** 2
y.retain_grad()  # Tell PyTorch to keep this gradient
z = y + 1
z.backward()
print(y.grad)  # tensor([1.]) - now it's stored!
