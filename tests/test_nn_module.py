"""nn.Module against PyTorch: attribute routing and its errors, iteration, state dicts, hooks (forward and full
backward), conversions, reprs, copying, containers, nn.utils and func.functional_call."""
import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
from parity import raises_same, same

torch = pytest.importorskip("torch")


def net(lib):
    """A small model with nesting, a buffer, a shared module and a non-persistent buffer."""
    nn = lib.nn
    lib.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("cache", lib.ones(2), persistent=False)
            self.scale = nn.Parameter(lib.tensor(2.0))

        def forward(self, x):
            return self.fc(x) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Block()
            self.seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.1))
            self.shared = self.a          # the same module twice
            self.head = nn.Linear(4, 2, bias=False)
            self.none_mod = None

        def forward(self, x):
            return self.head(self.seq(self.a(x)))

    return Net()


def _names(it):
    return [n for n, _ in it]


# ----- routing ---------------------------------------------------------------------------------

def test_iteration_matches_torch():
    same(lambda lib: (_names(net(lib).named_parameters()),
                      _names(net(lib).named_parameters(prefix="m", remove_duplicate=False)),
                      _names(net(lib).named_parameters(recurse=False)),
                      _names(net(lib).named_buffers()),
                      _names(net(lib).named_buffers(remove_duplicate=False)),
                      _names(net(lib).named_children()),
                      _names(net(lib).named_modules()),
                      _names(net(lib).named_modules(remove_duplicate=False, prefix="root")),
                      len(list(net(lib).modules())), len(list(net(lib).parameters())),
                      len(list(net(lib).buffers())), len(list(net(lib).children()))))


def test_parameters_are_the_same_objects():
    m = net(ember)
    assert m.a.fc.weight is dict(m.named_parameters())["a.fc.weight"]
    assert m.get_parameter("seq.0.bias") is m.seq[0].bias
    assert m.get_buffer("a.steps") is m.a.steps
    assert m.get_submodule("seq.1") is m.seq[1]
    assert m.get_submodule("") is m


ROUTING_ERRORS = [
    ("param_tensor", lambda lib: setattr(lib.nn.Linear(2, 2), "weight", lib.ones(2, 2)), TypeError),
    ("param_int", lambda lib: setattr(lib.nn.Linear(2, 2), "bias", 3), TypeError),
    ("child_int", lambda lib: setattr(net(lib), "head", 3), TypeError),
    ("buffer_str", lambda lib: setattr(net(lib).a, "steps", "x"), TypeError),
    ("buffer_name_dot", lambda lib: lib.nn.Module().register_buffer("a.b", None), KeyError),
    ("buffer_name_empty", lambda lib: lib.nn.Module().register_buffer("", None), KeyError),
    ("buffer_name_int", lambda lib: lib.nn.Module().register_buffer(1, None), TypeError),
    ("buffer_exists", lambda lib: lib.nn.Linear(2, 2).register_buffer("weight", None), KeyError),
    ("buffer_not_tensor", lambda lib: lib.nn.Module().register_buffer("b", 3), TypeError),
    ("param_name_dot", lambda lib: lib.nn.Module().register_parameter("a.b", None), KeyError),
    ("param_not_param", lambda lib: lib.nn.Module().register_parameter("p", lib.ones(2)), TypeError),
    ("param_non_leaf", lambda lib: lib.nn.Module().register_parameter("p", _non_leaf_param(lib)), ValueError),
    ("param_exists", lambda lib: _with_attr(lib).register_parameter("x", None), KeyError),
    ("module_not_module", lambda lib: lib.nn.Module().add_module("m", 3), TypeError),
    ("module_name_dot", lambda lib: lib.nn.Module().add_module("a.b", lib.nn.ReLU()), KeyError),
    ("module_name_empty", lambda lib: lib.nn.Module().add_module("", lib.nn.ReLU()), KeyError),
    ("getattr_missing", lambda lib: lib.nn.Linear(2, 2).foo, AttributeError),
    ("get_submodule_missing", lambda lib: net(lib).get_submodule("seq.7"), AttributeError),
    ("get_submodule_not_module", lambda lib: net(lib).get_submodule("a.fc.weight"), AttributeError),
    ("get_parameter_buffer", lambda lib: net(lib).get_parameter("a.steps"), AttributeError),
    ("get_parameter_missing", lambda lib: net(lib).get_parameter("a.nope"), AttributeError),
    ("get_buffer_param", lambda lib: net(lib).get_buffer("a.scale"), AttributeError),
    ("before_init", lambda lib: _before_init(lib), AttributeError),
    ("train_not_bool", lambda lib: lib.nn.Linear(2, 2).train(1), ValueError),
    ("to_int_dtype", lambda lib: lib.nn.Linear(2, 2).to(lib.int64), TypeError),
    ("init_kwargs", lambda lib: lib.nn.Module(foo=1), TypeError),
    ("init_args", lambda lib: lib.nn.Module(1), TypeError),
    ("no_forward", lambda lib: lib.nn.Module()(1), NotImplementedError),
]


