"""Review findings on issue 8, each against PyTorch: the nested-tensor TransformerEncoder path, Lazy* modules
loading a state dict, rnn utils given lists, optimizers after a dtype change, full backward hooks, swa_utils."""
import warnings

import pytest

import ember

from parity import raises_same, same

torch = pytest.importorskip("torch")

_PADS = {
    "tail": [[0] * 5, [0] * 3 + [1] * 2],
    "tail_all_rows": [[0] * 3 + [1] * 2] * 2,
    "not_left_aligned": [[0] * 5, [1, 0, 0, 1, 0]],
    "row_all_padded": [[0] * 5, [1] * 5],
    "all_padded": [[1] * 5] * 2,
}


@pytest.mark.parametrize("pad", list(_PADS))
@pytest.mark.parametrize("mode", ["nested", "no_mask_check", "grad", "train", "norm", "float_mask", "layer",
                                  "not_nested"])
def test_encoder_nested_path_zeroes_padding(pad, mode):
    def fn(lib):
        nn = lib.nn
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
            enc = nn.TransformerEncoder(layer, 2, mask_check=mode != "no_mask_check",
                                        norm=nn.LayerNorm(8) if mode == "norm" else None,
                                        enable_nested_tensor=mode != "not_nested")
        enc.train(mode == "train")
        if mode == "norm":
            with lib.no_grad():
                enc.norm.bias.fill_(0.25)
        x = lib.randn(2, 5, 8)
        m = lib.tensor([[bool(v) for v in r] for r in _PADS[pad]])
        if mode == "float_mask":
            m = lib.zeros(2, 5).masked_fill(m, float("-inf"))
        with lib.set_grad_enabled(mode == "grad"):
            if mode == "layer":  # the fused layer path keeps the values at padded positions
                return layer.eval()(x, src_key_padding_mask=m).detach()
            return enc(x, src_key_padding_mask=m).detach()
    same(fn, atol=1e-5)


def test_encoder_nested_path_frozen_weights_with_grad_enabled():
    def fn(lib):
        lib.manual_seed(0)
        enc = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1).eval()
        enc.requires_grad_(False)
        out = enc(lib.randn(2, 4, 8), src_key_padding_mask=lib.tensor([[False] * 4, [False, False, True, True]]))
        return out, out[1, 2:].abs().sum()
    same(fn, atol=1e-5)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("masks", ["padding", "attn", "both", "float_padding", "none"])
