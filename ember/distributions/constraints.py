"""Constraints: the regions where a distribution's parameters and samples are valid
(``torch.distributions.constraints``), with PyTorch's names, ``check``, ``is_discrete``, ``event_dim`` and reprs.

``check(value)`` returns a bool tensor of shape ``value.shape[:value.dim() - event_dim]``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ops import public as torch

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
    "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval", "is_dependent",
    "less_than", "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint", "multinomial", "nonnegative",
    "nonnegative_integer", "one_hot", "positive", "positive_semidefinite", "positive_definite", "positive_integer",
    "real", "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval",
]


class Constraint:
    """Abstract base class of constraints.

    Attributes:
        is_discrete: whether the constrained space is discrete (default False).
        event_dim: how many rightmost dimensions form one event (``check`` reduces over them).
    """

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A bool tensor of ``sample_shape + batch_shape``: whether each event of ``value`` satisfies this."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """Placeholder for a variable whose support depends on other variables (no coordinate-wise check).

    ``is_discrete``/``event_dim`` may be given when known statically; reading them otherwise raises
    NotImplementedError.
    """

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented) -> "_Dependent":
        """``constraints.dependent(is_discrete=True, event_dim=1)``: a copy with static attributes."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is a ``_Dependent`` (so it cannot be checked)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """``@constraints.dependent_property(is_discrete=..., event_dim=...)``: a property on an instance, a dependent
    constraint on the class (``Uniform.support`` vs ``Uniform(0, 1).support``)."""

    def __init__(self, fn: Callable[..., Any] | None = None, *, is_discrete=NotImplemented,
                 event_dim=NotImplemented) -> None:
        super().__init__(fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn: Callable[..., Any]) -> "_DependentProperty":  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


def _dim_range_check(dim: int, value) -> None:
    if not (-value.dim() <= dim < value.dim()):
        raise AssertionError(f"dim {dim} out of range for value with {value.dim()} dimensions")


def _base_check(base_constraint) -> None:
    if not isinstance(base_constraint, Constraint):
        raise AssertionError(f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")


class _IndependentConstraint(Constraint):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more rightmost dimensions read as one event: an
    event is valid when all its entries are."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        _base_check(base_constraint)
        if not isinstance(reinterpreted_batch_ndims, int):
            raise AssertionError(f"reinterpreted_batch_ndims must be an int, got "
                                 f"{type(reinterpreted_batch_ndims).__name__}")
        if reinterpreted_batch_ndims < 0:
            raise AssertionError(f"reinterpreted_batch_ndims must be >= 0, got {reinterpreted_batch_ndims}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.dim() < n:
            raise ValueError(f"Expected value.dim() >= {self.base_constraint.event_dim + n} but got {value.dim()}")
        return result.reshape(result.shape[:result.dim() - n] + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}({repr(self.base_constraint)}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of ``MixtureSameFamily``: adds back the component dimension before the component's check."""

    def __init__(self, base_constraint: Constraint) -> None:
        _base_check(base_constraint)
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value):
        """Whether ``value`` is a possible outcome of the mixture."""
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        keep = value.dim() - self.event_dim
        return result.reshape(result.shape[:keep] + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({repr(self.base_constraint)})"


class _Boolean(Constraint):
    """The two values ``{0, 1}``."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & value.sum(-1).eq(1)


def _bounds_repr(self, *names: str) -> str:
    return self.__class__.__name__[1:] + "(" + ", ".join(f"{n}={getattr(self, n)}" for n in names) + ")"


class _IntegerInterval(Constraint):
    """Integers in ``[lower_bound, upper_bound]``."""

    is_discrete = True

    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return _bounds_repr(self, "lower_bound", "upper_bound")


class _IntegerLessThan(Constraint):
    """Integers in ``(-inf, upper_bound]``."""

    is_discrete = True

    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return _bounds_repr(self, "upper_bound")


class _IntegerGreaterThan(Constraint):
    """Integers in ``[lower_bound, inf)``."""

    is_discrete = True

    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return _bounds_repr(self, "lower_bound")


class _Real(Constraint):
    """The extended real line ``[-inf, inf]`` (NaN is outside)."""

    def check(self, value):
        return value == value


class _GreaterThan(Constraint):
    """The half line ``(lower_bound, inf]``."""

    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self) -> str:
        return _bounds_repr(self, "lower_bound")


class _GreaterThanEq(Constraint):
    """The half line ``[lower_bound, inf)``."""

    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return _bounds_repr(self, "lower_bound")


class _LessThan(Constraint):
    """The half line ``[-inf, upper_bound)``."""

    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self) -> str:
        return _bounds_repr(self, "upper_bound")


class _Interval(Constraint):
    """The interval ``[lower_bound, upper_bound]``."""

    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return _bounds_repr(self, "lower_bound", "upper_bound")


class _HalfOpenInterval(Constraint):
    """The interval ``[lower_bound, upper_bound)``."""

    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return _bounds_repr(self, "lower_bound", "upper_bound")


class _Simplex(Constraint):
    """The unit simplex along the last dimension: ``x >= 0`` and ``x.sum(-1) == 1`` (to 1e-6)."""

    event_dim = 1

    def check(self, value):
        return torch.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer vectors with ``sum(-1) <= upper_bound`` (PyTorch's weaker check)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


def _is_lower_triangular(value):
    return (value.tril() == value).view(value.shape[:-2] + (-1,)).min(-1)[0]


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""

    event_dim = 2

    def check(self, value):
        return _is_lower_triangular(value)


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).min(-1)[0]
        return _is_lower_triangular(value) & positive_diagonal


class _CorrCholesky(Constraint):
    """Lower Cholesky factors whose rows have unit length (Cholesky factors of correlation matrices)."""

    event_dim = 2

    def check(self, value):
        tol = torch.finfo(value.dtype).eps * value.size(-1) * 10  # PyTorch's fudge factor 10
        row_norm = torch.linalg.norm(value.detach(), dim=-1)
        unit_row_norm = (row_norm - 1.0).abs().le(tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_row_norm


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value):
        return torch.full(size=value.shape[:-2], fill_value=(value.shape[-2] == value.shape[-1]),
                          dtype=torch.bool, device=value.device)


class _Symmetric(_Square):
    """Symmetric square matrices (to atol 1e-6)."""

    def check(self, value):
        square_check = super().check(value)
        if not square_check.all():
            return square_check
        return torch.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Positive-semidefinite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return torch.linalg.eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    """Positive-definite matrices."""

    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return torch.linalg.cholesky_ex(value).info.eq(0)


def _check_cseq(cseq) -> None:
    if not all(isinstance(c, Constraint) for c in cseq):
        raise AssertionError("All elements of cseq must be Constraint instances")


class _Cat(Constraint):
    """The constraints ``cseq`` applied to consecutive slices of lengths ``lengths`` along ``dim`` (as
    :func:`torch.cat` joins them)."""

    def __init__(self, cseq, dim: int = 0, lengths=None) -> None:
        _check_cseq(cseq)
        self.cseq = list(cseq)
        if lengths is None:
            lengths = [1] * len(self.cseq)
        self.lengths = list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        _dim_range_check(self.dim, value)
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start = start + length
        return torch.cat(checks, self.dim)


class _Stack(Constraint):
    """The constraints ``cseq`` applied to the slices along ``dim`` (as :func:`torch.stack` joins them)."""

    def __init__(self, cseq, dim: int = 0) -> None:
        _check_cseq(cseq)
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        _dim_range_check(self.dim, value)
        vs = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return torch.stack([constr.check(v) for v, constr in zip(vs, self.cseq)], self.dim)


# The public interface: instances for fixed regions, classes for parametrised ones (as PyTorch).
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