def _non_leaf_param(lib):
    p = lib.nn.Parameter(lib.ones(2))
    q = p * 2
    q.__class__ = type(p)   # a Parameter that is not a leaf
    return q


def _with_attr(lib):
    m = lib.nn.Module()
    m.x = 3
    return m


def _before_init(lib):
    class Bad(lib.nn.Module):
        def __init__(self):
            self.w = lib.nn.Parameter(lib.ones(1))
    Bad()


@pytest.mark.parametrize("name,fn,exc", ROUTING_ERRORS, ids=[r[0] for r in ROUTING_ERRORS])
def test_routing_errors(name, fn, exc):
    raises_same(fn, exact_msg=True)
    with pytest.raises(exc):
        fn(ember)


def test_routing_moves_between_kinds():
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 2)
        m.weight = None                     # a parameter slot set to None stays a parameter
        assert "weight" in m._parameters and m.weight is None
        m.extra = lib.nn.Parameter(lib.ones(1))
        m.__dict__["plain"] = 1
        m.plain = lib.nn.ReLU()              # a module replaces a plain attribute
        assert "plain" not in m.__dict__ and "plain" in m._modules
        del m.extra
        m.extra = lib.nn.ReLU()
        assert "extra" not in m._parameters and "extra" in m._modules
        m.register_buffer("buf", lib.zeros(2))
        m.buf = lib.ones(2)                  # a plain tensor on a buffer name stays a buffer
        assert "buf" in m._buffers and float(m.buf.sum()) == 2
        m.buf2 = lib.nn.Buffer(lib.ones(3), persistent=False)
        assert "buf2" in m._buffers and "buf2" not in m.state_dict()
        del m.buf, m.extra, m.bias
        assert "buf" not in m._buffers and "extra" not in m._modules and "bias" not in m._parameters
        assert isinstance(lib.nn.Buffer(lib.ones(1)), lib.nn.Buffer)
        assert not isinstance(lib.ones(1), lib.nn.Buffer)
        assert "weight" in dir(lib.nn.Linear(2, 2))


# ----- state dicts ------------------------------------------------------------------------------

def _sd(lib):
    m = net(lib)
    sd = m.state_dict()
    return (type(sd).__name__, list(sd), [tuple(v.shape) for v in sd.values()], [v.requires_grad for v in sd.values()],
            dict(sd._metadata), list(m.state_dict(keep_vars=True, prefix="p.")),
            [v.requires_grad for v in m.state_dict(keep_vars=True).values()])


def test_state_dict_like_torch():
    same(_sd)


def test_state_dict_shares_memory_and_roundtrips_through_torch():
    m = net(ember)
    sd = m.state_dict()
    sd["head.weight"].fill_(0.5)
    assert float(m.head.weight.sum()) == 0.5 * 8
    # torch weights -> ember model: same outputs
    tm = net(torch)
    m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    tm.eval(), m.eval()
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def _load(lib, mutate, strict=True, assign=False):
    m = net(lib)
    sd = OrderedDict(net(lib).state_dict())
    mutate(lib, sd)
    r = m.load_state_dict(sd, strict=strict, assign=assign)
    return repr(r), list(r.missing_keys), list(r.unexpected_keys)


