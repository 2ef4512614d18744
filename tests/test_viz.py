"""ember.viz (make_dot, to_html, record, the CLI) and autograd.graph.summary.

The browser half (the page stepped through in headless Chromium) is tests/test_viz_browser.py."""
import collections
import json
import re
import shutil

import pytest

import ember
import ember.viz as viz
from ember.autograd.graph import summary

# ----- reading DOT back: structure, not layout ------------------------------------------------------

_NODE = re.compile(r'^\s*(\w+) \[label=("(?:[^"\\]|\\.)*"|[^\s\]]+)([^\]]*)\]', re.M)
_EDGE = re.compile(r'^\s*(\w+) -> (\w+)', re.M)


def parse_dot(src):
    """({node id: (label, fillcolor or None)}, [(src, dst)]); a node declared twice keeps its last
    declaration, as Graphviz does. Labels may hold real newlines (the graphviz package writes them)."""
    nodes = {}
    for i, label, rest in _NODE.findall(src):
        fill = re.search(r"fillcolor=(\w+)", rest)
        nodes[i] = (label.strip('"').replace("\\n", "\n"), fill.group(1) if fill else None)
    return nodes, _EDGE.findall(src)


def canon(src, colours=True):
    """Multisets of node kinds and of edges between kinds: an op by its name, a tensor by colour and
    shape (ids and layout left out)."""
    nodes, edges = parse_dot(src)

    def kind(i):
        label, fill = nodes[i]
        if fill is None:
            return label.split("\n")[0]
        shape = re.search(r"\([\d, ]*\)", label).group(0)
        return (fill if colours else "tensor") + shape

    return collections.Counter(map(kind, nodes)), collections.Counter((kind(a), kind(b)) for a, b in edges)


def ops(src):
    return collections.Counter({k: n for k, n in canon(src)[0].items() if "(" not in k})


# ----- the seeds' programs, for ember and torch alike --------------------------------------------

def seed_poly(lib):
    x = lib.tensor([2.0], requires_grad=True)
    return x ** 2 + 3 * x


def seed_chain(lib):
    x = lib.tensor([2.0], requires_grad=True)
    y = lib.tensor([3.0], requires_grad=True)
    return (x + y) ** 2


def seed_weights(lib):
    lib.manual_seed(0)
    a = lib.randn((3, 3), requires_grad=True)
    w1, w2, w3, w4 = (lib.randn((3, 3), requires_grad=True) for _ in range(4))
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    return 10 - d


def test_dot_seed_poly_structure():
    src = viz.make_dot(seed_poly(ember)).source
    nodes, edges = canon(src)
    assert ops(src) == {"AddBackward0": 1, "PowBackward0": 1, "MulBackward0": 1, "AccumulateGrad": 1}
    assert nodes["lightblue(1)"] == 1 and nodes["darkolivegreen1(1)"] == 1
    assert edges == {("lightblue(1)", "AccumulateGrad"): 1, ("AccumulateGrad", "PowBackward0"): 1,
                     ("AccumulateGrad", "MulBackward0"): 1, ("PowBackward0", "AddBackward0"): 1,
                     ("MulBackward0", "AddBackward0"): 1, ("AddBackward0", "darkolivegreen1(1)"): 1}


def test_dot_seed_chain_and_weights_structure():
    _, edges = canon(viz.make_dot(seed_chain(ember)).source)
    assert edges[("AccumulateGrad", "AddBackward0")] == 2 and edges[("AddBackward0", "PowBackward0")] == 1
    src = viz.make_dot(seed_weights(ember)).source
    assert ops(src) == {"AccumulateGrad": 5, "MulBackward0": 4, "AddBackward0": 1, "RsubBackward1": 1}
    nodes, edges = canon(src)
    assert nodes["lightblue(3, 3)"] == 5
    assert edges[("AccumulateGrad", "MulBackward0")] == 6   # a feeds two products, each w one
    assert edges[("MulBackward0", "MulBackward0")] == 2     # w3*b and w4*c read b and c


