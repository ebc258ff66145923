"""Learners' answers that wrap a library function, and honest neighbours (issue #51).

Shared by ``tests/test_library_answers_panel.py`` (the check panel names the
wrapper) and ``tests/test_release_search.py`` (the grader flags it from the
notebook). Each wrapper is the library call plus the little a learner adds
around it, and gives the exercise's exact answer on every case (the panel's
test checks it); each honest answer does the exercise's reasoning itself,
with at most a helper that is no answer (``scaling.ring_bytes`` prices one
collective; the learner lists them).

Each source is a notebook's cells joined: split on ``CELL`` for the grader.
"""

from __future__ import annotations

#: Where a source's cells part.
CELL = "\n# ---\n"

#: (exercise id, the library function it wraps, the learner's cells).
WRAPPERS: list[tuple[str, str, str]] = [
    ("scaling.layout_bytes", "jaxcourse.scaling.communication.predicted_collectives",
     "from jaxcourse import scaling\n" + CELL +
     "def layout_bytes(size, layout, batch, data, model, regather=False):\n"
     "    found = scaling.predicted_collectives(size, layout, batch, data, model,\n"
     "                                          regather=regather)\n"
     "    return sum(scaling.ring_bytes(c.kind, c.nbytes, c.group) for c in found)\n"),
    ("scaling.remat_policy", "jaxcourse.scaling.memory.saved_residuals",
     "import jax\nfrom jaxcourse.scaling import init_params, loss, make_batch\n"
     "from jaxcourse.scaling import residual_bytes, saved_residuals\n" + CELL +
     "POLICIES = {'no remat': False,\n"
     "            'checkpoint_dots': jax.checkpoint_policies.checkpoint_dots,\n"
     "            'full remat': True}\n" + CELL +
     "def remat_policy(size, batch, budget_bytes):\n"
     "    params = init_params(jax.random.key(0), size)\n"
     "    x, y = make_batch(jax.random.key(1), size, batch)\n"
     "    for name, remat in POLICIES.items():\n"
     "        rows = saved_residuals(lambda p: loss(p, x, y, remat=remat), params)\n"
     "        kept = [r for r in rows if not r[1].startswith('from')]\n"
     "        if residual_bytes(kept) <= budget_bytes:\n"
     "            return name\n"
     "    return None\n"),
    ("transformer.tp_specs", "jaxcourse.transformer.layouts.param_specs",
     "from jax.sharding import PartitionSpec as P\n"
     "import jaxcourse.transformer as T\n" + CELL +
     "def tp_specs(cfg, model):\n"
     "    specs = dict(T.param_specs('TP'))\n"
     "    if cfg.heads % model:\n"
     "        specs['wq'] = specs['wo'] = P()\n"
     "    if cfg.kv_heads % model:\n"
     "        specs['wk'] = specs['wv'] = P()\n"
     "    if cfg.hidden % model:\n"
     "        specs['w_gate'] = specs['w_up'] = specs['w_down'] = P()\n"
     "    return specs\n"),
    ("transformer.activation_bytes_per_token",
     "jaxcourse.transformer.memory.residuals_per_token",
     "from jaxcourse import transformer\n" + CELL +
     "def activation_bytes_per_token(cfg, remat, precision):\n"
     "    return transformer.residuals_per_token(cfg, remat, precision)['blocks']\n"),
]

#: (exercise id, the learner's cells): the reasoning written out, named by nothing.
HONEST: list[tuple[str, str]] = [
    ("scaling.layout_bytes",
     "from jaxcourse import scaling\n" + CELL +
     "def layout_bytes(size, layout, batch, data, model, regather=False):\n"
     "    ring = scaling.ring_bytes  # the chapter's table, one collective\n"
     "    weight, weights = size.width * size.hidden * 4, 2 * size.layers\n"
     "    sent = ring('all-reduce', 4, data)\n"
     "    if layout == 'data parallel':\n"
     "        sent += weights * ring('all-reduce', weight, data)\n"
     "    if layout in ('FSDP', 'FSDP + TP'):\n"
     "        piece = weight / (model if layout == 'FSDP + TP' else 1)\n"
     "        gathers = 2 if regather else 1\n"
     "        sent += weights * (gathers * ring('all-gather', piece, data)\n"
     "                           + ring('reduce-scatter', piece, data))\n"
     "    if layout in ('tensor parallel', 'FSDP + TP'):\n"
     "        activation = batch / data * size.width * 4\n"
     "        sent += (2 * size.layers - 1) * ring('all-reduce', activation, model)\n"
     "        if layout == 'tensor parallel':\n"
     "            sent += weights * ring('all-reduce', weight / model, data)\n"
     "    return sent\n"),
    ("scaling.remat_policy",
     "REMAT_POLICIES = ('no remat', 'checkpoint_dots', 'full remat')\n" + CELL +
     "def remat_policy(size, batch, budget_bytes):\n"
     "    rows = batch * size.layers\n"
     "    for name, per_unit in zip(REMAT_POLICIES, (9, 4, 0)):\n"
     "        if rows * (size.width * 4 + size.hidden * per_unit) <= budget_bytes:\n"
     "            return name\n"
     "    return None\n"),
    ("transformer.tp_specs",
     "from jax.sharding import PartitionSpec as P\n" + CELL +
     "def tp_specs(cfg, model):\n"
     "    cols, rows = P(None, None, 'model'), P(None, 'model', None)\n"
     "    q, kv, mlp = (n % model == 0\n"
     "                  for n in (cfg.heads, cfg.kv_heads, cfg.hidden))\n"
     "    return {'wq': cols if q else P(), 'wk': cols if kv else P(),\n"
     "            'wv': cols if kv else P(), 'wo': rows if q else P(),\n"
     "            'w_gate': cols if mlp else P(), 'w_up': cols if mlp else P(),\n"
     "            'w_down': rows if mlp else P(),\n"
     "            'attn_norm': P(), 'mlp_norm': P()}\n"),
    ("transformer.activation_bytes_per_token",
     "def activation_bytes_per_token(cfg, remat, precision):\n"
     "    c = 4 if precision == 'float32' else 2\n"
     "    d, kv = cfg.d_model, cfg.kv_heads * cfg.head_dim\n"
     "    widths = {'full': d, 'names': 2 * d + cfg.hidden,\n"
     "              'dots': 3 * d + 2 * kv + 2 * cfg.hidden}\n"
     "    return cfg.layers * c * widths[remat]\n"),
]


def cells(source: str) -> list[str]:
    """Return a source's notebook cells."""
    return source.split(CELL)