LOADS = [
    ("ok", lambda lib, sd: None),
    ("missing", lambda lib, sd: (sd.pop("a.fc.bias"), sd.pop("head.weight"))),
    ("unexpected", lambda lib, sd: sd.update({"a.extra": lib.ones(1), "zzz.w": lib.ones(1), "seq.9.w": lib.ones(1)})),
    ("both", lambda lib, sd: (sd.pop("seq.0.weight"), sd.update({"b": lib.ones(1)}))),
    ("shape", lambda lib, sd: sd.update({"a.fc.weight": lib.ones(2, 3), "head.weight": lib.ones(2)})),
    ("not_tensor", lambda lib, sd: sd.update({"a.steps": 3})),
    ("scalar_from_1elem", lambda lib, sd: sd.update({"a.scale": lib.ones(1)})),
]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("name,mutate", LOADS, ids=[n for n, _ in LOADS])
def test_load_state_dict_like_torch(name, mutate, strict):
    same(lambda lib: _load(lib, mutate, strict), exact_msg=True)


def test_load_state_dict_copies_or_assigns():
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 2)
        w = lib.full((2, 2), 3.0)
        m.load_state_dict({"weight": w, "bias": lib.zeros(2)})
        assert m.weight is not w and float(m.weight.sum()) == 12 and m.weight.requires_grad
        m.load_state_dict({"weight": w, "bias": lib.zeros(2)}, assign=True)
        assert isinstance(m.weight, lib.nn.Parameter) and m.weight.requires_grad
        w.fill_(1.0)
        assert float(m.weight.sum()) == 4   # assign shares the given tensor's memory
    raises_same(lambda lib: lib.nn.Linear(2, 2).load_state_dict([1]), exact_msg=True)


def test_state_dict_hooks():
    log = []
    m = ember.nn.Sequential(ember.nn.Linear(2, 2))
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix, keep_vars)))
    m[0].register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append(("post", prefix, sorted(sd))))
    m[0].register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: log.append(("lpre", prefix)))
    def post(mod, keys):
        keys.missing_keys.clear()
        log.append("lpost")

    m.register_load_state_dict_post_hook(post)
    sd = m.state_dict()
    del sd["0.bias"]
    assert repr(m.load_state_dict(sd)) == "<All keys matched successfully>"   # the post hook cleared it
    assert log == [("pre", "", False), ("post", "0.", ["0.bias", "0.weight"]), ("lpre", "0."), "lpost"]


def test_batchnorm_old_checkpoint_without_num_batches_tracked():
    for lib in (torch, ember):
        bn = lib.nn.BatchNorm1d(2)
        sd = bn.state_dict()
        del sd["num_batches_tracked"]
        sd._metadata[""]["version"] = 1
        assert repr(bn.load_state_dict(sd)) == "<All keys matched successfully>"


# ----- hooks ------------------------------------------------------------------------------------

def _forward_hooks(lib):
    log = []
    lib.manual_seed(0)
    m = lib.nn.Linear(2, 2)
    h1 = m.register_forward_pre_hook(lambda mod, args: log.append(("pre1", len(args))))
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m.register_forward_pre_hook(lambda mod, args, kw: log.append(("pre0", sorted(kw))), prepend=True,
                                with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: out + 1)
    m.register_forward_hook(lambda mod, args, kw, out: log.append(("post_kw", tuple(out.shape))), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append("first"), prepend=True)
    x = lib.ones(3, 2)
    y1 = m(x)
    h1.remove()
    y2 = m(x)
    with lib.no_grad():
        ref = lib.nn.functional.linear(x * 2, m.weight, m.bias) + 1
    return log, y1.detach(), y2.detach(), ref


def test_forward_hooks_order_and_results():
    same(_forward_hooks)


def _always_call(lib):
    log = []

    class Boom(lib.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: log.append("never"))
    try:
        m(1)
    except ValueError:
        pass
    return log