def test_dot_leaves_named_after_variables_and_params():
    x = ember.tensor([2.0], requires_grad=True)
    w = ember.ones(2, requires_grad=True)
    y = (x * w).sum()
    labels = [lab for lab, _ in parse_dot(viz.make_dot(y).source)[0].values()]
    assert any(lab.startswith("x\n") for lab in labels) and any(lab.startswith("w\n") for lab in labels)
    assert any(lab.startswith("y\n") for lab in labels)
    labels = [lab for lab, _ in parse_dot(viz.make_dot(y, params={"weight": w}).source)[0].values()]
    assert any(lab.startswith("weight\n") and "float32" in lab for lab in labels)


def view_output(lib):
    x = lib.ones(2, 3, requires_grad=True)
    return (x * 2).view(6), x.exp(), x.sum()


@pytest.mark.parametrize("prog", [seed_poly, seed_chain, seed_weights, view_output])
def test_dot_agrees_with_torchviz(prog):
    torch = pytest.importorskip("torch")
    torchviz = pytest.importorskip("torchviz")
    assert canon(viz.make_dot(prog(ember)).source) == canon(torchviz.make_dot(prog(torch)).source)


@pytest.mark.parametrize("prog", [seed_chain, seed_weights])
def test_dot_show_saved_agrees_with_torchviz(prog):
    # colours left out: torchviz colours a leaf that is also saved by whichever node it visits last
    torch = pytest.importorskip("torch")
    torchviz = pytest.importorskip("torchviz")
    ours = canon(viz.make_dot(prog(ember), show_saved=True).source, colours=False)
    theirs = canon(torchviz.make_dot(prog(torch), show_saved=True).source, colours=False)
    assert ours == theirs


def test_dot_show_saved_and_attrs():
    x = ember.tensor([2.0], requires_grad=True)
    y = x.exp() * 2
    nodes, edges = parse_dot(viz.make_dot(y, show_saved=True).source)
    saved = [lab for lab, fill in nodes.values() if fill == "orange"]
    assert any(lab.startswith("result\n") for lab in saved)   # ExpBackward0 keeps its output
    assert not [lab for lab, fill in parse_dot(viz.make_dot(y).source)[0].values() if fill == "orange"]
    x = ember.ones(2, 3, 4, 5, requires_grad=True)
    z = x.reshape(120).pow(3)
    src = viz.make_dot(z, show_attrs=True).source
    assert "exponent" in src and "self_sym_sizes" in src
    cut = viz.make_dot(z, show_attrs=True, max_attr_chars=8).source
    line = next(ln for ln in parse_dot(cut)[0].values() if ln[0].startswith("ViewBackward0"))[0]
    value = line.split("self_sym_sizes:")[1].split("\n")[0].strip()
    assert value == "(2, 3..."
    assert "exponent" not in viz.make_dot(z).source
    assert "exponent" in viz.make_dot(z, None, True).source   # torchviz's positional order


def _clusters(src):
    """{cluster label: (parent label, [node labels directly inside])} from the DOT text."""
    out, stack = {}, [None]
    nodes = parse_dot(src)[0]
    for ln in src.splitlines():
        s = ln.strip()
        if s.startswith("subgraph cluster_"):
            stack.append("?")
        elif s.startswith("label=") and stack[-1] == "?":
            name = re.match(r'label="([^"]*)"', s).group(1)
            stack[-1] = name
            out[name] = (stack[-2], [])
        elif s == "}" and len(stack) > 1:
            stack.pop()
        else:
            m = re.match(r"(\w+) \[label", s)
            if m and stack[-1] is not None:
                out[stack[-1]][1].append(nodes[m.group(1)][0].split("\n")[0])
    return out


