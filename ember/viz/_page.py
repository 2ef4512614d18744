"""The style and script inlined in ``to_html``'s page (no network: nothing is fetched)."""

CSS = """
body{font:14px system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header,nav{padding:6px 12px;background:#fff;border-bottom:1px solid #ddd;display:flex;gap:8px;align-items:center}
header .modes{margin-left:auto}
button{font:inherit;padding:3px 10px;border:1px solid #bbb;border-radius:5px;background:#f4f4f4;cursor:pointer}
button.on{background:#2b6cb0;color:#fff;border-color:#2b6cb0}
button:disabled{opacity:.45;cursor:default}
#phase{margin-left:12px;font-weight:600}
main{display:flex;height:calc(100vh - 86px)}
#canvas{flex:1;overflow:auto;background:#fff}
aside{width:340px;overflow:auto;padding:10px;border-left:1px solid #ddd;font-size:13px}
#status{padding:8px;background:#eef5ff;border-radius:6px;margin-bottom:10px;min-height:2.5em;white-space:pre-wrap}
#details table{border-collapse:collapse}#details td{padding:1px 6px;vertical-align:top}
pre{white-space:pre-wrap;margin:2px 0;font-size:12px}
.node rect{fill:#e8e8e8;stroke:#999;stroke-width:1.2}
.node.leaf rect{fill:#cfe3ff}.node.out rect{fill:#d8f0b0}
.node.pending{opacity:.28}.node.cur rect{stroke:#d9480f;stroke-width:3}
.node.sel rect{stroke-dasharray:4 2;stroke:#2b6cb0;stroke-width:2.5}
.node{cursor:pointer}.node text{font:12px ui-monospace,monospace}
.node .nm{font-weight:700}.node .opn{fill:#666;font-size:10px}
.node .grad{fill:#c2255c}
.edge{fill:none;stroke:#999;stroke-width:1.4}.edge.pending{opacity:.25}
.edge.done{stroke:#e599b0}.edge.flow{stroke:#c2255c;stroke-width:3}
.eg{font:11px ui-monospace,monospace;fill:#c2255c;text-anchor:middle}
.why{background:#fff4e6;border-radius:6px;padding:6px;margin-top:8px}
"""

