"""What chapter 6's checks are made of: model sizes, meshes, and what is compared.

The checking side of :mod:`solutions.scaling`, which registers the exercises;
this module holds none. The formula exercises take plain numbers (a
:class:`jaxcourse.scaling.Size`, a layout name, mesh sizes) and need no
device. The two exercises about arrays on devices take a two-axis ``Auto``
mesh of ``data × model`` devices built by :func:`grid_mesh`:

* ``fsdp_specs`` is run by :func:`placed_shards`, which places the learner's
  specs on a mesh and reports the block of every weight each device holds;
* ``tp_mlp`` is compared on its values, its layout, and the collectives XLA
  compiled into it (:func:`compiled_kinds`, counting
  :func:`jaxcourse.scaling.compiled_collectives` by kind), all read from one
  compiled :func:`program` per mesh.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import PartitionSpec as P

from exercise_kit.scaling_meshes import MESHES  # noqa: F401  (the notebook takes it from here)
from exercise_kit.shard_map_checks import has_shard_map, place, shard_map_used
from jaxcourse import scaling
from jaxcourse.devices import mesh_devices
from jaxcourse.exercises import Case
from jaxcourse.exercises.checking.observation import Choice, Spec, choice
from jaxcourse.exercises.checking.observation import spec as as_spec
from jaxcourse.numerics import FLOAT32_ROUNDOFF, sum_tolerance

#: An input builder: ``inputs(rng)`` returns the arguments of one case.
Inputs = Callable[[np.random.Generator], tuple]
#: The remat policies, from the fewest FLOPs (and most memory) to the most.
REMAT_POLICIES = ("no remat", "checkpoint_dots", "full remat")


def grid_mesh(data: int, model: int) -> jax.sharding.Mesh:
    """Return an ``Auto`` mesh of ``data × model`` devices, axes "data" and "model"."""
    from jax.sharding import AxisType

    return jax.make_mesh((data, model), (scaling.DATA, scaling.MODEL),
                         axis_types=(AxisType.Auto, AxisType.Auto),
                         devices=mesh_devices(data * model, first_cell=8))


def numpy_params(rng: np.random.Generator, size: scaling.Size) -> list[dict]:
    """Return a parameter tree shaped like :func:`jaxcourse.scaling.init_params`'s."""
    d, f = size.width, size.hidden
    return [{"w_in": (rng.normal(size=(d, f)) / np.sqrt(d)).astype(np.float32),
             "w_out": (rng.normal(size=(f, d)) / np.sqrt(f)).astype(np.float32)}
            for _ in range(size.layers)]


# --------------------------------------------------------------------------
# fsdp_specs: the specs a learner returns, placed
# --------------------------------------------------------------------------


def _matched_specs(params: Any, specs: Any) -> list[P]:
    """Return the learner's specs as a list, one per weight; check the tree's shape."""
    if jax.tree.structure(params) != jax.tree.structure(
            specs, is_leaf=lambda s: isinstance(s, P)):
        raise ValueError("the specs must be a tree shaped exactly like params (a "
                         "list of dicts with the same keys), one PartitionSpec per "
                         "weight")
    found = jax.tree.leaves(specs, is_leaf=lambda s: isinstance(s, P))
    for spec in found:
        if not isinstance(spec, P):
            raise TypeError(f"every leaf must be a PartitionSpec, not a "
                            f"{type(spec).__name__}")
    return found


def spec_codes(function: Callable, params: Any) -> list[Spec]:
    """Runner: the specs ``function(params)`` returns, padded to each weight's rank.

    Each spec is compared as a spec, dimension by dimension, by the names of
    its mesh axes (:class:`~jaxcourse.exercises.checking.observation.Spec`):
    ``P("data")`` and ``P("data", None)`` are the same for a matrix, since
    they mean the same.
    """
    specs = _matched_specs(params, function(params))
    codes = []
    for weight, found in zip(jax.tree.leaves(params), specs, strict=True):
        if len(found) > np.ndim(weight):
            raise ValueError(f"{found} has {len(found)} entries for an array of "
                             f"shape {tuple(np.shape(weight))}: a spec names at most "
                             "one mesh axis per dimension")
        codes.append(as_spec(found, np.ndim(weight)))
    return codes


