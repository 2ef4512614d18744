# Seed 001_07e3a7e51895e890.txt - "Problem 3: No Gradient (Tensor Has None Gradient)"
import torch

# Cause 1: Parameter not in computation graph
x = torch.randn(10, requires_grad=True)
y = torch.randn(10, requires_grad=False)  # No gradients!
loss = (x + y).sum()
loss.backward()
# x.grad exists, but y.grad is None (expected - requires_grad=False)

# Cause 2: Detached from graph
x = torch.randn(10, requires_grad=True)
y = x.detach()  # Breaks gradient flow
loss = y.sum()
try:
    loss.backward()  # (raises: nothing in the graph requires grad)
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
# x.grad will be None (gradient flow was cut by detach)

# Cause 3: Inside no_grad() context
x = torch.randn(10, requires_grad=True)
with torch.no_grad():
    loss = (x ** 2).sum()
try:
    loss.backward()  # Error or x.grad will be None
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