def test_dot_group_modules_two_layer_model():
    ember.manual_seed(0)
    nn = ember.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = ember.randn(5, 3)
    with viz.record_modules(model):
        loss = model(x).sum()
    src = viz.make_dot(loss, params=dict(model.named_parameters()), group_modules=True).source
    cl = _clusters(src)
    assert set(cl) == {"0", "1", "2"}
    assert sorted(cl["0"][1]) == sorted(["0.weight", "0.bias", "AccumulateGrad", "AccumulateGrad",
                                         "AddmmBackward0", "TBackward0"])
    assert cl["1"][1] == ["ReluBackward0"]
    assert "AddmmBackward0" in cl["2"][1] and "2.weight" in cl["2"][1]
    assert "SumBackward0" not in sum((v[1] for v in cl.values()), [])   # made outside any module
    # the same structure as without boxes, and no boxes unless asked
    assert canon(src) == canon(viz.make_dot(loss, params=dict(model.named_parameters())).source)
    assert "cluster" not in viz.make_dot(loss).source
    # record_modules also names the parameters' leaves, for pictures drawn without params=
    labels = [lab.split("\n")[0] for lab, fill in parse_dot(viz.make_dot(loss).source)[0].values() if fill == "lightblue"]
    assert sorted(labels) == ["0.bias", "0.weight", "2.bias", "2.weight"]


def test_dot_group_modules_nested_and_unrecorded():
    nn = ember.nn
    model = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.Tanh()), nn.Linear(2, 1))
    with viz.record_modules(model) as rec:
        assert len(rec.handles) == 2 * 4   # a pre-hook and a hook per submodule, none on the root
        out = model(ember.randn(3, 2)).mean()
    cl = _clusters(viz.make_dot(out, group_modules=True).source)
    assert cl["0.0"][0] == "0" and cl["0.1"][0] == "0" and cl["1"][0] is None
    assert cl["0.1"][1] == ["TanhBackward0"]
    del out   # its graph held the parameters' AccumulateGrad nodes, tagged for good
    out2 = model(ember.randn(3, 2)).mean()   # after the with block: hooks removed, nothing tagged
    with pytest.warns(UserWarning, match="record_modules"):
        assert "cluster" not in viz.make_dot(out2, group_modules=True).source


def test_dot_long_chain_no_recursion():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    src = viz.make_dot(y).source
    assert ops(src)["MulBackward0"] == 3000
    s = summary(y)
    assert s.depth == 3001 and s.nodes_by_type["MulBackward0"] == 3000


def test_render_svg_png_or_say_how_to_install_graphviz(monkeypatch):
    y = seed_poly(ember)
    g = viz.make_dot(y)
    if shutil.which("dot"):
        assert b"<svg" in g.pipe(format="svg")[:400]
        assert "<svg" in g._repr_svg_()
        assert g.pipe(format="png")[:4] == b"\x89PNG"
        own = viz.DotGraph(g.source)
        assert own.pipe("png")[:4] == b"\x89PNG" and "<svg" in own._repr_html_()
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    for graph in (g, viz.DotGraph(g.source)):
        with pytest.raises(viz.GraphvizNotFound, match="apt-get install graphviz"):
            graph.pipe(format="png")


def test_make_dot_without_graphviz_package(monkeypatch):
    import builtins
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "graphviz":
            raise ImportError("no graphviz")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    g = viz.make_dot(seed_poly(ember))
    assert isinstance(g, viz.DotGraph) and g.source.startswith("digraph {")


# ----- summary ---------------------------------------------------------------------------------------

def test_summary_seed_counts_bytes_depth():
    x = ember.tensor([2.0], requires_grad=True)
    s = summary(x ** 2 + 3 * x)
    assert dict(s.nodes_by_type) == {"AddBackward0": 1, "PowBackward0": 1, "MulBackward0": 1, "AccumulateGrad": 1}
    assert s.num_nodes == 4 and s.depth == 3 and len(s.leaves) == 1
    assert s.num_saved == 1 and s.saved_bytes == 4   # PowBackward0 keeps x (one float32)
    w = ember.randn(64, 32, requires_grad=True)
    h = ember.randn(10, 64)
    out = (h @ w).exp().sum()
    s = summary(out)
    # mm keeps h (needed for w's gradient; w is not needed: h needs no grad), exp keeps its 10x32 output
    assert s.saved_bytes == 10 * 64 * 4 + 10 * 32 * 4
    assert s.largest_saved[0][:3] == (10 * 64 * 4, "MmBackward0", "self")
    assert "MmBackward0.self" in str(s)