def test_fused_attention_paths_nan_fully_masked_rows(masks, grad):
    """PyTorch's fused kernels (MHA fast path, fused encoder layer) give NaN rows where every key is masked."""
    def fn(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
        x = lib.randn(2, 5, 8)
        kpm = lib.tensor([[False] * 5, [True] * 5]) if masks in ("padding", "both", "float_padding") else None
        if masks == "float_padding":
            kpm = lib.zeros(2, 5).masked_fill(kpm, float("-inf"))
        am = None
        if masks in ("attn", "both"):
            am = lib.zeros(5, 5, dtype=lib.bool)
            am[1, :] = True
        with lib.set_grad_enabled(grad):
            a = layer(x, src_mask=am, src_key_padding_mask=kpm)
            hooked = layer.register_forward_hook(lambda *args: None)  # hooks keep PyTorch off the fused path
            b = layer(x, src_mask=am, src_key_padding_mask=kpm)
            hooked.remove()
            c = layer.self_attn(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]
            d = layer.self_attn(x, x.clone(), x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]
        return a.detach(), b.detach(), c.detach(), d.detach()
    same(fn, atol=1e-5)


_LAZY = {
    "LazyLinear": (lambda nn: nn.LazyLinear(4), lambda nn: nn.Linear(5, 4), (3, 5)),
    "LazyLinear_nobias": (lambda nn: nn.LazyLinear(4, bias=False), lambda nn: nn.Linear(5, 4, bias=False), (3, 5)),
    "LazyConv1d": (lambda nn: nn.LazyConv1d(4, 3), lambda nn: nn.Conv1d(2, 4, 3), (2, 2, 7)),
    "LazyConv2d": (lambda nn: nn.LazyConv2d(4, 3, groups=2, padding=1), lambda nn: nn.Conv2d(2, 4, 3, groups=2,
                                                                                            padding=1), (2, 2, 5, 5)),
    "LazyConv3d": (lambda nn: nn.LazyConv3d(2, 2, bias=False), lambda nn: nn.Conv3d(3, 2, 2, bias=False),
                   (1, 3, 3, 3, 3)),
    "LazyConvTranspose1d": (lambda nn: nn.LazyConvTranspose1d(3, 2, stride=2),
                            lambda nn: nn.ConvTranspose1d(2, 3, 2, stride=2), (2, 2, 4)),
    "LazyConvTranspose2d": (lambda nn: nn.LazyConvTranspose2d(4, 3, groups=2),
                            lambda nn: nn.ConvTranspose2d(2, 4, 3, groups=2), (2, 2, 3, 3)),
    "LazyConvTranspose3d": (lambda nn: nn.LazyConvTranspose3d(2, 2), lambda nn: nn.ConvTranspose3d(3, 2, 2),
                            (1, 3, 2, 2, 2)),
    "LazyBatchNorm1d": (lambda nn: nn.LazyBatchNorm1d(), lambda nn: nn.BatchNorm1d(3), (4, 3)),
    "LazyBatchNorm2d": (lambda nn: nn.LazyBatchNorm2d(momentum=0.3), lambda nn: nn.BatchNorm2d(3), (2, 3, 2, 2)),
    "LazyBatchNorm3d": (lambda nn: nn.LazyBatchNorm3d(affine=False), lambda nn: nn.BatchNorm3d(3, affine=False),
                        (2, 3, 2, 2, 2)),
    "LazyInstanceNorm1d": (lambda nn: nn.LazyInstanceNorm1d(), lambda nn: nn.InstanceNorm1d(3), (2, 3, 4)),
    "LazyInstanceNorm2d": (lambda nn: nn.LazyInstanceNorm2d(affine=True, track_running_stats=True),
                           lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (2, 3, 4, 4)),
    "LazyInstanceNorm3d": (lambda nn: nn.LazyInstanceNorm3d(), lambda nn: nn.InstanceNorm3d(3), (2, 3, 2, 2, 2)),
}


@pytest.mark.parametrize("name", list(_LAZY))
def test_lazy_modules_first_forward_and_load(name):
    make, make_src, shape = _LAZY[name]

    def first_forward(lib):  # same seed, same weights as PyTorch; then the ordinary class
        lib.manual_seed(0)
        m = make(lib.nn)
        before = (type(m).__name__, repr(m), sorted(m.state_dict()))
        x = lib.randn(*shape)
        y = m(x)
        return before[0], before[2], type(m).__name__, repr(m), y.detach(), tuple(
            (k, v.detach()) for k, v in m.state_dict().items()), sum(1 for _ in m.parameters())

    def load_then_forward(lib):  # load_state_dict before the first forward takes the checkpoint's shapes
        lib.manual_seed(1)
        src = make_src(lib.nn)
        for t in src.parameters():
            with lib.no_grad():
                t.uniform_(-1, 1)
        m = make(lib.nn)
        m.load_state_dict(src.state_dict())
        mid = (type(m).__name__, repr(m))
        x = lib.randn(*shape)
        src.train(m.training)
        return mid, (m(x) - src(x)).abs().max().item(), type(m).__name__, repr(m)

    same(first_forward, atol=1e-5)
    same(load_then_forward, atol=1e-5)


def test_lazy_errors_and_partial_load():
    raises_same(lambda lib: lib.nn.LazyLinear(4).load_state_dict({"weight": lib.ones(4, 5)}), msg='"bias"')
    raises_same(lambda lib: lib.nn.LazyConv2d(4, 3)(lib.ones(3, 3)), msg="Expected 3D (unbatched) or 4D (batched)")
    raises_same(lambda lib: lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 4, 4)), msg="divisible by groups")


_RNN_MISUSE = {
    "pad_list_of_lists": lambda R, lib: R.pad_sequence([[1, 2], [3]]),
    "pad_tensor_then_list": lambda R, lib: R.pad_sequence([lib.ones(2), [3]]),
    "pad_ints": lambda R, lib: R.pad_sequence([1, 2]),
    "pad_int": lambda R, lib: R.pad_sequence(3),
    "pad_empty": lambda R, lib: R.pad_sequence([]),
    "pad_0d": lambda R, lib: R.pad_sequence([lib.tensor(1.0), lib.tensor(2.0)]),
    "pad_trailing": lambda R, lib: R.pad_sequence([lib.ones(2, 3), lib.ones(1, 2)]),
    "pad_more_dims": lambda R, lib: R.pad_sequence([lib.ones(2), lib.ones(1, 3)]),
    "pack_list_of_lists": lambda R, lib: R.pack_sequence([[1, 2], [3]]),
    "pack_empty": lambda R, lib: R.pack_sequence([]),
    "packpad_list_input": lambda R, lib: R.pack_padded_sequence([[1, 2], [3, 4]], [2, 1]),
    "packpad_lengths_2d": lambda R, lib: R.pack_padded_sequence(lib.ones(2, 2), [[2], [1]]),
    "packpad_lengths_0d": lambda R, lib: R.pack_padded_sequence(lib.ones(2, 2), 2),
    "packpad_lengths_none": lambda R, lib: R.pack_padded_sequence(lib.ones(2, 2), None),
}


