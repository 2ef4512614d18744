"""Anomaly detection, against PyTorch on the same programs: the mode's flags and context managers, forward
tracebacks on nodes, the NaN check, the "Error detected in ..." warning, and version errors that name lines."""
import sys
import threading
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

LIBS = [torch, ember]
ENABLED = ("Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
           "for debugging.")


@pytest.fixture(autouse=True)
def _mode_off():
    """Every test starts and ends with the mode off in both libraries (it is global, as in PyTorch)."""
    for lib in LIBS:
        lib.set_anomaly_enabled(False)
    yield
    for lib in LIBS:
        lib.set_anomaly_enabled(False)


def run(fn, lib):
    """``fn(lib)`` -> (result or None, exception or None, [warning messages of UserWarning])."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = err = None
        try:
            res = fn(lib)
        except Exception as e:   # noqa: BLE001  (compared between the libraries)
            err = e
    return res, err, [str(x.message) for x in w if issubclass(x.category, UserWarning)]


def both(fn):
    return [run(fn, lib) for lib in LIBS]


# ----- flags and context managers -----------------------------------------------------------------

def test_flags_and_setters_match_torch():
    def prog(lib):
        seen = [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
        r = lib.autograd.set_detect_anomaly(True)            # a plain call turns it on ...
        seen += [type(r).__name__, lib.is_anomaly_enabled()]
        lib.autograd.set_detect_anomaly(False)
        seen.append(lib.is_anomaly_enabled())
        with lib.autograd.set_detect_anomaly(True, check_nan=False):   # ... and a with-block restores it
            seen += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
            with lib.autograd.detect_anomaly():                          # nested
                seen += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
                with lib.autograd.set_detect_anomaly(False):
                    seen.append(lib.is_anomaly_enabled())
                seen.append(lib.is_anomaly_enabled())
            seen += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
        seen += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
        lib.set_anomaly_enabled(True, False)
        seen += [lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()]
        return seen
    (rt, et, _), (re_, ee, _) = both(prog)
    assert et is None and ee is None, (et, ee)
    assert rt == re_
    assert rt[:2] == [False, True]


def test_set_anomaly_enabled_type_error():
    for lib in LIBS:
        with pytest.raises(TypeError, match="must be bool"):
            lib.set_anomaly_enabled("yes")


def test_detect_anomaly_warns_as_torch():
    (_, _, wt), (_, _, we) = both(lambda lib: lib.autograd.detect_anomaly())
    assert wt == we == [ENABLED]


def test_mode_is_global_across_threads():
    def prog(lib):
        seen = []
        with lib.autograd.set_detect_anomaly(True):
            th = threading.Thread(target=lambda: seen.append(lib.is_anomaly_enabled()))
            th.start()
            th.join()
        return seen
    (rt, _, _), (re_, _, _) = both(prog)
    assert rt == re_ == [True]


def test_decorator_beyond_torch():
    # PyTorch 2.x's detect_anomaly is no decorator (TypeError); ember's is, as its grad modes are.
    seen = []

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @ember.autograd.detect_anomaly(check_nan=False)
        def f():
            seen.append((ember.is_anomaly_enabled(), ember.is_anomaly_check_nan_enabled()))

    f()
    f()
    assert seen == [(True, False), (True, False)]
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()


# ----- forward tracebacks on nodes -----------------------------------------------------------------

def _sqrt_node(lib):
    x = lib.tensor([4.0, 9.0], requires_grad=True)
    y = x.sqrt()  # LINE-SQRT
    return y.grad_fn


def test_node_records_the_forward_traceback_as_torch():
    def prog(lib):
        with lib.autograd.set_detect_anomaly(True):
            md = _sqrt_node(lib).metadata
        return list(md), md["traceback_"]
    (rt, et, _), (re_, ee, _) = both(prog)
    assert et is None and ee is None
    assert rt[0] == re_[0] == ["traceback_"]
    assert isinstance(re_[1], list) and all(isinstance(s, str) for s in re_[1])
    # torch formats the stack with traceback.format_list and shows none of its own (C++) frames; ember leaves
    # its own frames off, so the innermost frames are the same text
    assert re_[1][-1] == rt[1][-1]
    assert "LINE-SQRT" in re_[1][-1]
    assert re_[1][-2] == rt[1][-2]


def test_leaf_accumulator_records_where_it_joined_the_graph():
    def prog(lib):
        with lib.autograd.set_detect_anomaly(True):
            x = lib.ones(2, requires_grad=True)
            y = x * 2  # LINE-ACC
        acc = y.grad_fn.next_functions[0][0]
        return acc.name(), acc.metadata["traceback_"][-1]
    (rt, _, _), (re_, _, _) = both(prog)
    assert rt == re_ and "LINE-ACC" in re_[1]


def test_error_in_a_hook_is_reported_for_its_node():
    def prog(lib):
        with lib.autograd.set_detect_anomaly(True):
            x = lib.ones(2, requires_grad=True)

            def hook(g):
                raise KeyError("h")
            x.register_hook(hook)
            (x * 1).sum().backward()
    (_, et, wt), (_, ee, we) = both(prog)
    assert type(et) is type(ee) is KeyError
    first = "Error detected in torch::autograd::AccumulateGrad. Traceback of forward call that caused the error:"
    assert [m.splitlines()[0] for m in we if m.startswith("Error")] == [first]
    assert any(m.startswith(first) for m in wt)


def test_no_recording_when_off():
    for lib in LIBS:
        assert _sqrt_node(lib).metadata == {}
        with lib.autograd.set_detect_anomaly(True):
            pass
        assert _sqrt_node(lib).metadata == {}


def test_engine_does_not_use_the_checked_path_when_off(monkeypatch):
    import ember.autograd.engine as engine

    def refuse(*a):
        raise AssertionError("anomaly checks ran with the mode off")
    monkeypatch.setattr(engine, "run_node_checked", refuse)
    x = ember.tensor([-1.0, 4.0], requires_grad=True)
    x.sqrt().sum().backward()    # NaN gradient, no error: the mode is off
    assert ember.isnan(x.grad)[0].item()
    with ember.autograd.set_detect_anomaly(True):
        with pytest.raises(AssertionError, match="anomaly checks ran"):
            x.sqrt().sum().backward()


# ----- NaN in backward ----------------------------------------------------------------------------------

def _sqrt_negative(lib):
    x = lib.tensor([-1.0, 4.0], requires_grad=True)
    y = x.sqrt()  # LINE-NAN
    y.sum().backward()
    return x.grad


def test_nan_in_backward_raises_as_torch():
    def prog(lib):
        with lib.autograd.detect_anomaly():
            return _sqrt_negative(lib)
    (_, et, wt), (_, ee, we) = both(prog)
    assert type(et) is type(ee) is RuntimeError
    assert str(ee) == str(et) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    # the warning: PyTorch's category and first line, then the forward traceback with the user's line
    errt = [m for m in wt if m.startswith("Error detected")]
    erre = [m for m in we if m.startswith("Error detected")]
    assert len(erre) == 1 and len(errt) == 1
    first = "Error detected in SqrtBackward0. Traceback of forward call that caused the error:"
    assert erre[0].splitlines()[0] == errt[0].splitlines()[0] == first
    assert "y = x.sqrt()  # LINE-NAN" in erre[0]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_error_carries_the_forward_traceback_as_a_note():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ember.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as info:
                _sqrt_negative(ember)
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1
    assert "Error detected in SqrtBackward0" in notes[0] and "LINE-NAN" in notes[0]


def test_check_nan_false_does_not_raise():
    def prog(lib):
        with lib.autograd.detect_anomaly(check_nan=False):
            return _sqrt_negative(lib).tolist()
    (rt, et, _), (re_, ee, _) = both(prog)
    assert et is None and ee is None
    assert str(rt) == str(re_)   # [nan, 0.25]
    assert rt[1] == re_[1] == 0.25


def test_nan_only_checked_under_the_mode():
    (rt, et, _), (re_, ee, _) = both(lambda lib: _sqrt_negative(lib).tolist())
    assert et is None and ee is None and str(rt) == str(re_)


def _custom(lib, backward_result):
    class MyFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return backward_result(g)
    return MyFunc


def test_custom_function_nan_names_its_node():
    def prog(lib):
        f = _custom(lib, lambda g: g * float("nan"))
        with lib.autograd.detect_anomaly():
            x = lib.ones(2, requires_grad=True)
            y = f.apply(x)  # LINE-CUSTOM
            md = y.grad_fn.metadata
            y.sum().backward()
        return md
    (_, et, wt), (_, ee, we) = both(prog)
    assert str(et) == str(ee) == "Function 'MyFuncBackward' returned nan values in its 0th output."
    erre = [m for m in we if m.startswith("Error detected in MyFuncBackward.")]
    assert len(erre) == 1 and "y = f.apply(x)  # LINE-CUSTOM" in erre[0]
    assert any(m.startswith("Error detected in MyFuncBackward.") for m in wt)


def test_custom_function_records_stack():
    def prog(lib):
        f = _custom(lib, lambda g: g)
        with lib.autograd.set_detect_anomaly(True):
            y = f.apply(lib.ones(2, requires_grad=True))  # LINE-APPLY
        return y.grad_fn.metadata["traceback_"]
    (rt, _, _), (re_, _, _) = both(prog)
    line = [s for s in rt if "LINE-APPLY" in s]
    assert line and line[0] == re_[-1]   # torch goes on into its function.py; ember stops at the user's line


def test_error_in_backward_warns_and_keeps_its_type():
    def prog(lib):
        def boom(g):
            raise ValueError("boom")
        f = _custom(lib, boom)
        with lib.autograd.detect_anomaly():
            y = f.apply(lib.ones(2, requires_grad=True))  # LINE-BOOM
            y.sum().backward()
    (_, et, wt), (_, ee, we) = both(prog)
    assert type(et) is type(ee) is ValueError and str(ee) == "boom"
    erre = [m for m in we if m.startswith("Error detected in MyFuncBackward.")]
    assert len(erre) == 1 and "LINE-BOOM" in erre[0]
    assert any(m.startswith("Error detected in MyFuncBackward.") for m in wt)


def test_no_forward_information_when_enabled_only_for_backward():
    def prog(lib):
        x = lib.tensor([-1.0], requires_grad=True)
        y = x.sqrt()
        with lib.autograd.set_detect_anomaly(True):
            y.backward()
    (_, et, wt), (_, ee, we) = both(prog)
    assert str(et) == str(ee)
    msg = ("Error detected in SqrtBackward0. No forward pass information available. Enable detect anomaly during "
           "forward pass for more information.")
    assert any(m.startswith(msg) for m in wt)
    assert [m for m in we if m.startswith("Error detected")] == [msg]


def test_double_backward_names_the_parent():
    mds = []

    def prog(lib):
        with lib.autograd.set_detect_anomaly(True):
            x = lib.tensor([0.0, 1.0], requires_grad=True)
            z = x.sqrt()  # LINE-PARENT
            g, = lib.autograd.grad(z.sum(), x, create_graph=True)
            mds.append(g.grad_fn.metadata)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # 0 * inf in the forward
                h = g * 0
            h.sum().backward()
    (_, et, wt), (_, ee, we) = both(prog)
    assert str(et) == str(ee) == "Function 'DivBackward0' returned nan values in its 1th output."
    assert mds[0]["parent_"].name() == mds[1]["parent_"].name() == "SqrtBackward0"
    text_t, text_e = "\n".join(wt), "\n".join(we)
    induced = ("Previous calculation was induced by SqrtBackward0. Traceback of forward call that induced the previous "
               "calculation:")
    assert induced in text_t and induced in text_e
    assert "z = x.sqrt()  # LINE-PARENT" in text_e.split(induced)[1]


# ----- version errors under anomaly mode -------------------------------------------------------------------

def test_version_error_names_the_saving_and_modifying_lines():
    def prog(lib):
        with lib.autograd.detect_anomaly():
            a = lib.ones(3, requires_grad=True)
            c = (a * 2).exp()  # LINE-SAVED
            c.add_(1)  # LINE-MODIFIED
            c.sum().backward()
    (_, et, wt), (_, ee, we) = both(prog)
    assert type(et) is type(ee) is RuntimeError
    # PyTorch's message (with its anomaly-mode hint) comes first, word for word ...
    assert str(ee).startswith(str(et))
    assert str(et).endswith("Good luck!")
    # ... then the lines that saved and modified the tensor
    extra = str(ee)[len(str(et)):]
    assert "saved for backward by ExpBackward0" in extra and "c = (a * 2).exp()  # LINE-SAVED" in extra
    assert "modified in place (to version 1)" in extra and "c.add_(1)  # LINE-MODIFIED" in extra
    assert [m.splitlines()[0] for m in we if m.startswith("Error")] == \
        [m.splitlines()[0] for m in wt if m.startswith("Error")]


def test_version_error_of_a_saved_input_through_a_view():
    def prog(lib):
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            a = lib.ones(4, requires_grad=True)
            b = a * 1
            c = b.sin()  # LINE-SIN
            b[:2].mul_(3)  # LINE-VIEW
            c.sum().backward()
    (_, et, _), (_, ee, _) = both(prog)
    assert str(ee).startswith(str(et))
    extra = str(ee)[len(str(et)):]
    assert "SinBackward0" in extra and "LINE-SIN" in extra and "LINE-VIEW" in extra


def test_version_error_without_the_mode_is_unchanged():
    def prog(lib):
        a = lib.ones(3, requires_grad=True)
        c = (a * 2).exp()
        c.add_(1)
        c.sum().backward()
    (_, et, _), (_, ee, _) = both(prog)
    assert str(ee) == str(et) + "\nIt was saved for backward by ExpBackward0."
    assert "set_detect_anomaly(True, check_nan=False)" in str(ee)


def test_version_error_names_the_saver_of_an_input():
    # torch names the tensor's current history (the in-place Add); ember adds the node that needed it (Sin)
    def prog(lib):
        a = lib.ones(3, requires_grad=True)
        b = a * 2
        c = b.sin()
        b.add_(1)
        c.sum().backward()
    (_, et, _), (_, ee, _) = both(prog)
    assert "which is output 0 of Add," in str(et)
    assert str(ee) == str(et) + "\nIt was saved for backward by SinBackward0."


def test_version_error_in_custom_function_names_it():
    def prog(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * x * g
        a = lib.ones(3, requires_grad=True)
        b = a * 1
        y = Square.apply(b)
        b.mul_(2)
        y.sum().backward()
    (_, et, _), (_, ee, _) = both(prog)
    assert type(et) is type(ee) is RuntimeError
    assert str(ee) == str(et) + "\nIt was saved for backward by SquareBackward."