def test_summary_spots_growing_graph():
    w = ember.randn(4, 4, requires_grad=True)
    sizes, total = [], 0
    for _ in range(12):
        loss = (w * w).sum()
        total += loss   # the leak: every iteration's graph stays reachable from total
        loss.backward()
        sizes.append(summary(total).num_nodes)
    assert all(b > a for a, b in zip(sizes, sizes[1:]))
    s = summary(total)
    assert s.add_chain >= 11 and any("total_loss += loss" in h for h in s.hints)
    fixed = 0.0
    for _ in range(12):
        loss = (w * w).sum()
        fixed += loss.item()
    assert summary(loss).hints == [] and summary(loss).num_nodes == 3


# ----- to_html: what the page is given ------------------------------------------------------------------

def page_data(path):
    text = open(path, encoding="utf-8").read()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def test_to_html_seed_steps_come_from_the_engine(tmp_path):
    x = ember.tensor([2.0], requires_grad=True)
    with viz.record():
        y = x ** 2 + 3 * x
    # the order the engine really runs, seen through hooks of our own
    order = []
    for fn in (y.grad_fn, *[e[0] for e in y.grad_fn.next_functions]):
        fn.register_prehook(lambda g, fn=fn: order.append(type(fn).__name__))
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    acc.register_prehook(lambda g: order.append("AccumulateGrad"))
    d = page_data(viz.to_html(y, str(tmp_path / "seed.html")))
    assert x.grad is None and order == []   # the page's own runs leave .grad as it was and fire no user hook
    y.backward(retain_graph=True)   # the user's own backward: the order the page showed
    x.grad = None
    names = [d["nodes"][s["n"]]["label"] for s in d["bwd"]]
    labels = [n["label"] for n in d["nodes"]]
    assert [("AccumulateGrad" if lab == "x" else lab) for lab in names] == order[:4]
    values = {n["label"]: n["value"] for n in d["nodes"]}
    assert values["x"] == "2" and values["PowBackward0"] == "4" and values["MulBackward0"] == "6"
    assert values["AddBackward0"] == "10" and "y" in [n["var"] for n in d["nodes"]]
    assert [labels[i] for i in d["fwd"]] == ["PowBackward0", "MulBackward0", "AddBackward0"]
    leaf = next(s for s in d["bwd"] if "leafgrad" in s)
    assert leaf["grad"] == "7" and leaf["leafgrad"] == "7"
    sent = {labels[s["n"]]: sorted(s["flows"].values()) for s in d["bwd"]}
    assert sent == {"AddBackward0": ["1", "1"], "PowBackward0": ["4"], "MulBackward0": ["3"], "x": []}
    xi = labels.index("x")
    assert [a[str(xi)] for a in d["acc"]] == ["7", "14", "21"]


def test_to_html_keeps_users_grad_and_runs_without_record(tmp_path):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.grad = ember.tensor([5.0, 5.0])
    kept = x.grad
    y = (x * x).sum()
    d = page_data(viz.to_html(y, str(tmp_path / "p.html")))
    assert x.grad is kept and kept.tolist() == [5.0, 5.0]
    mul = next(n for n in d["nodes"] if n["label"] == "MulBackward0")
    assert "value not recorded" in mul["value"] and mul["shape"] == [2]   # shape known from the backward
    xi = next(n["id"] for n in d["nodes"] if n["leaf"])
    assert d["acc"][2][str(xi)] == "[ 6., 12.]"
    y.backward()
    with pytest.raises(RuntimeError, match="record"):
        viz.to_html(y, str(tmp_path / "q.html"))


def test_to_html_marks_inputs_without_grad(tmp_path):
    x = ember.tensor([1.0], requires_grad=True)
    z = ember.tensor([3.0], requires_grad=True)
    y = x * z.detach()
    d = page_data(viz.to_html(y, str(tmp_path / "p.html"), inputs={"x": x, "z": z}))
    assert [e["label"] for e in d["extra"]] == ["z"]
    why = d["extra"][0]["why"]
    assert "detach" in why and why.startswith("z: ") and "y does not depend on z" in why


