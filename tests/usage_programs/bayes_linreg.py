"""Bayesian linear regression: MVN posterior, LowRank MVN, positive noise via transform_to."""
import torch
from torch.distributions import MultivariateNormal, LowRankMultivariateNormal, Normal, constraints, transform_to

torch.manual_seed(3)
X = torch.randn(30, 3, dtype=torch.float64)
w_true = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
y = X @ w_true + 0.3 * torch.randn(30, dtype=torch.float64)

t = transform_to(constraints.positive)
print(t, type(t).__name__)
raw_noise = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([raw_noise], lr=0.1)
for it in range(30):
    noise = t(raw_noise)
    prior_prec = torch.eye(3, dtype=torch.float64)
    post_prec = prior_prec + X.T @ X / noise**2
    post_cov = torch.linalg.inv(post_prec)
    post_mean = post_cov @ X.T @ y / noise**2
    pred = MultivariateNormal(X @ post_mean, covariance_matrix=X @ post_cov @ X.T + noise**2 * torch.eye(30, dtype=torch.float64))
    loss = -pred.log_prob(y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 10 == 0:
        print(f"it {it} -logml {loss.item():.6f} noise {noise.item():.6f}")
post = MultivariateNormal(post_mean.detach(), covariance_matrix=post_cov.detach())
print(post.mean, post.stddev)
print(post.scale_tril)
print(post.entropy().item())
lr = LowRankMultivariateNormal(torch.zeros(3, dtype=torch.float64), torch.ones(3, 1, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
print(lr, lr.covariance_matrix)
print(lr.log_prob(torch.tensor([0.5, -0.5, 1.0], dtype=torch.float64)).item())
print(torch.distributions.kl_divergence(post, MultivariateNormal(torch.zeros(3, dtype=torch.float64), torch.eye(3, dtype=torch.float64))).item())
print(t.inv(torch.tensor(2.0)), constraints.positive.check(torch.tensor([-1.0, 1.0])))
print(transform_to(constraints.interval(0.0, 2.0))(torch.tensor([0.0, 3.0])))
print(transform_to(constraints.simplex)(torch.tensor([0.0, 1.0, 2.0])))
try:
    Normal(torch.tensor(0.0), torch.tensor(-1.0))
except ValueError as e:
    print("ValueError:", e)
