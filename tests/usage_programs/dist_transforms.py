"""Transforms and constraints users reach for: biject_to, StickBreaking, Softmax, Power, Cat/Stack, CorrCholesky, LKJ."""
import torch
import torch.distributions as D
from torch.distributions import constraints, transforms as T

torch.manual_seed(18)
for c in (constraints.positive, constraints.simplex, constraints.unit_interval, constraints.lower_cholesky,
          constraints.real_vector, constraints.interval(-1.0, 3.0), constraints.greater_than(2.0), constraints.corr_cholesky,
          constraints.positive_definite):
    try:
        t = D.biject_to(c)
    except NotImplementedError as e:
        print("NotImplementedError", e)
        t = D.transform_to(c)
    print(c, "->", t, t.domain, t.codomain)
sb = T.StickBreakingTransform()
u = torch.randn(3)
s = sb(u)
print(s, s.sum(), sb.inv(s), sb.log_abs_det_jacobian(u, s), sb.forward_shape((3,)), sb.inverse_shape((4,)))
print(T.SoftmaxTransform()(torch.tensor([1.0, 2.0, 3.0])), T.PowerTransform(2.0)(torch.tensor([3.0])))
cat = T.CatTransform([T.ExpTransform(), T.identity_transform], dim=0, lengths=[2, 2])
print(cat(torch.tensor([0.0, 1.0, 2.0, 3.0])))
st = T.StackTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], dim=0)
print(st(torch.tensor([[0.0, 1.0], [2.0, 3.0]])))
cc = T.CorrCholeskyTransform()
L = cc(torch.tensor([0.5, -0.3, 0.2]))
print(L, (L @ L.T).diagonal())
lkj = D.LKJCholesky(3, concentration=2.0)
print(lkj.sample().shape, lkj.log_prob(L))
w = D.Wishart(df=torch.tensor(4.0), covariance_matrix=torch.eye(2))
print(w.sample().shape, w.mean, w.log_prob(torch.eye(2) * 2))
print(T.ReshapeTransform((4,), (2, 2))(torch.arange(4.0)), T.SigmoidTransform().inv(torch.tensor([0.25])))
print(T.AbsTransform()(torch.tensor([-2.0])), T.CumulativeDistributionTransform(D.Normal(0.0, 1.0))(torch.tensor([0.0])))
ind = T.IndependentTransform(T.ExpTransform(), 1)
x = torch.randn(2, 3)
print(ind.log_abs_det_jacobian(x, ind(x)).shape, ind.domain.event_dim)
t = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(0.0, 2.0)])
print(t.inv, t.inv.inv is t, repr(T.ExpTransform().inv))
td = D.TransformedDistribution(D.Normal(torch.zeros(2), torch.ones(2)), [T.StickBreakingTransform()])
smp = td.sample()
print(smp.shape, td.log_prob(smp).shape, td.support, td.event_shape)
print(D.constraints.integer_interval(0, 3).check(torch.tensor([0, 4])), constraints.real.check(torch.tensor(float("nan"))))
print(D.Beta(2.0, 2.0).support, D.Categorical(torch.ones(3)).support, D.Binomial(5, 0.5).support)
