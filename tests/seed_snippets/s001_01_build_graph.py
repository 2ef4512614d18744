# Seed 001_07e3a7e51895e890.txt - "Example: Building a Computation Graph"
import torch

x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)

# Forward pass builds the graph operation by operation
z = x * y       # z depends on x and y through multiplication
w = z + x**2    # w depends on z (and transitively on x, y) and on x squared

print(z.grad_fn)  # <MulBackward0> - remembers multiplication created z
print(w.grad_fn)  # <AddBackward0> - remembers addition created w