def test_always_call_hooks_run_when_forward_raises():
    same(_always_call)


def test_pre_hook_bad_return():
    def fn(lib):
        m = lib.nn.ReLU()
        m.register_forward_pre_hook(lambda mod, a, k: 3, with_kwargs=True)
        m(lib.ones(1))
    raises_same(fn, exact_msg=True)


def _backward_hooks(lib, pre_scale):
    log = []
    lib.manual_seed(0)

    class Two(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 2)

        def forward(self, x, flag, z):
            h = self.fc(x) * z.sum()
            return h, h.sum() * 3

    m = Two()

    def bw(mod, gin, gout):
        log.append(("bw", [None if g is None else g.detach().clone() for g in gin],
                    [None if g is None else g.detach().clone() for g in gout]))
        return (gin[0] * 10, None, gin[2])

    def pre(mod, gout):
        log.append(("pre", [None if g is None else g.detach().clone() for g in gout]))
        if pre_scale:
            return tuple(None if g is None else g * 2 for g in gout)
        return None

    m.register_full_backward_hook(bw)
    m.register_full_backward_pre_hook(pre)
    x = lib.tensor(np.arange(6.0).reshape(2, 3) / 5, requires_grad=True)
    z = lib.tensor([0.5, -1.0], requires_grad=True)
    h, s = m(x, "flag", z)
    (h.sum() + s).backward()
    return log, x.grad, z.grad, m.fc.weight.grad


@pytest.mark.parametrize("pre_scale", [False, True])
def test_full_backward_hooks_match_torch(pre_scale):
    same(lambda lib: _backward_hooks(lib, pre_scale))


def test_full_backward_hook_when_inputs_do_not_require_grad():
    def fn(lib):
        log = []
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gin, gout: log.append((gin, gout[0].detach().clone())))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(lib.ones(1, 2)).sum().backward()
        return log
    same(fn)


def test_removed_backward_hook_does_not_fire():
    log = []
    m = ember.nn.Linear(2, 2)
    h = m.register_full_backward_hook(lambda *a: log.append(1))
    h.remove()
    m(ember.ones(1, 2, requires_grad=True)).sum().backward()
    assert log == []


# ----- modes, gradients, conversions -------------------------------------------------------------

def test_train_eval_requires_grad_zero_grad_apply():
    def fn(lib):
        m = net(lib)
        m.eval()
        modes = [mod.training for mod in m.modules()]
        m.train()
        m.requires_grad_(False)
        rg = [p.requires_grad for p in m.parameters()]
        m.requires_grad_()
        m(lib.ones(2, 3)).sum().backward()
        m.zero_grad(set_to_none=False)
        zeros = [float(p.grad.abs().sum()) for p in m.parameters()]
        m.zero_grad()
        nones = [p.grad is None for p in m.parameters()]
        seen = []
        m.apply(lambda mod: seen.append(type(mod).__name__))
        return modes, rg, zeros, nones, seen
    same(fn)


def test_to_and_casts_keep_parameter_identity():
    for lib in (torch, ember):
        m = net(lib)
        w = m.a.fc.weight
        m(lib.ones(2, 3)).sum().backward()
        assert m.to(lib.float64) is m
        assert m.a.fc.weight is w and w.dtype == lib.float64 and w.grad.dtype == lib.float64
        assert m.a.steps.dtype == lib.float64
        m.to(lib.zeros(1, dtype=lib.float32))
        assert w.dtype == lib.float32
        m.double().float()
        assert w.dtype == lib.float32
        m.half()
        assert w.dtype == lib.float16
        m.to("cpu", lib.float32)
        m.to(device="cpu", dtype=lib.float64)
        assert w.dtype == lib.float64 and isinstance(w, lib.nn.Parameter)
        bn = lib.nn.BatchNorm1d(2).double()
        assert bn.num_batches_tracked.dtype == lib.int64 and bn.running_mean.dtype == lib.float64
        m.cpu()


# ----- printing and copying -----------------------------------------------------------------------

