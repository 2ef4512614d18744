"""``ExponentialFamily``: distributions of the form ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``."""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd import grad as _autograd_grad
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions: the entropy comes from the log normalizer ``F`` by the
    Bregman divergence (Nielsen & Nock), with ``F``'s gradient from autograd."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        """The natural parameters ``theta``."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normalizer ``F(theta)``."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        """The expected carrier measure ``E[k(x)]``."""
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = _autograd_grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for p, g in zip(nparams, gradients):
            result -= (p * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
