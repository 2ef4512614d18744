"""The slow tiers named in tests/conftest.py exist (a renamed test must not silently leave its tier)."""
import os

from conftest import SLOW_TIERS

HERE = os.path.dirname(os.path.abspath(__file__))


def test_slow_tiers_name_real_tests():
    for key in SLOW_TIERS:
        name, func = key.split("::")
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            src = f.read()
        assert func == "*" or f"\ndef {func}(" in src, f"SLOW_TIERS names no test: {key}"


def test_slow_marker_is_applied(request):
    import pathlib
    import types

    import conftest

    def item(name, func):
        it = types.SimpleNamespace(path=pathlib.Path(HERE, name), originalname=func, name=func + "[x]", marks=[])
        it.add_marker = it.marks.append
        return it
    items = [item("test_ops.py", "test_gradcheck"), item("test_demo.py", "test_anything"),
             item("test_ops.py", "test_forward")]
    conftest.pytest_collection_modifyitems(request.config, items)
    assert [[m.name for m in it.marks] for it in items] == [["slow"], ["slow"], []]
    assert request.node.get_closest_marker("slow") is None   # this test is in no slow tier
    assert any(line.startswith("slow:") for line in request.config.getini("markers"))   # registered