def _reprs(lib):
    nn = lib.nn
    lib.manual_seed(0)
    m = net(lib)
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)])
    md = nn.ModuleDict({"b": nn.Conv2d(1, 2, 3), "a": nn.Sequential(nn.Tanh(), nn.Sequential(nn.GELU()))})
    pl = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.zeros(4), "x"])
    pd = nn.ParameterDict({"w": lib.ones(2), "b": nn.Parameter(lib.zeros(1, 2, dtype=lib.float64))})
    p = nn.Parameter(lib.tensor([1.0, 2.0]))

    class Custom(nn.Module):
        def extra_repr(self):
            return "line one\nline two"

    c = Custom()
    c.child = nn.Linear(1, 1)
    return [repr(x) for x in (m, ml, nn.ModuleList(), md, pl, pd, p, Custom(), c, nn.Sequential())]


def test_reprs_match_torch():
    same(_reprs)


def test_deepcopy_and_pickle():
    m = net(ember)
    m(ember.ones(2, 3)).sum().backward()
    s = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.BatchNorm1d(2))
    s2 = pickle.loads(pickle.dumps(s))
    assert isinstance(s2[0].weight, ember.nn.Parameter) and s2[1].num_batches_tracked.dtype == ember.int64
    assert list(s2.state_dict()) == list(s.state_dict()) and repr(s2) == repr(s)
    for m2 in (copy.deepcopy(m),):
        assert m2.shared is m2.a and m2.a.fc.weight is not m.a.fc.weight
        assert isinstance(m2.a.fc.weight, ember.nn.Parameter) and m2.a.fc.weight.requires_grad
        for (k, v), (k2, v2) in zip(m.state_dict().items(), m2.state_dict().items()):
            assert k == k2
            np.testing.assert_array_equal(v.numpy(), v2.numpy())
        m2.a.fc.weight.data.fill_(0)
        assert float(m.a.fc.weight.abs().sum()) > 0
    p = ember.nn.Parameter(ember.ones(2), requires_grad=False)
    q = copy.deepcopy(p)
    assert type(q) is ember.nn.Parameter and not q.requires_grad
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2), requires_grad=False))


# ----- containers ----------------------------------------------------------------------------------

