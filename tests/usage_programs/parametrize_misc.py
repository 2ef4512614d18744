"""weight_norm/orthogonal parametrizations, spectral_norm, module printing, hooks, state_dict round trip."""
import torch
import torch.nn as nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import weight_norm, orthogonal, spectral_norm

torch.manual_seed(15)
lin = weight_norm(nn.Linear(4, 3))
print(lin)
print(sorted(lin.state_dict().keys()))
print(lin.parametrizations.weight.original0.shape, lin.parametrizations.weight.original1.shape)
x = torch.randn(2, 4)
print(lin(x))
orth = orthogonal(nn.Linear(3, 3))
w = orth.weight
print(torch.allclose(w @ w.T, torch.eye(3), atol=1e-5), parametrize.is_parametrized(orth, "weight"))


class Square(nn.Module):
    def forward(self, X):
        return X * X


m = nn.Linear(2, 2)
parametrize.register_parametrization(m, "bias", Square())
print(m.bias, m.parametrizations.bias.original)
with parametrize.cached():
    print(m.bias is m.bias)
parametrize.remove_parametrizations(m, "bias", leave_parametrized=True)
print(m, type(m.bias).__name__)
sn = spectral_norm(nn.Linear(5, 4))
sn(torch.randn(3, 5))
print(sorted(sn.state_dict().keys()))
seen = []
net = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.LayerNorm(4))
h = net[0].register_forward_hook(lambda mod, inp, out: seen.append(tuple(out.shape)))
net.register_full_backward_hook(lambda mod, gi, go: seen.append(("bwd", len(gi), len(go))))
net(torch.randn(3, 4, requires_grad=True)).sum().backward()
h.remove()
print(seen)
print(net, net[2].normalized_shape, sum(p.numel() for p in net.parameters()))
sd = net.state_dict()
net2 = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.LayerNorm(4))
print(net2.load_state_dict(sd), net2.load_state_dict({k: v for k, v in sd.items() if "2." not in k}, strict=False))
try:
    net2.load_state_dict({"0.weight": torch.zeros(3, 3)}, strict=False)
except RuntimeError as e:
    print("RuntimeError", e)
print(dict(net.named_modules()).keys(), net.get_submodule("2"))
print(nn.ModuleDict({"a": nn.ReLU()}), nn.ParameterList([nn.Parameter(torch.ones(2))]))
