"""ember.viz.to_html's page in a real headless Chromium (Debian's ``chromium`` driven by Playwright).

Skipped, with the reason shown, where Playwright or a Chromium binary is missing (``.ci/run`` installs
both when it can). Screenshots are kept under tests/artifacts/ (git-ignored); with EMBER_WRITE_DOCS=1
the seed example's screenshot is also written to docs/viz-seed-example.png for the README.
"""
import os
import shutil
import time
import warnings
from pathlib import Path

import pytest

import ember
import ember.viz as viz

ARTIFACTS = Path(__file__).parent / "artifacts"
DOCS_PNG = Path(__file__).parent.parent / "docs" / "viz-seed-example.png"


def _skip(reason):
    # also a warning: pytest -q lists warnings at the end, skip reasons only with -rs
    warnings.warn(f"ember.viz browser test skipped: {reason}", stacklevel=2)
    pytest.skip(reason)


def _chromium():
    for c in (os.environ.get("EMBER_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright import sync_api
    except ImportError:
        _skip("Playwright for Python is not installed (pip install playwright): the page is not tested in a browser")
    exe = _chromium()
    if exe is None:
        _skip("no Chromium binary (apt-get install chromium, or set EMBER_CHROMIUM): the page is not tested in a "
              "browser")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        except Exception as e:  # noqa: BLE001 - a broken install: say so, do not fail the suite
            _skip(f"Chromium at {exe} does not start under Playwright: {e}")
        yield b
        b.close()


@pytest.fixture
def page(browser):
    pg = browser.new_page(viewport={"width": 1000, "height": 380})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    pg.close()


def node_text(pg, label, which):
    """The value ('v') or gradient ('g') line of the node whose bold name is ``label``."""
    return pg.evaluate("""([label, which]) => {
        for (const g of document.querySelectorAll('g.node')) {
            if (g.querySelector('.nm').textContent === label) return document.getElementById(which + g.dataset.i).textContent;
        }
        return null; }""", [label, which])


def seed_page(tmp_path):
    x = ember.tensor([2.0], requires_grad=True)
    with viz.record():
        y = x ** 2 + 3 * x
    return viz.to_html(y, str(tmp_path / "seed.html"))


def test_seed_example_steps_values_keyboard_accumulation(page, tmp_path):
    page.goto(Path(seed_page(tmp_path)).as_uri())
    assert page.inner_text("#phase") == "Phase: Idle"
    assert node_text(page, "x", "v") == "= 2" and node_text(page, "y", "v") == ""
    for _ in range(3):   # the forward pass with the buttons
        page.click("#next")
    assert page.inner_text("#phase") == "Phase: Forward (3/3)"
    assert node_text(page, "y", "v") == "= 10" and "y = 10" in page.inner_text("#status")
    assert node_text(page, "x", "g") == ""
    page.click("#prev")
    assert node_text(page, "y", "v") == "" and page.inner_text("#phase") == "Phase: Forward (2/3)"
    page.keyboard.press("ArrowRight")
    total = page.evaluate("window.emberViz.total")
    for _ in range(total - 3):   # the backward pass with the keyboard
        page.keyboard.press("ArrowRight")
    assert page.inner_text("#phase") == "Phase: Done"
    assert node_text(page, "x", "g") == "x.grad = 7"
    status = page.inner_text("#status")
    assert "x.grad = 7" in status and ("4 + 3 = 7" in status or "3 + 4 = 7" in status)
    page.keyboard.press("ArrowRight")   # past the end: stays
    assert page.evaluate("window.emberViz.step") == total
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "viz-seed-backward.png"
    page.click("g.node.leaf")   # details of x
    details = page.inner_text("#details")
    assert "leaf tensor" in details and "4 + 3 = 7" in details.replace("3 + 4", "4 + 3")
    page.screenshot(path=str(shot))
    print(f"\nscreenshot: {shot}")
    if os.environ.get("EMBER_WRITE_DOCS") == "1":
        DOCS_PNG.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(DOCS_PNG))
    page.keyboard.press("Home")
    assert page.evaluate("window.emberViz.step") == 0 and node_text(page, "y", "v") == ""
    # play / pause with the space bar
    page.keyboard.press(" ")
    page.wait_for_function("window.emberViz.step >= 2", timeout=5000)
    page.keyboard.press(" ")
    stopped = page.evaluate("window.emberViz.step")
    page.wait_for_timeout(900)
    assert page.evaluate("window.emberViz.step") == stopped
    # the accumulation mode: backward again and again without zero_grad
    page.click("#mode-acc")
    assert node_text(page, "x", "g") == "x.grad = None"
    seen = []
    for _ in range(3):
        page.click("#next")
        seen.append(node_text(page, "x", "g"))
    assert seen == ["x.grad = 7", "x.grad = 14", "x.grad = 21"]
    assert "x.grad = 21" in page.inner_text("#status")
    page.screenshot(path=str(ARTIFACTS / "viz-seed-accumulation.png"))
    page.click("#reset")
    assert node_text(page, "x", "g") == "x.grad = None"
    assert page.errors == []


def test_page_for_300_nodes_renders_fast(page, tmp_path):
    ember.manual_seed(0)
    x = ember.randn(4, requires_grad=True)
    w = ember.randn(4, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    with viz.record():
        h = x
        for _ in range(99):
            h = ember.tanh(h * w + b)
        loss = h.sum()
    path = viz.to_html(loss, str(tmp_path / "big.html"))
    t0 = time.perf_counter()
    page.goto(Path(path).as_uri())
    page.wait_for_function("window.emberViz !== undefined")
    load = time.perf_counter() - t0
    assert page.evaluate("document.querySelectorAll('g.node').length") == 301
    assert load < 2.0, f"the 300-node page took {load:.2f} s to load"
    per_step = page.evaluate("""() => {
        const t = performance.now(), next = document.getElementById('next');
        for (let i = 0; i < 200; i++) next.click();
        return (performance.now() - t) / 200; }""")
    assert per_step < 20, f"{per_step:.1f} ms per step"
    page.keyboard.press("End")
    assert page.inner_text("#phase") == "Phase: Done"
    assert node_text(page, "x", "g").startswith("x.grad = [")
    print(f"\n300-node page: loaded in {load * 1000:.0f} ms, {per_step:.2f} ms per step")
    assert page.errors == []


def test_multi_output_node_gradients_per_output(page, tmp_path):
    x = ember.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    with viz.record():
        a, b = x.split(2)
        y = (b * 10).sum() + a.sum()
    page.goto(Path(viz.to_html(y, str(tmp_path / "split.html"))).as_uri())
    total = page.evaluate("window.emberViz.total")
    status = None
    for _ in range(total):
        page.keyboard.press("ArrowRight")
        if "SplitBackward0 receives" in page.inner_text("#status"):
            status = page.inner_text("#status")
            break
    assert status is not None
    # each output's gradient on its own: nothing sums flows that go to different outputs
    assert "output 0: [1., 1.]" in status and "output 1: [10., 10.]" in status and " + " not in status
    page.keyboard.press("End")
    assert node_text(page, "x", "g").startswith("x.grad = [")
    assert page.errors == []


def test_names_with_markup_do_not_break_the_page(page, tmp_path):
    x = ember.tensor([2.0], requires_grad=True)
    z = ember.tensor([1.0], requires_grad=True)
    y = x * 3 + z.detach()
    nasty = "<!--<script>"
    path = viz.to_html(y, str(tmp_path / "esc.html"), inputs={nasty: x, "</script><b>z": z})
    page.goto(Path(path).as_uri())
    page.wait_for_function("window.emberViz !== undefined", timeout=5000)
    assert page.evaluate("document.querySelectorAll('g.node').length") == 3
    page.keyboard.press("End")
    assert node_text(page, nasty, "g") == f"{nasty}.grad = 3"[:19] + "\u2026"
    assert "</script><b>z" in page.inner_text("#extra")
    assert page.errors == []