def placed_shards(data: int, model: int) -> Callable[..., list[np.ndarray]]:
    """Return a runner: place params with the learner's specs on a data × model mesh.

    The runner returns, per weight, the shape of the block device 0 holds and
    how many distinct blocks there are across the mesh (1/n of a weight on
    each device means ``n`` distinct blocks of ``1/n`` of it).
    """
    def run(function: Callable, params: Any, *rest: Any) -> list[np.ndarray]:
        mesh = grid_mesh(data, model)
        specs = _matched_specs(params, function(params, *rest))
        found = []
        for weight, spec in zip(jax.tree.leaves(params), specs, strict=True):
            placed = place(weight, mesh, spec)
            blocks = {tuple((s.start, s.stop) for s in index) for index in
                      placed.sharding.devices_indices_map(placed.shape).values()}
            found.append(np.array([*placed.sharding.shard_shape(placed.shape),
                                   len(blocks)], dtype=np.int32))
        return found

    return run


def params_inputs(size: scaling.Size) -> Inputs:
    """Build inputs: a NumPy parameter tree of ``size``."""
    def make(rng: np.random.Generator) -> tuple:
        return (numpy_params(rng, size),)

    return make


# --------------------------------------------------------------------------
# tp_mlp: values, layout, compiled collectives
# --------------------------------------------------------------------------


def tp_tolerance(width: int) -> float:
    """Return how far two float32 evaluations of one MLP block may differ.

    Each output sums ``d`` then ``4 d`` terms, so to first order it is within
    ``gamma_{5d}`` of exact, relative to ``(|x| @ |w_in|) @ |w_out|``; for the
    cases' unit-variance inputs that magnitude stays below 64 (at most 55 over
    200 seeds of both shapes), and two evaluations differ by at most twice that.
    """
    return 2 * sum_tolerance(5 * width) * 64



def mlp_inputs(data: int, model: int, batch: int, width: int) -> Inputs:
    """Build inputs for ``tp_mlp`` on a ``data × model`` mesh.

    ``x`` is split by rows over "data", ``w_in`` by columns and ``w_out`` by
    rows over "model"; the mesh comes last.
    """
    def make(rng: np.random.Generator) -> tuple:
        mesh = grid_mesh(data, model)
        hidden = 4 * width
        x = rng.normal(size=(batch, width)).astype(np.float32)
        w_in = (rng.normal(size=(width, hidden)) / np.sqrt(width)).astype(np.float32)
        w_out = (rng.normal(size=(hidden, width)) / np.sqrt(hidden)).astype(np.float32)
        return (place(x, mesh, P(scaling.DATA, None)),
                place(w_in, mesh, P(None, scaling.MODEL)),
                place(w_out, mesh, P(scaling.MODEL, None)), mesh)

    return make


def values(out: Any) -> np.ndarray:
    """Extract: the values, as a NumPy array."""
    return np.asarray(out)


def result_layout(out: Any) -> np.ndarray:
    """Extract: device 0's block shape, and how many distinct blocks there are."""
    if not isinstance(out, jax.Array):
        raise TypeError(f"got a {type(out).__name__}, not a jax.Array on the mesh: "
                        "return what jax.shard_map returns")
    blocks = {tuple((s.start, s.stop) for s in index) for index in
              out.sharding.devices_indices_map(out.shape).values()}
    return np.array([*out.sharding.shard_shape(out.shape), len(blocks)], np.int32)


@dataclass(frozen=True)
class Program:
    """``function(*arrays, mesh)`` as one program: its jaxpr and its compiled form."""

    function: Callable
    jaxpr: Any
    compiled: Any


# The last program built for each signature (mesh, shapes, placements), with
# the function it is of. One Check of tp_mlp asks four questions of the same
# arguments on the 2 × 4 mesh (values, layout, collectives, shard_map); the
# first case builds the program and the next ones read it, so a Check
# compiles two programs (2 × 4 and 1 × 4), not one per case. Called as is,
# a shard_map even compiles each operation of the block apart.
_PROGRAMS: dict[tuple, Program] = {}