@pytest.mark.parametrize("case", list(_RNN_MISUSE))
def test_rnn_utils_misuse(case):
    raises_same(lambda lib: _RNN_MISUSE[case](lib.nn.utils.rnn, lib), exact_msg=True)


def test_pad_sequence_broadcasts_like_a_copy():
    same(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.full((1, 1), 2.0)], batch_first=True))
    same(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3, 2), lib.full((1, 2), 2.0)]))


_OPTS = {
    "Adam": lambda O, p: O.Adam(p), "Adam_amsgrad": lambda O, p: O.Adam(p, amsgrad=True),
    "Adam_fused": lambda O, p: O.Adam(p, fused=True), "AdamW": lambda O, p: O.AdamW(p),
    "AdamW_fused": lambda O, p: O.AdamW(p, fused=True), "SGD": lambda O, p: O.SGD(p, lr=0.1),
    "SGD_momentum": lambda O, p: O.SGD(p, lr=0.1, momentum=0.9),
    "SGD_nesterov": lambda O, p: O.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "SGD_fused": lambda O, p: O.SGD(p, lr=0.1, momentum=0.9, fused=True), "RMSprop": lambda O, p: O.RMSprop(p),
    "RMSprop_centered_momentum": lambda O, p: O.RMSprop(p, centered=True, momentum=0.5),
    "Adagrad": lambda O, p: O.Adagrad(p), "Adagrad_fused": lambda O, p: O.Adagrad(p, fused=True),
    "Adadelta": lambda O, p: O.Adadelta(p), "Adamax": lambda O, p: O.Adamax(p), "NAdam": lambda O, p: O.NAdam(p),
    "RAdam": lambda O, p: O.RAdam(p), "ASGD": lambda O, p: O.ASGD(p), "Rprop": lambda O, p: O.Rprop(p),
    "Adafactor": lambda O, p: O.Adafactor(p), "LBFGS": lambda O, p: O.LBFGS(p),
}


@pytest.mark.parametrize("conv", ["double", "half", "float"])
@pytest.mark.parametrize("name", list(_OPTS))
def test_optimizer_step_after_dtype_change(name, conv):
    """State made before ``model.double()`` (etc.): PyTorch's lerp-based and fused steps raise, others run with
    the state's dtype kept."""
    def fn(lib):
        lib.manual_seed(0)
        m = lib.nn.Linear(2, 1)
        if conv == "float":
            m.double()
        opt = _OPTS[name](lib.optim, m.parameters())
        x = lib.ones(1, 2, dtype=m.weight.dtype)

        def closure():
            opt.zero_grad()
            loss = m(x).sum()
            loss.backward()
            return loss
        opt.step(closure)
        getattr(m, conv)()
        x = x.to(m.weight.dtype)
        opt.step(closure)
        state = opt.state[m.weight]
        return m.weight.detach(), tuple(sorted((k, str(v.dtype)) for k, v in state.items() if hasattr(v, "dtype")))
    same(fn, rtol=1e-12, atol=1e-15, exact_msg=True)


def _hook_log(lib, kind):
    log = []

    def show(t):
        return None if t is None else t.detach()

    class Two(lib.nn.Module):
        def forward(self, a, b, k=3):
            if kind == "unused_b":
                return a * 2, b.detach()
            if kind == "two_outputs":
                return a * 2, a * 3
            if kind == "int_arg":
                return a * k
            if kind == "index":
                return a[b]
            return a + b

    m = Two()
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", tuple(map(show, gi)), tuple(map(show, go)))))
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", tuple(map(show, go)))))
    a = lib.ones(3, requires_grad=True)
    b = lib.full((3,), 2.0, requires_grad=kind == "unused_b")
    if kind == "b_int":
        out = m(a, 5)
    elif kind == "int_arg":
        out = m(a, b, 4)
    elif kind == "index":
        out = m(a, lib.tensor([0, 2]))
    else:
        out = m(a, b)
    out = out[0] if isinstance(out, tuple) else out
    (out * lib.arange(out.shape[0])).sum().backward()
    return tuple(log), a.grad


@pytest.mark.parametrize("kind", ["plain", "unused_b", "two_outputs", "int_arg", "b_int", "index"])
def test_full_backward_hook_grad_input_zeros_for_inputs_without_grad(kind):
    same(lambda lib: _hook_log(lib, kind))


