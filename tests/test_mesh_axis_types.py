"""Every mesh the course builds states its axis types.

In jax 0.10, ``jax.make_mesh`` without ``axis_types`` makes Explicit axes, so
a mesh that leaves them out silently changes how everything on it behaves
(shardings become part of the types). Chapter 4 teaches the three modes; every
mesh in the course says which one it is in, so that a reader never meets a
mesh whose mode depends on the JAX version.

The scan covers Python files and the code cells of notebooks (code written to
a script by ``%%writefile``, or held in a string, included), in ``book/``,
``exercises/``, ``solutions/``, ``jaxcourse/``, ``tests/`` and ``benchmarks/``.
A call counts when its function's last name is ``make_mesh`` or ``Mesh``
(``jax.make_mesh``, ``jax.sharding.Mesh``, a course wrapper named so): the
call's own parentheses must contain ``axis_types``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ["book", "exercises", "solutions", "jaxcourse", "tests", "benchmarks"]
# A call of make_mesh or Mesh; `def make_mesh(` is a definition, not a call, and
# AbstractMesh or a `Mesh` type annotation never match (\b and the parenthesis).
CALL = re.compile(r"(?<!def )(?<![\w.])(?:[\w.]+\.)?(make_mesh|Mesh)\(")


def _arguments(text: str, start: int) -> str:
    """The text between the parenthesis at ``start - 1`` and its partner."""
    depth, index = 1, start
    while index < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        index += 1
    return text[start:index - 1]


def missing_axis_types(code: str) -> list[str]:
    """Return each mesh-building call in ``code`` that does not pass axis types."""
    found = []
    for match in CALL.finditer(code):
        arguments = _arguments(code, match.end())
        if "axis_types" not in arguments:
            line = code.count("\n", 0, match.start()) + 1
            found.append(f"line {line}: {match.group(0)}{arguments[:60]})")
    return found


def _sources() -> list[tuple[str, str]]:
    """Every (place, code) pair to scan."""
    sources = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if ".ipynb_checkpoints" in path.parts or path.name == Path(__file__).name:
                continue
            if "blind_answers" in path.parts:
                continue  # wrong answers kept as written: a benchmark's input
            relative = path.relative_to(ROOT)
            if path.suffix == ".py":
                sources.append((str(relative), path.read_text(encoding="utf-8")))
            elif path.suffix == ".ipynb":
                nb = json.loads(path.read_text(encoding="utf-8"))
                for index, cell in enumerate(nb["cells"]):
                    if cell["cell_type"] == "code":
                        source = "".join(cell["source"])
                        sources.append((f"{relative} cell {index}", source))
    return sources


SOURCES = _sources()


def test_the_scan_sees_the_course() -> None:
    # A scan that reads nothing passes anything: make sure it reads the chapters.
    places = {place.split(" cell ")[0] for place, _ in SOURCES}
    assert "book/04_sharding.ipynb" in places
    assert sum("make_mesh(" in code for _, code in SOURCES) >= 5


@pytest.mark.parametrize(
    ("code", "bad"),
    [
        ("mesh = jax.make_mesh((8,), ('i',))", 1),
        ("mesh = jax.make_mesh((4, 2), ('a', 'b'),\n    devices=d)", 1),
        ("m = jax.sharding.Mesh(np.array(devs).reshape(4, 2), ('a', 'b'))", 1),
        ("m = Mesh(devs, ('i',))", 1),
        ("m = make_mesh((4, 2), names)", 1),
        ("script = '''\nmesh = jax.make_mesh((jax.device_count(),), ('d',))\n'''", 1),
        ("jax.make_mesh((8,), ('i',), axis_types=(AxisType.Explicit,))", 0),
        ("jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape))", 0),
        ("Mesh(devs, ('i',), axis_types=(AxisType.Auto,))", 0),
        ("def make_mesh(shape, names):\n    pass", 0),
        ("mesh: jax.sharding.Mesh = m\nAbstractMesh((8,), ('i',))", 0),
        ("isinstance(mesh, Mesh)", 0),
    ],
)
def test_the_scan_finds_calls_without_axis_types(code: str, bad: int) -> None:
    assert len(missing_axis_types(code)) == bad, missing_axis_types(code)


def test_every_mesh_states_its_axis_types() -> None:
    offenders = [
        f"{place}, {call}"
        for place, code in SOURCES
        for call in missing_axis_types(code)
    ]
    assert offenders == [], (
        "meshes built without axis_types (pass axis_types=(AxisType.Explicit, …) "
        "or (AxisType.Auto, …)):\n" + "\n".join(offenders)
    )