def test_cli_records_the_scripts_last_backward(tmp_path, capsys):
    from ember.viz.__main__ import main
    script = tmp_path / "tiny.py"
    script.write_text("import ember as torch\n"
                      "x = torch.tensor([2.0], requires_grad=True)\n"
                      "for step in range(2):\n"
                      "    loss = x ** 2 + 3 * x\n"
                      "    loss.backward()\n"
                      "print('grad', x.grad.item())\n")
    out = tmp_path / "graph.html"
    assert main([str(script), "--out", str(out)]) == 0
    assert "grad 14.0" in capsys.readouterr().out
    d = page_data(out)
    values = {n["label"]: n["value"] for n in d["nodes"]}
    assert values["x"] == "2" and values["PowBackward0"] == "4" and values["AddBackward0"] == "10"
    leaf = next(s for s in d["bwd"] if "leafgrad" in s)
    assert leaf["grad"] == "7" and leaf["leafgrad"] == "14"   # the second backward, accumulated
    assert "loss" in [n["var"] for n in d["nodes"]] and d["acc"] == []
    empty = tmp_path / "none.py"
    empty.write_text("x = 1\n")
    assert main([str(empty), "--out", str(tmp_path / "n.html")]) == 1


def test_to_html_several_outputs(tmp_path):
    x = ember.tensor([1.0], requires_grad=True)
    a, b = x * 2, x * 3
    d = page_data(viz.to_html((a, b), str(tmp_path / "two.html"), inputs=[x]))
    assert sum(n["out"] for n in d["nodes"]) == 2 and d["extra"] == []
    leaf = next(s for s in d["bwd"] if "leafgrad" in s)
    assert leaf["leafgrad"] == "5"
    with pytest.raises(ValueError, match="no grad_fn"):
        viz.to_html(x, str(tmp_path / "leaf.html"))


# ----- the page's own backward runs leave the user's program alone (issue 9) ---------------------------