def test_full_backward_hook_with_inplace_relu_raises():
    def fn(lib):
        r = lib.nn.ReLU(inplace=True)
        r.register_full_backward_hook(lambda *args: None)
        return r(lib.randn(3, requires_grad=True) * 1)
    raises_same(fn, exact_msg=True)

    def custom(lib):  # the same rule for any custom Function that returns its input as is
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        y = F.apply(lib.ones(2, requires_grad=True) * 1)
        with lib.no_grad():
            y.add_(1)  # allowed: not recorded
        return y.add_(1)
    raises_same(custom, exact_msg=True)


def _swa_run(lib, mode):
    from_lib = lib.optim.swa_utils
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    if mode == "double":
        model.double()
    kw = {}
    if mode == "ema":
        kw = {"multi_avg_fn": from_lib.get_ema_multi_avg_fn(0.9)}
    elif mode == "ema_single":
        kw = {"avg_fn": from_lib.get_ema_avg_fn(0.8)}
    elif mode == "swa_multi":
        kw = {"multi_avg_fn": from_lib.get_swa_multi_avg_fn()}
    elif mode == "buffers":
        kw = {"multi_avg_fn": from_lib.get_ema_multi_avg_fn(0.5), "use_buffers": True}
    avg = from_lib.AveragedModel(model, **kw)
    opt = lib.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    sched = from_lib.SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy="linear" if mode == "ema" else "cos")
    data = [lib.randn(5, 3, dtype=model[0].weight.dtype) for _ in range(4)]
    lrs = []
    for x in data:
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        avg.update_parameters(model)
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    from_lib.update_bn(data, avg)
    state = tuple((k, v.detach()) for k, v in avg.state_dict().items())
    with lib.no_grad():
        out = avg(data[0])
    return tuple(lrs), state, out, sched.state_dict()["anneal_epochs"], avg.training


@pytest.mark.parametrize("mode", ["swa", "double", "ema", "ema_single", "swa_multi", "buffers"])
def test_swa_utils_step_for_step(mode):
    same(lambda lib: _swa_run(lib, mode), rtol=1e-6, atol=1e-7)


def test_swa_utils_errors():
    raises_same(lambda lib: lib.optim.swa_utils.get_ema_avg_fn(1.5), exact_msg=True)
    raises_same(lambda lib: lib.optim.swa_utils.SWALR(lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1), 0.1,
                                                        anneal_strategy="exp"), exact_msg=True)
    raises_same(lambda lib: lib.optim.swa_utils.SWALR(lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1), 0.1,
                                                        anneal_epochs=-1), exact_msg=True)
    raises_same(lambda lib: lib.optim.swa_utils.AveragedModel(lib.nn.Linear(1, 1), avg_fn=lambda *a: a[0],
                                                                multi_avg_fn=lambda *a: None), exact_msg=True)


def test_transformer_eval_padding_goes_through_nested_encoder():
    def fn(lib):
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = lib.nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, batch_first=True).eval()
        src, tgt = lib.randn(2, 5, 8), lib.randn(2, 4, 8)
        pad = lib.tensor([[False] * 5, [False] * 3 + [True] * 2])
        with lib.no_grad():
            return t(src, tgt, src_key_padding_mask=pad, memory_key_padding_mask=pad), t.encoder(
                src, src_key_padding_mask=pad)
    same(fn, atol=1e-5)


def test_lazy_module_copies_before_first_forward():
    import copy
    import pickle

    def fn(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.LazyConv1d(3, 2), lib.nn.LazyBatchNorm1d())
        p = pickle.loads(pickle.dumps(m))
        x = lib.randn(2, 4, 5)
        return p(x).detach(), repr(p), m[0].has_uninitialized_params()
    same(fn, atol=1e-6)
    raises_same(lambda lib: copy.deepcopy(lib.nn.LazyBatchNorm1d()), msg="Attempted to use an uninitialized parameter")

    def copied(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.LazyLinear(3), lib.nn.LazyConv1d(2, 2), lib.nn.LazyBatchNorm1d(
            track_running_stats=False))
        c = copy.deepcopy(m)
        before = repr(c), c[0].has_uninitialized_params()
        return before, c(lib.randn(2, 4, 5)).detach(), repr(c)
    same(copied, atol=1e-6)

    def loaded_then_copied(lib):  # materialised by load_state_dict: copies fine
        lib.manual_seed(0)
        m = lib.nn.LazyLinear(3)
        m.load_state_dict(lib.nn.Linear(2, 3).state_dict())
        c = copy.deepcopy(m)
        return c(lib.ones(1, 2)).detach(), type(c).__name__
    same(loaded_then_copied)