def _signature(arrays: list, mesh: Any) -> tuple:
    return (mesh, tuple((a.shape, a.dtype, a.sharding) for a in arrays))


def program(function: Callable, *args: Any, fresh: bool = False) -> Program:
    """Return ``function(*arrays, mesh)`` traced and compiled by ``jax.jit``.

    The program last built for the same function object and signature is
    reused, unless ``fresh``: the first case of a Check on each mesh asks for
    a fresh one, so a function whose globals changed since an earlier Check
    (a helper cell run again) is not judged by its old program.
    """
    *arrays, mesh = args
    key = _signature(arrays, mesh)
    if fresh:
        _PROGRAMS.pop(key, None)  # nothing older survives a failed build
    held = _PROGRAMS.get(key)
    if held is None or held.function is not function:
        traced = jax.jit(lambda *a: function(*a, mesh)).trace(*arrays)
        held = Program(function, traced.jaxpr, traced.lower().compile())
        _PROGRAMS[key] = held
    return held


def compiled_call(fresh: bool = False) -> Callable[..., Any]:
    """Return a runner: ``function(*arrays, mesh)`` run as its :func:`program`.

    The values and the layout are those of the program whose collectives
    :func:`compiled_kinds` counts. A function that does not compile under
    ``jax.jit`` (NumPy on its arrays, say) is called as is instead: that call,
    what the learner would see, is judged. ``fresh``: see :func:`program`.
    """
    def run(function: Callable, *args: Any) -> Any:
        try:
            built = program(function, *args, fresh=fresh)
        except Exception:  # the plain call raises it, or passes
            return function(*args)
        return built.compiled(*args[:-1])

    return run


def compiled_kinds(function: Callable, *args: Any) -> dict[str, np.ndarray]:
    """Runner: how many collectives of each kind XLA compiles into ``function``.

    ``{"collectives": counts}``, one count per kind of
    :data:`jaxcourse.scaling.KINDS`, from
    :func:`jaxcourse.scaling.compiled_collectives` on the compiled
    :func:`program`; under that key a check says the counts in words ("1
    all-reduce, 2 all-gather") rather than as numbers.
    """
    found = scaling.compiled_collectives(program(function, *args).compiled)
    return {"collectives": np.array(
        [sum(c.kind == kind for c in found) for kind in scaling.KINDS], dtype=np.int32)}


def program_has_shard_map(function: Callable, *args: Any) -> dict[str, np.ndarray]:
    """Runner: :func:`~exercise_kit.shard_map_checks.shard_map_used`, from the program.

    The jaxpr :func:`program` traced says whether the function uses
    ``jax.shard_map``; a function that does not trace is asked as
    ``shard_map_used`` asks it.
    """
    try:
        jaxpr = program(function, *args).jaxpr
    except Exception:  # shard_map_used says what such a function does
        return shard_map_used(function, *args)
    return {"shard_map": np.array(int(has_shard_map(jaxpr.jaxpr)), np.int32)}


# --------------------------------------------------------------------------
# best_layout: an answer as numbers
# --------------------------------------------------------------------------


def layout_choice(out: Any) -> Choice:
    """Extract: ``(layout, (data, model))``, or None, compared as it reads.

    A choice, not numbers: ``('FSDP', (8, 1))`` against ``None`` is said as
    such (a list for a tuple, a NumPy int for an int read the same).
    """
    return choice(out)


# --------------------------------------------------------------------------
# Rules over many random cases
# --------------------------------------------------------------------------


def random_size(rng: np.random.Generator, widths: tuple[int, int],
                layers: tuple[int, int]) -> scaling.Size:
    """Return a random Size: 32 times a width drawn from ``widths``, ``layers``."""
    return scaling.Size(int(rng.integers(*widths)) * 32, int(rng.integers(*layers)))