def _sequential(lib):
    nn = lib.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.GELU())
    out = [type(s[-1]).__name__, type(s[1:3]).__name__, [type(x).__name__ for x in s[::-2]], len(s)]
    s.append(nn.ELU()).insert(1, nn.SELU()).extend([nn.Mish()])
    del s[0]
    out.append(_names(s.named_children()))
    out.append(type(s.pop(-1)).__name__)
    del s[1:3]
    out.append([type(x).__name__ for x in s])
    s2 = s + nn.Sequential(nn.ReLU())
    s += nn.Sequential(nn.Softsign())
    out += [len(s2), len(s), len(s * 2), len(2 * s)]
    s[0] = nn.Identity()
    od = nn.Sequential(OrderedDict([("first", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    out += [_names(od.named_children()), od.act is od[1], repr(od)]
    lib.manual_seed(0)
    out.append(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))(lib.ones(4, 2)).detach())
    return out


def test_sequential_like_torch():
    same(_sequential)


def test_sequential_operator_errors():
    # the messages name the classes (torch.nn... / ember.nn...): compared by type and start
    raises_same(lambda lib: lib.nn.Sequential(lib.nn.ReLU()) + lib.nn.ReLU(),
                msg="add operator supports only objects of Sequential class, but <class '")
    raises_same(lambda lib: lib.nn.Sequential(lib.nn.ReLU()) * 0, msg="Non-positive multiplication factor 0 for")
    raises_same(lambda lib: lib.nn.Sequential(lib.nn.ReLU()) * 1.5, msg="unsupported operand type(s) for *:")


@pytest.mark.parametrize("fn", [
    lambda lib: lib.nn.Sequential(lib.nn.ReLU())[3],
    lambda lib: lib.nn.Sequential(lib.nn.ReLU())[-2],
    lambda lib: lib.nn.Sequential(lib.nn.ReLU()).insert(5, lib.nn.ReLU()),
    lambda lib: lib.nn.ModuleList([lib.nn.ReLU()])[1],
    lambda lib: lib.nn.ModuleList(3),
    lambda lib: lib.nn.ModuleDict([("a", lib.nn.ReLU(), 1)]),
    lambda lib: lib.nn.ParameterList([lib.ones(1)])[2],
    lambda lib: lib.nn.ParameterList(lib.ones(2)),
    lambda lib: lib.nn.ParameterDict({"a": lib.ones(1)})[1],
    lambda lib: lib.nn.ParameterList()(1),
])
def test_container_errors(fn):
    raises_same(fn, exact_msg=True)


def _containers(lib):
    nn = lib.nn
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.append(nn.GELU()).extend([nn.ELU()])
    ml.insert(1, nn.SELU())
    ml += [nn.Mish()]
    del ml[0]
    out = [[type(x).__name__ for x in ml], type(ml[1:3]).__name__, len(ml + ml), type(ml.pop(0)).__name__,
           _names(ml.named_children())]
    md = nn.ModuleDict([("x", nn.ReLU()), ("y", nn.Tanh())])
    md["z"] = nn.GELU()
    md.update({"a": nn.ELU()})
    out += [list(md.keys()), "z" in md, len(md), type(md.pop("y")).__name__, list(md)]
    pl = nn.ParameterList([lib.ones(2), nn.Parameter(lib.zeros(1))])
    pl.append(lib.ones(3))
    pl[0] = lib.full((2,), 5.0)
    out += [[type(p).__name__ for p in pl], len(pl[1:]), _names(pl.named_parameters()), float(pl[0].sum())]
    pd = nn.ParameterDict({"b": lib.ones(1), "a": lib.ones(2)})
    pd.update(OrderedDict([("d", lib.ones(3)), ("c", lib.ones(1))]))
    pd["e"] = nn.Parameter(lib.ones(1))
    out += [list(pd.keys()), _names(pd.named_parameters()), type(pd["a"]).__name__, pd.get("zz", 1)]
    out += [list(pd.popitem()[1].shape), list(pd.pop("a").shape), len(pd), list((pd | nn.ParameterDict({"q": lib.ones(1)})).keys())]
    pd.setdefault("f", lib.ones(2))
    out += [list(pd.copy().keys()), list(reversed(pd))]
    return out


def test_other_containers_like_torch():
    same(_containers)


# ----- nn.utils and functional_call ----------------------------------------------------------------

def _clip(lib, norm_type, foreach):
    lib.manual_seed(0)
    m = net(lib)
    m(lib.ones(2, 3) * 3).sum().backward()
    params = list(m.parameters())
    total = lib.nn.utils.clip_grad_norm_(params, 0.5, norm_type=norm_type, foreach=foreach)
    g1 = [p.grad.clone() for p in params]
    lib.nn.utils.clip_grad_value_(m.parameters(), 0.01)
    g2 = [p.grad.clone() for p in params]
    tn = lib.nn.utils.get_total_norm([p.grad for p in params], 3.0)
    lib.nn.utils.clip_grads_with_norm_(params, 0.001, tn)
    vec = lib.nn.utils.parameters_to_vector(m.parameters())
    lib.nn.utils.vector_to_parameters(vec * 2, m.parameters())
    return total, g1, g2, tn, [p.grad for p in params], vec.detach(), [p.detach() for p in m.parameters()]


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf"), "inf", 0.5])
def test_clip_grad_like_torch(norm_type):
    same(lambda lib: _clip(lib, norm_type, None), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clip_grad_norm_kernel_path_equals_ops_path(dtype, monkeypatch):
    """clip_grad_norm_ of plain float gradients calls its ops' kernels itself: the same bits (total norm, clipped
    gradients) and version counts as applying the ops, which it does when the fast path is refused."""
    from ember.nn.utils import clip_grad
    rng = np.random.default_rng(5)
    shapes = [(), (3,), (4, 5), (2, 3, 4), (7,)]

    def run():
        ps = []
        for s in shapes:
            p = ember.nn.Parameter(ember.tensor(rng.standard_normal(s).astype(dtype)))
            p.grad = ember.tensor((rng.standard_normal(s) * 30).astype(dtype))
            ps.append(p)
        vcs = [p.grad._version for p in ps]
        total = ember.nn.utils.clip_grad_norm_(ps, 0.7)
        return total, [p.grad for p in ps], [p.grad._version - v for p, v in zip(ps, vcs)]

    state = rng.bit_generator.state
    fast = run()
    rng.bit_generator.state = state
    monkeypatch.setattr(clip_grad, "_plain_arrays", lambda tensors: None)
    slow = run()
    assert fast[0].dtype == slow[0].dtype and fast[0].numpy().tobytes() == slow[0].numpy().tobytes()
    for a, b in zip(fast[1], slow[1]):
        assert a.numpy().tobytes() == b.numpy().tobytes()
    assert fast[2] == slow[2] == [1] * len(shapes)
    assert float(fast[0]) > 0.7   # the gradients were scaled


def test_clip_grad_errors_and_edge_cases():
    def nonfinite(lib):
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.tensor([1.0, float("inf")])
        lib.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    raises_same(nonfinite, exact_msg=True)
    same(lambda lib: lib.nn.utils.clip_grad_norm_([], 1.0))
    raises_same(lambda lib: lib.nn.utils.vector_to_parameters([1.0], []), exact_msg=True)
    with pytest.warns(UserWarning, match="empty generator"):
        ember.nn.utils.clip_grad_norm_((p for p in []), 1.0)


def _functional_call(lib):
    lib.manual_seed(0)
    m = net(lib)
    del m.shared   # PyTorch 2.13 leaves a module registered twice holding the substitutes (ember restores it)
    params = {k: (v.detach() * 2).requires_grad_() for k, v in m.named_parameters()}
    bufs = {"a.steps": lib.ones(1)}
    x = lib.ones(2, 3)
    out = lib.func.functional_call(m, (params, bufs), (x,))
    out.sum().backward()
    own = m(x)
    return (out.detach(), own.detach(), params["a.fc.weight"].grad, m.a.fc.weight.grad is None,
            m.a.steps, isinstance(m.a.fc.weight, lib.nn.Parameter))


def test_functional_call_like_torch():
    same(_functional_call)


def test_functional_call_restores_shared_submodules():
    m = net(ember)
    before = dict(m.named_parameters(remove_duplicate=False))
    params = {k: v.detach() * 2 for k, v in m.named_parameters()}
    ember.func.functional_call(m, params, ember.ones(2, 3))
    after = dict(m.named_parameters(remove_duplicate=False))
    assert all(before[k] is after[k] for k in before)


def _tied(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(2, 2, bias=False), lib.nn.Linear(2, 2, bias=False))
    m[1].weight = m[0].weight
    w = lib.full((2, 2), 0.5)
    x = lib.ones(1, 2)
    return (lib.func.functional_call(m, {"0.weight": w}, x).detach(),
            lib.func.functional_call(m, {"0.weight": w}, x, tie_weights=False).detach())


def test_functional_call_tied_weights_and_errors():
    same(_tied)
    raises_same(lambda lib: lib.func.functional_call(lib.nn.Linear(2, 2), {"weight": lib.ones(2, 2)}, lib.ones(2),
                                                     strict=True), exact_msg=True)
    raises_same(lambda lib: lib.func.functional_call(lib.nn.Linear(2, 2), ({"weight": lib.ones(2, 2)},
                                                                           {"weight": lib.ones(2, 2)}), lib.ones(2)),
                exact_msg=True)
    raises_same(lambda lib: lib.func.functional_call(lib.nn.Linear(2, 2), 3, lib.ones(2)), exact_msg=True)


def test_training_loop_prints_same_losses():
    def loop(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.Tanh(), lib.nn.Linear(8, 1))
        crit = lib.nn.MSELoss()
        x, y = lib.randn(16, 3), lib.randn(16, 1)
        losses = []
        for _ in range(5):
            model.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            with lib.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
            losses.append(loss.item())
        return losses
    same(loop, rtol=1e-6)
