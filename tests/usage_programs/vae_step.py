"""A VAE training step: Normal/Independent posterior, kl_divergence to the prior, rsample."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, Independent, kl_divergence

torch.manual_seed(0)


class VAE(nn.Module):
    def __init__(self, d=8, z=2):
        super().__init__()
        self.enc = nn.Linear(d, 2 * z)
        self.dec = nn.Linear(z, d)

    def forward(self, x):
        mu, log_std = self.enc(x).chunk(2, dim=-1)
        q = Independent(Normal(mu, log_std.exp()), 1)
        p = Independent(Normal(torch.zeros_like(mu), torch.ones_like(mu)), 1)
        z = q.rsample()
        recon = self.dec(z)
        rec = F.mse_loss(recon, x, reduction="none").sum(-1)
        kl = kl_divergence(q, p)
        return (rec + kl).mean(), q, kl


model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(16, 8)
for step in range(5):
    loss, q, kl = model(x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f} kl {kl.mean().item():.5f}")
print(q)
print(q.batch_shape, q.event_shape, q.base_dist.batch_shape)
print(q.log_prob(torch.zeros(16, 2))[:3])
print(q.entropy()[:3])
print(q.mean.shape, q.variance[:2])
print(q.sample((3,)).shape)
