"""ember.distributions: PyTorch's probability distributions (``torch.distributions``).

Every name loads its module on first use (``ember.distributions.Normal`` imports ``normal.py``), so
``import ember`` stays fast. A module not built yet makes its names missing attributes (AttributeError).
"""
from __future__ import annotations

import importlib
import os

# public name -> the module of this package that defines it (PyTorch's file names)
_WHERE: dict[str, str] = {
    "Bernoulli": "bernoulli", "Beta": "beta", "Binomial": "binomial", "Categorical": "categorical", "Cauchy":
    "cauchy", "Chi2": "chi2", "ContinuousBernoulli": "continuous_bernoulli", "Dirichlet": "dirichlet",
    "Distribution": "distribution", "Exponential": "exponential", "ExponentialFamily": "exp_family",
    "FisherSnedecor": "fishersnedecor", "Gamma": "gamma", "GeneralizedPareto": "generalized_pareto", "Geometric":
    "geometric", "Gumbel": "gumbel", "HalfCauchy": "half_cauchy", "HalfNormal": "half_normal", "Independent":
    "independent", "InverseGamma": "inverse_gamma", "Kumaraswamy": "kumaraswamy", "LKJCholesky": "lkj_cholesky",
    "Laplace": "laplace", "LogNormal": "log_normal", "LogisticNormal": "logistic_normal",
    "LowRankMultivariateNormal": "lowrank_multivariate_normal", "MixtureSameFamily": "mixture_same_family",
    "Multinomial": "multinomial", "MultivariateNormal": "multivariate_normal", "NegativeBinomial":
    "negative_binomial", "Normal": "normal", "OneHotCategorical": "one_hot_categorical",
    "OneHotCategoricalStraightThrough": "one_hot_categorical", "Pareto": "pareto", "RelaxedBernoulli":
    "relaxed_bernoulli", "RelaxedOneHotCategorical": "relaxed_categorical", "StudentT": "studentT", "Poisson":
    "poisson", "Uniform": "uniform", "VonMises": "von_mises", "Weibull": "weibull", "Wishart": "wishart",
    "TransformedDistribution": "transformed_distribution", "biject_to": "constraint_registry", "kl_divergence":
    "kl", "register_kl": "kl", "transform_to": "constraint_registry", "AbsTransform": "transforms",
    "AffineTransform": "transforms", "CatTransform": "transforms", "ComposeTransform": "transforms",
    "CorrCholeskyTransform": "transforms", "CumulativeDistributionTransform": "transforms", "ExpTransform":
    "transforms", "IndependentTransform": "transforms", "LowerCholeskyTransform": "transforms",
    "PositiveDefiniteTransform": "transforms", "PowerTransform": "transforms", "ReshapeTransform": "transforms",
    "SigmoidTransform": "transforms", "SoftplusTransform": "transforms", "TanhTransform": "transforms",
    "SoftmaxTransform": "transforms", "StackTransform": "transforms", "StickBreakingTransform": "transforms",
    "Transform": "transforms", "identity_transform": "transforms",
}
_SUBMODULES = ("bernoulli", "beta", "binomial", "categorical", "cauchy", "chi2", "constraint_registry",
               "constraints", "continuous_bernoulli", "dirichlet", "distribution", "exp_family", "exponential",
               "fishersnedecor", "gamma", "generalized_pareto", "geometric", "gumbel", "half_cauchy", "half_normal",
               "independent", "inverse_gamma", "kl", "kumaraswamy", "laplace", "lkj_cholesky", "log_normal",
               "logistic_normal", "lowrank_multivariate_normal", "mixture_same_family", "multinomial",
               "multivariate_normal", "negative_binomial", "normal", "one_hot_categorical", "pareto", "poisson",
               "relaxed_bernoulli", "relaxed_categorical", "studentT", "transformed_distribution", "transforms",
               "uniform", "utils", "von_mises", "weibull", "wishart")
_HERE = os.path.dirname(__file__)


def _built(module: str) -> bool:
    return os.path.exists(os.path.join(_HERE, module + ".py"))


# PyTorch's __all__, less the names whose module is not built yet (so ``import *`` works meanwhile)
__all__ = [name for name, module in _WHERE.items() if _built(module)]


def __getattr__(name: str):
    module = _WHERE.get(name) or (name if name in _SUBMODULES else None)
    if module is not None and _built(module):
        mod = importlib.import_module("." + module, __name__)
        return mod if module == name and name in _SUBMODULES else getattr(mod, name)
    raise AttributeError(f"module 'ember.distributions' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(__all__) | {m for m in _SUBMODULES if _built(m)})
