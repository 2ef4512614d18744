"""Argument types declared with the op (ember/ops/_schema.py): the generated checks raise PyTorch's TypeError,
keep the function's signature, and let through what the op's body accepts."""
import inspect

import numpy as np
import pytest

import ember
from ember.ops._schema import schema

torch = pytest.importorskip("torch")

# calls whose TypeError is PyTorch's message to the letter (arguments given as calls mostly give them:
# required ones by position, optional ones by keyword; ops PyTorch's parser reads get the exact position)
CALLS = {
    "sum(1)": lambda L, x, m: L.sum(1),
    "sum(x, 0, 'a')": lambda L, x, m: L.sum(x, 0, "a"),
    "sum(x, 0, keepdim='a')": lambda L, x, m: L.sum(x, 0, keepdim="a"),
    "x.sum(0, 'a')": lambda L, x, m: x.sum(0, "a"),
    "cumsum(x, 'a')": lambda L, x, m: L.cumsum(x, "a"),
    "x.cumsum('a')": lambda L, x, m: x.cumsum("a"),
    "cumsum(x, 0, dtype='a')": lambda L, x, m: L.cumsum(x, 0, dtype="a"),
    "x.cumsum_(True)": lambda L, x, m: x.cumsum_(True),
    "argmax(x, 0, keepdim='a')": lambda L, x, m: L.argmax(x, 0, keepdim="a"),
    "amax(x, keepdim=None)": lambda L, x, m: L.amax(x, keepdim=None),
    "nansum(x, dim='a')": lambda L, x, m: L.nansum(x, dim="a"),
    "logsumexp(x, 'a')": lambda L, x, m: L.logsumexp(x, "a"),
    "aminmax(x, dim='a')": lambda L, x, m: L.aminmax(x, dim="a"),
    "prod(x, 0, 'a')": lambda L, x, m: L.prod(x, 0, "a"),
    "cdist(m, 1)": lambda L, x, m: L.cdist(m, 1),
    "cummax(x, 1.5)": lambda L, x, m: L.cummax(x, 1.5),
    "flatten(x, start_dim=None)": lambda L, x, m: L.flatten(x, start_dim=None),
    "transpose(m, 0, 1.5)": lambda L, x, m: L.transpose(m, 0, 1.5),
    "m.transpose(0, 'a')": lambda L, x, m: m.transpose(0, "a"),
    "select(x, 0, 'a')": lambda L, x, m: L.select(x, 0, "a"),
    "chunk(x, 2.0)": lambda L, x, m: L.chunk(x, 2.0),
    "tril(m, diagonal='a')": lambda L, x, m: L.tril(m, diagonal="a"),
    "m.tril_(diagonal=None)": lambda L, x, m: m.tril_(diagonal=None),
    "diagonal(m, offset='a')": lambda L, x, m: L.diagonal(m, offset="a"),
    "x.view_as(1)": lambda L, x, m: x.view_as(1),
    "fliplr(1)": lambda L, x, m: L.fliplr(1),
    "tanh(None)": lambda L, x, m: L.tanh(None),
    "exp_(L.float32)": lambda L, x, m: L.exp_(L.float32),
    "atan2(x, 1)": lambda L, x, m: L.atan2(x, 1),
    "x.atan2(1)": lambda L, x, m: x.atan2(1),
    "heaviside(x, 1)": lambda L, x, m: L.heaviside(x, 1),
    "logit(x, eps='a')": lambda L, x, m: L.logit(x, eps="a"),
    "polygamma('a', x)": lambda L, x, m: L.polygamma("a", x),
    "isclose(x, x, equal_nan='a')": lambda L, x, m: L.isclose(x, x, equal_nan="a"),
    "addcmul(x, x, x, value='a')": lambda L, x, m: L.addcmul(x, x, x, value="a"),
    "equal(x, 1)": lambda L, x, m: L.equal(x, 1),
}


def _message(lib, call):
    with pytest.raises(TypeError) as info:
        call(lib, lib.ones(4), lib.ones(2, 3))
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_schema_errors_are_pytorchs(name):
    assert _message(ember, CALLS[name]) == _message(torch, CALLS[name])


def test_what_the_bodies_accept_still_passes():
    x, m = ember.ones(4), ember.ones(2, 3)
    assert ember.sum(x, np.int64(0)).item() == 4.0 and ember.amax(x, [0], True).shape == (1,)
    assert ember.narrow(x, 0, ember.tensor(1), 2).shape == (2,)     # a 0-d integer tensor is an int, as in PyTorch
    assert ember.prod(x).item() == 1.0 and ember.max(x).item() == 1.0       # sentinel defaults (_NO_DIM)
    assert ember.squeeze(m.unsqueeze(0)).shape == (2, 3)
    assert ember.logit(x * 0.5, np.float32(0.1)).shape == (4,)
    assert ember.addcmul(x, x, x, value=np.float32(2)).tolist() == [3.0] * 4
    assert ember.nan_to_num(x, True).shape == (4,)
    assert ember.std(m, False).item() == 0.0                    # std(x, False): the legacy positional unbiased
    assert ember.sum(x, axis=0).item() == 4.0 and x.sum(keepdims=True).shape == (1,)


def test_generated_wrappers_keep_the_function():
    @schema("f(Tensor input, int dim, Tensor? other, int[1]? dims, str mode, *, Scalar alpha, ScalarType? dtype)")
    def f(input, dim, other=None, dims=None, mode="x", *, alpha=1, dtype=None):
        """The docstring."""
        return dim

    assert inspect.signature(f) == inspect.signature(f.__wrapped__) and f.__doc__ == "The docstring."
    x = ember.ones(2)
    assert f(x, 1, None, [0], "y", alpha=2.5, dtype=ember.float64) == 1
    for args, kwargs, msg in [
        ((x, 1, 2), {}, "f(): argument 'other' must be Tensor, not int"),
        ((x, 1), {"dims": "a"}, "f(): argument 'dims' must be tuple of ints, not str"),
        ((x, 1), {"mode": 3}, "f(): argument 'mode' must be str, not int"),
        ((x, 1), {"alpha": "a"}, "f(): argument 'alpha' must be Number, not str"),
        ((x, 1), {"dtype": np.float64}, "f(): argument 'dtype' must be torch.dtype, not type"),
        ((x, True), {}, "f(): argument 'dim' (position 2) must be int, not bool"),
    ]:
        with pytest.raises(TypeError, match=f"^{msg.replace('(', '[(]').replace(')', '[)]')}$"):
            f(*args, **kwargs)
    with pytest.raises(TypeError, match=r"f\(\) missing 1 required positional argument: 'dim'"):
        f(x)      # Python's own binding error: the wrapper has the function's signature


def test_a_schema_that_does_not_match_its_function_is_refused_at_import():
    with pytest.raises(ValueError, match="are not"):
        schema("g(Tensor input, int dims)")(lambda input, dim: None)
    with pytest.raises(ValueError, match="keyword-only"):
        schema("g(Tensor input, int dim)")(lambda input, *, dim: None)
    with pytest.raises(ValueError, match="unknown type"):
        schema("g(Tensor input, long dim)")(lambda input, dim: None)