JS = r"""
(function(){
'use strict';
const D = JSON.parse(document.getElementById('data').textContent);
const N = D.nodes, E = D.edges, nf = D.fwd.length, nb = D.bwd.length;
const $ = id => document.getElementById(id);
const nEl = N.map(n => $('n' + n.id)), vEl = N.map(n => $('v' + n.id)), gEl = N.map(n => $('g' + n.id));
const eEl = E.map((e, i) => $('e' + i)), egEl = E.map((e, i) => $('eg' + i));
const fwdAt = N.map(() => 0); D.fwd.forEach((n, i) => { fwdAt[n] = i + 1; });
const bwdAt = N.map(() => Infinity);
D.bwd.forEach((st, i) => { if (bwdAt[st.n] === Infinity) bwdAt[st.n] = nf + i + 1; });
const flowAt = {};
D.bwd.forEach((st, i) => { for (const e in st.flows) flowAt[e] = [nf + i + 1, st.flows[e]]; });
const ins = N.map(() => []), outs = N.map(() => []);
E.forEach((e, i) => { ins[e.to].push(i); outs[e.from].push(i); });
let mode = 'steps', s = 0, timer = null, sel = null;
const name = n => n.leaf ? n.label : (n.var || n.label);
// boxes and edges show the start of long texts; the status line and the details show them whole
const clip = (t, k) => t.length > k ? t.slice(0, k - 1) + '\u2026' : t;
const total = () => mode === 'steps' ? nf + nb : D.acc.length;
const bstep = i => D.bwd[bwdAt[i] - nf - 1];

// the gradients that reached output ``slot`` of node i by step ``upto`` (only flows into the same output add up)
function contributions(i, upto, slot) {
  return outs[i].filter(e => (E[e].slot || 0) === slot && flowAt[e] && flowAt[e][0] <= upto).map(e => flowAt[e][1]);
}
// "a + b = c" for one output; for a node with several outputs, one such line per output
function received(i, st, upto) {
  const sum = (parts, g) => (parts.length > 1 ? parts.join(' + ') + ' = ' : '') + g;
  if (!st.grads) return sum(contributions(i, upto, 0), st.grad);
  return st.grads.map((g, k) => '\n  output ' + k + ': ' + sum(contributions(i, upto, k), g)).join('');
}
function gradText(i) {
  if (bwdAt[i] > s) return '';
  const st = bstep(i);
  return N[i].leaf ? name(N[i]) + '.grad = ' + (st.leafgrad === undefined ? st.grad : st.leafgrad) : 'grad ' + st.grad;
}
function renderSteps() {
  const cur = s === 0 ? -1 : (s <= nf ? D.fwd[s - 1] : D.bwd[s - nf - 1].n);
  for (let i = 0; i < N.length; i++) {
    const shown = fwdAt[i] <= s;
    nEl[i].classList.toggle('pending', !shown);
    nEl[i].classList.toggle('cur', i === cur);
    vEl[i].textContent = shown ? clip('= ' + N[i].value, 20) : '';
    gEl[i].textContent = clip(gradText(i), 20);
  }
  for (let i = 0; i < E.length; i++) {
    const f = flowAt[i], on = !!f && f[0] <= s;
    egEl[i].textContent = on ? clip(f[1], 14) : '';
    eEl[i].classList.toggle('done', on);
    eEl[i].classList.toggle('flow', !!f && f[0] === s);
    eEl[i].classList.toggle('pending', fwdAt[E[i].to] > s);
  }
  let phase, msg;
  if (s === 0) { phase = 'Idle'; msg = 'Press Next (\u2192) to run the forward pass: each op computes its value and records its grad_fn.'; }
  else if (s <= nf) {
    const n = N[cur];
    phase = 'Forward (' + s + '/' + nf + ')';
    msg = name(n) + ' = ' + n.value + '\ncomputed by ' + n.label + ' from ' + (ins[cur].map(e => name(N[E[e].from])).join(', ') || 'constants');
    if (s === nf) msg += '\nForward done. Next: backward, in the engine\'s order.';
  } else {
    const st = D.bwd[s - nf - 1], n = N[st.n];
    phase = 'Backward (' + (s - nf) + '/' + nb + ')';
    msg = (n.leaf ? 'AccumulateGrad (' + name(n) + ')' : n.label) + (st.grads ? ' receives grads' : ' receives grad ') + received(st.n, st, s);
    if (n.leaf) msg += '\n' + name(n) + '.grad = ' + (st.leafgrad === undefined ? st.grad : st.leafgrad);
    else msg += '\nsends ' + Object.keys(st.flows).map(e => st.flows[e] + ' \u2192 ' + name(N[E[e].from])).join(', ');
    if (s === nf + nb) { phase = 'Done'; msg += '\nBackward done.'; }
  }
  $('phase').textContent = 'Phase: ' + phase;
  $('status').textContent = msg;
  if (cur >= 0 && nEl[cur].scrollIntoView) nEl[cur].scrollIntoView({block: 'nearest', inline: 'nearest'});
}
function renderAcc() {
  const leaves = N.map((n, i) => i).filter(i => N[i].leaf);
  for (let i = 0; i < N.length; i++) {
    nEl[i].classList.remove('pending'); nEl[i].classList.toggle('cur', N[i].leaf && s > 0);
    vEl[i].textContent = clip('= ' + N[i].value, 20);
    gEl[i].textContent = N[i].leaf ? clip(name(N[i]) + '.grad = ' + (s === 0 ? 'None' : D.acc[s - 1][i]), 20) : '';
  }
  for (let i = 0; i < E.length; i++) { egEl[i].textContent = ''; eEl[i].classList.remove('done', 'flow', 'pending'); }
  $('phase').textContent = 'Phase: Accumulation (' + s + '/' + D.acc.length + ')';
  let msg = !D.acc.length ? (D.note || 'No accumulation runs recorded.') : s === 0
    ? 'Gradients reset: .grad is None. Each Next runs backward() again without zero_grad().'
    : 'backward() #' + s + ' without zero_grad(): ' + leaves.map(i => name(N[i]) + '.grad = ' + D.acc[s - 1][i]).join(', ')
      + (s > 1 ? '\nThe gradients add up: call optimizer.zero_grad() (or x.grad = None) between steps.' : '');
  $('status').textContent = msg;
}
function render() {
  if (mode === 'steps') renderSteps(); else renderAcc();
  $('prev').disabled = s === 0; $('next').disabled = s >= total();
  if (sel !== null) details(sel);
}
function go(k) { s = Math.max(0, Math.min(total(), k)); render(); }
function stop() { if (timer) { clearInterval(timer); timer = null; } $('play').textContent = '\u25B6 Play'; }
function play() {
  if (timer) { stop(); return; }
  if (s >= total()) s = 0;
  $('play').textContent = '\u23F8 Pause';
  timer = setInterval(() => { if (s >= total()) stop(); else go(s + 1); }, 700);
}
function esc(t) { return String(t).replace(/[&<>"]/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c])); }
function details(i) {
  const n = N[i], rows = [];
  rows.push(['node', n.leaf ? 'leaf tensor (AccumulateGrad)' : n.label]);
  if (!n.leaf && n.var) rows.push(['tensor', n.var]);
  if (n.module) rows.push(['module', n.module]);
  rows.push(['inputs', ins[i].map(e => name(N[E[e].from])).join(', ') || '\u2014']);
  rows.push(['value', n.value]);
  n.saved.forEach(sv => rows.push(['saved ' + sv[0], sv[1]]));
  if (bwdAt[i] !== Infinity) {
    const st = bstep(i);
    rows.push(['gradient', received(i, st, Infinity).replace(/^\n/, '')]);
    if (n.leaf) rows.push(['.grad', st.leafgrad === undefined ? st.grad : st.leafgrad]);
  }
  $('details').innerHTML = '<b>' + esc(name(n)) + '</b><table>' +
    rows.map(r => '<tr><td>' + esc(r[0]) + '</td><td><pre>' + esc(r[1]) + '</pre></td></tr>').join('') + '</table>';
}
function setMode(m) {
  stop(); mode = m; s = 0;
  $('mode-steps').classList.toggle('on', m === 'steps'); $('mode-acc').classList.toggle('on', m === 'acc');
  render();
}
$('next').onclick = () => { stop(); go(s + 1); };
$('prev').onclick = () => { stop(); go(s - 1); };
$('reset').onclick = () => { stop(); go(0); };
$('play').onclick = play;
$('mode-steps').onclick = () => setMode('steps');
$('mode-acc').onclick = () => setMode('acc');
document.querySelectorAll('button').forEach(b => b.addEventListener('mouseup', () => b.blur()));
nEl.forEach((g, i) => g.addEventListener('click', () => {
  if (sel !== null) nEl[sel].classList.remove('sel');
  sel = i; g.classList.add('sel'); details(i);
}));
document.addEventListener('keydown', ev => {
  if (ev.key === 'ArrowRight') { stop(); go(s + 1); }
  else if (ev.key === 'ArrowLeft') { stop(); go(s - 1); }
  else if (ev.key === ' ') play();
  else if (ev.key === 'Home') { stop(); go(0); }
  else if (ev.key === 'End') { stop(); go(total()); }
  else return;
  ev.preventDefault();
});
if (D.extra.length) $('extra').innerHTML = D.extra.map(x => '<div class="why"><b>' + esc(x.label) +
  '</b>: .grad stays None<pre>' + esc(x.why) + '</pre></div>').join('');
if (D.note) $('extra').insertAdjacentHTML('beforeend', '<div class="why">' + esc(D.note) + '</div>');
render();
window.emberViz = {get step() { return s; }, get total() { return total(); }, get mode() { return mode; }};
})();
"""