def show_size(size: scaling.Size) -> str:
    """Say a size as the code that makes it."""
    return f"Size(width={size.width}, layers={size.layers})"


# --------------------------------------------------------------------------
# fsdp_specs: a rule for any tree
# --------------------------------------------------------------------------

_DIMS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


def random_trees(count: int = 8) -> Inputs:
    """Build inputs: ``count`` random parameter trees, each with its ``n``.

    Each tree is a dict of 4 to 6 float32 arrays of rank 0 to 3 whose
    dimensions are drawn from small numbers, some divisible by ``n`` and
    some not; ``n`` is 2, 4 or 8.
    """
    def build(rng: np.random.Generator) -> tuple:
        trees = []
        for _ in range(count):
            n = int(rng.choice((2, 4, 8)))
            tree = {}
            for k in range(int(rng.integers(4, 7))):
                shape = tuple(int(rng.choice(_DIMS)) for _ in range(rng.integers(4)))
                tree[f"w{k}"] = np.zeros(shape, np.float32)
            trees.append((tree, n))
        return (trees,)

    return build


def tree_rule_codes(function: Callable, trees: list[tuple[dict, int]]
                    ) -> dict[str, Spec]:
    """Runner: the spec ``function(tree, n)`` gives each random array.

    Keyed ``"n=4, (6, 16)"``: the mesh size and the array's shape, all a rule
    may look at (one key per pair; the rule gives each the same answer).
    """
    found = {}
    for tree, n in trees:
        codes = spec_codes(lambda t, n=n: function(t, n), tree)
        for code, weight in zip(codes, jax.tree.leaves(tree), strict=True):
            found[f"n={n}, {tuple(weight.shape)}"] = code
    return found


# --------------------------------------------------------------------------
# step_memory: a compiled step's memory, read
# --------------------------------------------------------------------------


def memory_inputs(size: scaling.Size, batch: int) -> Inputs:
    """Build inputs: the chapter's single-device step with Adam, and its arguments.

    The step and its optimizer are made once, on first use, so that every
    call hands over the same step (a fresh one would read as a changed input).
    """
    made: dict[str, Any] = {}

    def make(rng: np.random.Generator) -> tuple:
        if not made:
            import optax

            made["optimizer"] = optax.adam(1e-3)
            made["step"] = scaling.make_step("data parallel", made["optimizer"])
        key = jax.random.key(int(rng.integers(1 << 30)))
        params = scaling.init_params(key, size)
        x, y = scaling.make_batch(jax.random.fold_in(key, 1), size, batch)
        return (made["step"], params, made["optimizer"].init(params), x, y)

    return make


def on_copies(function: Callable, step: Callable, *arrays: Any) -> Any:
    """Runner: call ``function(step, *copies)``, so a donation cannot delete the inputs.

    An answer that runs the donating step (not needed: a compiled program's
    memory analysis needs no run) deletes what it donated; the case's own
    arrays stay whole, to be handed to the next check.
    """
    copies = jax.tree.map(lambda a: a.copy(), arrays)
    return function(step, *copies)


# --------------------------------------------------------------------------
# step_memory and remat_policy: what is compared
# --------------------------------------------------------------------------


def inputs_deleted(function: Callable, step: Callable, *arrays: Any
                   ) -> dict[str, Choice]:
    """Runner: whether ``function(step, *copies)`` deleted any of its arguments.

    Running a step compiled with ``donate_argnums`` deletes the donated
    arrays: in a notebook, the learner's own parameters and optimizer state.
    """
    copies = jax.tree.map(lambda a: a.copy(), arrays)
    function(step, *copies)
    deleted = any(leaf.is_deleted() for leaf in jax.tree.leaves(copies))
    # A yes or no, said as such ("expected False, got True"), not as 0 and 1.
    return {"deleted": choice(bool(deleted))}


#: The remat exercise's possible answers: a policy, or None.
REMAT_CHOICES = (*REMAT_POLICIES, None)


def remat_choice(out: Any) -> Choice:
    """Extract: the policy (or None), compared by its name."""
    return choice(out, REMAT_CHOICES, "REMAT_POLICIES (or None)")


