"""A 1-D Gaussian mixture (MixtureSameFamily) fitted by gradient descent."""
import torch
from torch.distributions import MixtureSameFamily, Categorical, Normal

torch.manual_seed(2)
data = torch.cat([torch.randn(60) * 0.5 - 2, torch.randn(40) * 0.8 + 1.5])
logits = torch.zeros(2, requires_grad=True)
locs = torch.tensor([-1.0, 1.0], requires_grad=True)
log_scales = torch.zeros(2, requires_grad=True)
opt = torch.optim.Adam([logits, locs, log_scales], lr=0.1)
for it in range(40):
    gmm = MixtureSameFamily(Categorical(logits=logits), Normal(locs, log_scales.exp()))
    nll = -gmm.log_prob(data).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if it % 10 == 0:
        print(f"it {it} nll {nll.item():.5f}")
print(gmm)
print("weights", gmm.mixture_distribution.probs.detach())
print("locs", locs.detach(), "scales", log_scales.exp().detach())
print("mean", gmm.mean.item(), "var", gmm.variance.item())
print("cdf", gmm.cdf(torch.tensor([-2.0, 0.0, 1.5])).detach())
print(gmm.sample((5,)))
