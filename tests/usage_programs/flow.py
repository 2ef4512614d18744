"""A tiny normalizing flow: TransformedDistribution with Affine/Compose/Exp/Sigmoid transforms."""
import torch
from torch.distributions import Normal, TransformedDistribution, Independent
from torch.distributions.transforms import AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform, TanhTransform

torch.manual_seed(4)
data = torch.rand(200) * 0.5 + 0.3
loc = torch.zeros(1, requires_grad=True)
log_scale = torch.zeros(1, requires_grad=True)
opt = torch.optim.Adam([loc, log_scale], lr=0.05)
for it in range(50):
    base = Normal(torch.zeros(1), torch.ones(1))
    flow = TransformedDistribution(base, [AffineTransform(loc, log_scale.exp()), SigmoidTransform()])
    nll = -flow.log_prob(data.unsqueeze(-1)).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if it % 10 == 0:
        print(f"it {it} nll {nll.item():.5f}")
print(flow)
print(flow.sample((4,)).squeeze(-1))
print(flow.rsample((2,)).shape, flow.batch_shape, flow.event_shape)
ct = ComposeTransform([AffineTransform(1.0, 2.0), ExpTransform()])
x = torch.tensor([-1.0, 0.0, 0.5])
y = ct(x)
print(y, bool((ct.inv(y) - x).abs().max() < 1e-6), ct.log_abs_det_jacobian(x, y))
print(ct.domain, ct.codomain, ct.bijective, ct.sign)
ln = TransformedDistribution(Normal(0.0, 1.0), [ExpTransform()])
print(ln.log_prob(torch.tensor([0.5, 1.0, 2.0])), ln.cdf(torch.tensor([0.5, 1.0, 2.0])))
t = TanhTransform(cache_size=1)
print(t(torch.tensor([0.3])), t.inv(torch.tensor([0.5])))
print(Independent(Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1))