# --------------------------------------------------------------------------
# The shown cases, one builder per exercise
# --------------------------------------------------------------------------

#: The chapter's large model, on which the critical batches are shown.
BIG = scaling.Size(8192, 32)


def numbers(*args: Any) -> Any:
    """Build inputs: always these arguments (a case of plain numbers)."""
    return lambda rng: args


def state_case(size: scaling.Size, layout: str, data: int, model: int) -> Case:
    """Return a state_bytes_per_device case: a layout on a mesh, for a size."""
    article = "an" if data == 8 else "a"
    return Case(f"{layout} on {article} {data} × {model} mesh, "
                f"Size(width={size.width}, layers={size.layers})",
                numbers(size, layout, data, model), dtype="any", rtol=0.0, atol=0.0)


def best_case(size: scaling.Size, batch: int, budget: float) -> Case:
    """Return a best_layout case: a size, a batch and a budget."""
    return Case(f"Size(width={size.width}, layers={size.layers}), batch {batch}, "
                f"budget {budget / 1e6:g} MB", numbers(size, batch, budget),
                extract=layout_choice, dtype="any")


def memory_case(size: scaling.Size, batch: int) -> Case:
    """Return a step_memory case: the chapter's step for a size and a batch."""
    return Case(f"Size(width={size.width}, layers={size.layers}), batch {batch}: "
                "the state, XLA's peak, and its peak with the state donated",
                memory_inputs(size, batch), runner=on_copies, dtype="any",
                rtol=0.0, atol=0.0)


def remat_case(size: scaling.Size, batch: int, budget: float) -> Case:
    """Return a remat_policy case: a size, a batch and a budget."""
    return Case(f"Size(width={size.width}, layers={size.layers}), batch {batch}, "
                f"budget {budget:,.0f} bytes", numbers(size, batch, budget),
                extract=remat_choice, dtype="any")


def specs_case(size: scaling.Size, n: int) -> Case:
    """Return an fsdp_specs case: the chapter's weights and n, each spec compared."""
    return Case(f"the specs of Size(width={size.width}, layers={size.layers})'s "
                f"weights for n = {n}, each compared dimension by dimension",
                lambda rng: (*params_inputs(size)(rng), n),
                runner=lambda f, params, n: spec_codes(lambda t: f(t, n), params))


def critical_case(hw: scaling.Hardware, layout: str, data: int, model: int,
                   size: scaling.Size = BIG, across: bool = False) -> Case:
    """Return a critical_batch case: a layout on a mesh of a published chip.

    β is :func:`jaxcourse.scaling.mesh_bandwidths`' for the mesh: inside a
    node or across whole nodes (``across``) for GPUs, from the axis's length
    on a TPU torus (a v5e axis of 8 is a line, of 16 a ring). The exercise
    takes one β, so a 2-D mesh is shown only where both axes have the same.
    """
    beta = scaling.mesh_bandwidths(hw, data, model, across_nodes=across)
    if data > 1 and model > 1 and beta["data"] != beta["model"]:
        raise ValueError(f"{data} × {model} {hw.name} has two bandwidths: "
                         f"{beta['data']:.3g} and {beta['model']:.3g}")
    bandwidth = beta["data"] if data > 1 else beta["model"]
    where = ("across whole nodes, the node's 8 network cards shared" if across
             else "in one node" if hw.switch else
             "one axis " + ("wrapping around" if bandwidth > hw.link_bandwidth
                            else "without wraparound, a line"))
    # A few products and quotients of the inputs: an answer computed in
    # float32 (with jnp) rounds each input and every operation within u; in
    # float64, far less. The nearest wrong formulas are off by a third or more.
    return Case(f"{layout} on {data} × {model} {hw.name} chips ({where}: "
                f"β = {bandwidth / 1e9:g} GB/s), "
                f"Size(width={size.width}, layers={size.layers}), bfloat16",
                numbers(layout, size, data, model, hw.flops, bandwidth, 2),
                dtype="any", rtol=2 * 12 * FLOAT32_ROUNDOFF)
