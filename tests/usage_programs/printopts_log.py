"""set_printoptions effects on tensors printed in a training log."""
import torch

torch.manual_seed(10)
w = torch.randn(4, 5) * 1000
small = torch.randn(3) * 1e-5
big = torch.arange(2000.0).reshape(40, 50)
print(w)
torch.set_printoptions(precision=2)
print(w, small)
torch.set_printoptions(sci_mode=False)
print(small, w[0])
torch.set_printoptions(sci_mode=True)
print(w[0])
torch.set_printoptions(sci_mode=None, precision=4, threshold=10, edgeitems=2)
print(big)
print(torch.arange(20))
torch.set_printoptions(linewidth=40)
print(torch.randn(3, 8))
torch.set_printoptions(profile="short")
print(torch.randn(5, 5), big)
torch.set_printoptions(profile="full")
print(torch.arange(30.0).reshape(3, 10))
torch.set_printoptions(profile="default")
print(torch.randn(2, 3, requires_grad=True) * 2, torch.tensor([1e10, 1.0, 1e-10]), torch.tensor([1.5, float("inf"), float("nan")]))
print(torch.tensor([123456789.0, 1.0]), torch.tensor([0.1, 100.0]).double(), torch.tensor([1, -2], dtype=torch.int8))
print(torch.get_printoptions() if hasattr(torch, "get_printoptions") else None)
for epoch in range(2):
    print(f"epoch {epoch}: grad norm {torch.randn(3).norm():.4f} weights {torch.randn(2)}")