def test_to_html_own_runs_fire_no_user_hook_and_change_nothing(tmp_path):
    w = ember.nn.Parameter(ember.tensor([1.0]))
    opt = ember.optim.SGD([w], lr=0.1)
    h_post = w.register_post_accumulate_grad_hook(lambda p: (opt.step(), opt.zero_grad()))
    calls = []
    h = w * 3
    h.retain_grad()
    h.register_hook(lambda g: calls.append("h"))
    w.register_hook(lambda g: calls.append("w"))
    y = (h * h).sum()
    y.grad_fn.register_prehook(lambda g: calls.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    n_pre, n_post = len(y.grad_fn._pre_hooks), len(y.grad_fn._hooks)
    for _ in range(3):
        d = page_data(viz.to_html(y, str(tmp_path / "b.html")))
    assert w.item() == 1.0 and calls == [] and w.grad is None and h.grad is None
    # no recorder hook left behind, and the user's own hooks are still in place and still fire
    assert (len(y.grad_fn._pre_hooks), len(y.grad_fn._hooks)) == (n_pre, n_post)
    wi = next(n["id"] for n in d["nodes"] if n["leaf"])
    assert [a[str(wi)] for a in d["acc"]] == ["18", "36", "54"]
    h_post.remove()
    y.backward()
    assert sorted(calls) == ["h", "post", "pre", "w"] and h.grad.item() == 6.0 and w.grad.item() == 18.0


def test_to_html_twice_inside_record_shows_the_same_page(tmp_path):
    x = ember.tensor([2.0], requires_grad=True)
    with viz.record():
        y = x ** 2 + 3 * x
        first = page_data(viz.to_html(y, str(tmp_path / "1.html")))
        second = page_data(viz.to_html(y, str(tmp_path / "2.html")))
    leaf = [next(s for s in d["bwd"] if "leafgrad" in s)["leafgrad"] for d in (first, second)]
    assert leaf == ["7", "7"] and first["bwd"] == second["bwd"] and first["acc"] == second["acc"]


def test_to_html_multi_output_nodes_get_one_gradient_per_output(tmp_path):
    x = ember.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)

    class Two(ember.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2, t * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    with viz.record():
        a, b = x.split(2)
        y = (b * 10).sum() + a.sum()
        p, q = Two.apply(x)
        z = (p + q * 2).sum()
    d = page_data(viz.to_html(y, str(tmp_path / "s.html")))
    split = next(n for n in d["nodes"] if n["label"] == "SplitBackward0")
    assert split["value"] == "output 0: [1., 2.]\noutput 1: [3., 4.]"
    st = next(s for s in d["bwd"] if s["n"] == split["id"])
    assert st["grads"] == ["[1., 1.]", "[10., 10.]"]
    into = sorted((e["slot"], d["nodes"][e["to"]]["label"]) for e in d["edges"] if e["from"] == split["id"])
    assert into == [(0, "SumBackward0"), (1, "MulBackward0")]
    d = page_data(viz.to_html((b, a), str(tmp_path / "o.html")))   # the node's outputs are the page's outputs
    assert next(n for n in d["nodes"] if n["label"] == "SplitBackward0")["value"] == split["value"]
    d = page_data(viz.to_html(z, str(tmp_path / "f.html")))
    two = next(n for n in d["nodes"] if n["label"] == "TwoBackward")
    assert two["value"] == "output 0: [2., 4., 6., 8.]\noutput 1: [ 3.,  6.,  9., 12.]"
    assert next(s for s in d["bwd"] if s["n"] == two["id"])["grads"] == ["[1., 1., 1., 1.]", "[2., 2., 2., 2.]"]


def test_to_html_leaf_value_is_the_one_the_forward_read(tmp_path):
    w = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = ember.optim.SGD([w], lr=0.5)
    with viz.record():
        loss = (w * w).sum()
        loss.backward(retain_graph=True)
        opt.step()
        loss2 = (w * 3).sum()
    assert w.tolist() == [0.0, 0.0]
    vals = [next(n["value"] for n in page_data(viz.to_html(t, str(tmp_path / "p.html")))["nodes"] if n["leaf"])
            for t in (loss, loss2)]
    assert vals == ["[1., 2.]", "[0., 0.]"]


def test_to_html_non_scalar_accumulation_uses_the_recorded_gradient(tmp_path):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with viz.record():
        y = x * 3
        y.backward(ember.tensor([1.0, 10.0]), retain_graph=True)
    x.grad = None
    d = page_data(viz.to_html(y, str(tmp_path / "n.html")))
    xi = next(n["id"] for n in d["nodes"] if n["leaf"])
    leaf = next(s for s in d["bwd"] if "leafgrad" in s)
    assert leaf["leafgrad"] == "[ 3., 30.]" and d["acc"][0][str(xi)] == leaf["leafgrad"]


def test_to_html_names_cannot_break_the_page(tmp_path):
    x = ember.tensor([2.0], requires_grad=True)
    y = x * 3
    nasty = "<!--<script></script>&\u2028"
    text = open(viz.to_html(y, str(tmp_path / "e.html"), inputs={nasty: x})).read()
    script = re.search(r'<script id="data" type="application/json">(.*?)</script>', text, re.S).group(1)
    assert "<" not in script and ">" not in script and "&" not in script
    assert nasty in [n["label"] for n in json.loads(script)["nodes"]]


def test_caller_names_leave_class_bodies_and_exec_locals_alone():
    ns = {"ember": ember, "viz": viz}
    loc = {}
    exec("x = ember.tensor([1.0], requires_grad=True)\n"
         "import tempfile, os\n"
         "viz.to_html(x * 2, os.path.join(tempfile.mkdtemp(), 'a.html'))\n"
         "after = x\n", ns, loc)
    assert "x" in loc and loc["after"] is loc["x"]

    class Holder:
        import tempfile as _tf
        import os as _os
        t = ember.tensor([1.0], requires_grad=True)
        viz.to_html(t * 2, _os.path.join(_tf.mkdtemp(), "b.html"))
        kept = t
    assert Holder.kept is Holder.t


@pytest.mark.parametrize("tail, code", [("import sys\nsys.exit(main())\n", 0), ("main()\nimport sys\nsys.exit(3)\n", 3),
                                        ("main()\nraise ValueError('boom after backward')\n", None)])
def test_cli_writes_the_page_when_the_script_exits_or_raises(tmp_path, tail, code):
    from ember.viz.__main__ import main
    script = tmp_path / "s.py"
    script.write_text("import ember as torch\n"
                      "def main():\n"
                      "    x = torch.tensor([2.0], requires_grad=True)\n"
                      "    (x ** 2 + 3 * x).backward()\n"
                      "    return 0\n" + tail)
    out = tmp_path / "g.html"
    if code is None:
        with pytest.raises(ValueError, match="boom"):
            main([str(script), "--out", str(out)])
    else:
        assert main([str(script), "--out", str(out)]) == code
    leaf = next(s for s in page_data(out)["bwd"] if "leafgrad" in s)
    assert leaf["leafgrad"] == "7"


def test_summary_running_total_either_side_and_no_false_positive():
    ember.manual_seed(0)
    m = ember.nn.Linear(4, 1)
    X, Y = ember.randn(16, 4), ember.randn(16, 1)
    total = 0
    for _ in range(10):   # no backward: each addition still carries a whole forward pass
        total = ((m(X) - Y) ** 2).mean() + total
    s = summary(total)
    assert s.add_chain >= 10 and any("total_loss += loss" in h for h in s.hints)
    a = ember.randn(3, requires_grad=True)
    t = a.sum()
    for i in range(10):   # one legitimate 10-term sum, built in one step
        t = t + (a * i).sum()
    s = summary(t)
    assert s.add_chain == 10 and s.hints == []


def test_custom_function_saved_tensors_counted_and_drawn():
    def prog(lib):
        class MyFn(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b, g * a
        lib.manual_seed(0)
        x = lib.randn(3, requires_grad=True)
        w = lib.randn(4, 3, requires_grad=True)
        return MyFn.apply(x.exp(), w).sum(), w

    out, w = prog(ember)
    s = summary(out)
    # ExpBackward0 keeps its result, which the Function saved too (counted once); w is the Function's own
    assert s.num_saved == 2 and s.saved_bytes == 3 * 4 + 12 * 4
    assert any(n == "MyFnBackward" and a == "saved_tensors[1]" for _, n, a, _, _ in s.largest_saved)
    src = viz.make_dot(out).source
    nodes, edges = canon(src)
    assert nodes["orange(3)"] == 1 and nodes["orange(4, 3)"] == 1   # as torchviz: the saved leaf turns orange
    torch = pytest.importorskip("torch")
    torchviz = pytest.importorskip("torchviz")
    for kw in ({}, {"show_saved": True}):
        assert canon(viz.make_dot(prog(ember)[0], **kw).source) == canon(torchviz.make_dot(prog(torch)[0], **kw).source)


def test_dot_graph_size_grows_with_the_graph_as_torchviz():
    x = ember.tensor([1.0], requires_grad=True)
    small = viz.make_dot(x * 2).source
    y = x
    for _ in range(100):
        y = y * 1.0
    big = viz.make_dot(y).source

    def size(src):
        return re.search(r'size="([^"]+)"', src).group(1)
    assert size(small) == "12,12"
    torch = pytest.importorskip("torch")
    torchviz = pytest.importorskip("torchviz")
    t = torch.tensor([1.0], requires_grad=True)
    u = t
    for _ in range(100):
        u = u * 1.0
    assert size(big) == size(torchviz.make_dot(u).source) != "12,12"


def test_dot_group_modules_leaves_the_input_outside():
    nn = ember.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = ember.randn(5, 3, requires_grad=True)
    with viz.record_modules(model):
        loss = model(x).sum()
    cl = _clusters(viz.make_dot(loss, params=dict(model.named_parameters()), group_modules=True).source)
    assert sorted(cl["0"][1]) == sorted(["0.weight", "0.bias", "AccumulateGrad", "AccumulateGrad",
                                         "AddmmBackward0", "TBackward0"])
    assert "x" not in sum((v[1] for v in cl.values()), [])
