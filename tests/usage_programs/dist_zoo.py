"""A tour of distributions as tutorials use them: reprs, sampling with a seed, rsample gradients, KL pairs, errors."""
import torch
import torch.distributions as D

torch.manual_seed(12)
conc = torch.tensor([2.0, 3.0], requires_grad=True)
rate = torch.tensor([1.0, 0.5], requires_grad=True)
g = D.Gamma(conc, rate)
s = g.rsample((3,))
s.sum().backward()
print(g, s, conc.grad, rate.grad)
b = D.Beta(torch.tensor([0.5, 2.0]), torch.tensor([0.5, 3.0]))
print(b, b.sample((2,)), b.mean, b.variance, b.entropy())
dr = D.Dirichlet(torch.tensor([1.0, 2.0, 3.0]))
print(dr.sample(), dr.log_prob(torch.tensor([0.2, 0.3, 0.5])), dr.mean)
print(D.Poisson(torch.tensor([1.0, 4.0])).sample((3,)), D.Binomial(10, torch.tensor([0.2, 0.7])).sample((2,)))
oh = D.OneHotCategorical(logits=torch.tensor([0.1, 0.5, -0.2]))
print(oh, oh.sample((2,)), oh.enumerate_support(), oh.enumerate_support(expand=False).shape)
rc = D.RelaxedOneHotCategorical(torch.tensor(0.5), logits=torch.tensor([0.1, 0.5, -0.2]))
print(rc.rsample((2,)))
bern = D.Bernoulli(logits=torch.tensor([-1.0, 0.0, 2.0]))
print(bern, bern.sample(), bern.probs, bern.entropy(), bern.enumerate_support().shape)
n = D.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
print(n.cdf(torch.tensor([0.5, 0.5])), n.icdf(torch.tensor([0.1, 0.9])), n.support, n.arg_constraints)
print(n.expand((3, 2)), n.expand((3, 2)).sample().shape)
for p, q in [(D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)), (D.Bernoulli(0.3), D.Bernoulli(0.6)), (D.Beta(2.0, 3.0), D.Beta(1.0, 1.0)),
             (D.Gamma(2.0, 1.0), D.Gamma(3.0, 2.0)), (D.Exponential(1.0), D.Gamma(1.0, 2.0)), (D.Uniform(0.0, 1.0), D.Normal(0.0, 1.0)),
             (D.Categorical(torch.tensor([0.2, 0.8])), D.Categorical(torch.tensor([0.5, 0.5]))), (D.Laplace(0.0, 1.0), D.Laplace(1.0, 2.0)),
             (D.Poisson(2.0), D.Poisson(3.0)), (D.Dirichlet(torch.ones(3)), D.Dirichlet(torch.tensor([1.0, 2.0, 3.0])))]:
    print(type(p).__name__, type(q).__name__, D.kl_divergence(p, q))
try:
    D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(1.0))
except NotImplementedError as e:
    print("NotImplementedError", e)
for bad in (lambda: D.Bernoulli(probs=torch.tensor(1.5)), lambda: D.Normal(0.0, 1.0).log_prob(torch.tensor("x") if False else [1.0]),
            lambda: D.Categorical(torch.tensor([0.5, 0.5])).log_prob(torch.tensor(2)), lambda: D.Beta(torch.tensor(-1.0), torch.tensor(1.0)),
            lambda: D.Normal(0.0, 1.0).sample(3), lambda: D.Gamma(1.0, 1.0).log_prob(torch.tensor(-1.0))):
    try:
        bad()
        print("no error")
    except Exception as e:
        print(type(e).__name__, str(e).replace("\n", " | ")[:300])
D.Distribution.set_default_validate_args(False)
print(D.Normal(0.0, -1.0).scale)
D.Distribution.set_default_validate_args(True)
st = D.StudentT(3.0, 0.0, 1.0)
print(st.sample((3,)), st.log_prob(torch.tensor(0.5)), st.variance)
lnorm = D.LogNormal(0.0, 0.5)
print(lnorm.mean, lnorm.sample((3,)), lnorm.log_prob(torch.tensor(1.2)))
mvn = D.MultivariateNormal(torch.zeros(2), scale_tril=torch.tensor([[1.0, 0.0], [0.5, 1.0]]))
print(mvn.rsample((2,)), mvn.covariance_matrix, mvn.precision_matrix)
