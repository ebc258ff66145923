"""The structure ARCHITECTURE.md draws: layers, no circles, short modules.

ARCHITECTURE.md's table of layers is the rule: every module of ``jaxcourse``
and ``solutions`` belongs to one layer, and imports only from its own layer or
the ones below. Imports are read from the source with :mod:`ast`, everywhere
in a file (a function-level import counts too: hiding an import in a function
does not make it go away). Within a layer, modules may import each other, but
never in a circle. A module over 600 lines needs a reason in ARCHITECTURE.md.

The checks are plain functions over a graph, so the tests below also feed
them a circle and an upward import of their own, to show that they fail.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
PACKAGES = ("jaxcourse", "exercise_kit", "solutions")
MAX_LINES = 600
#: The exercise engine: its subpackages have an order of their own.
ENGINE = "jaxcourse.exercises"
#: The modules allowed at the engine's top, beside its subpackages.
ENGINE_TOP = ("__init__.py",)
LAYERS_HEADING = "## Layers, bottom first"
ENGINE_HEADING = "## The engine's subpackages, bottom first"


# ---------------------------------------------------------------------------
# Reading the code and the document
# ---------------------------------------------------------------------------


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Return module name -> file for every module of the course's packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _owner(name: str, modules: Iterable[str]) -> str | None:
    """The longest prefix of a dotted ``name`` that is one of ``modules``."""
    modules = set(modules)
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: Iterable[str]) -> set[str]:
    """Return the course modules that ``module`` imports, anywhere in its file.

    ``from package import name`` counts as an import of ``package.name`` when
    that is a module, of ``package`` otherwise; relative imports are resolved.
    """
    modules = set(modules)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                       else base for alias in node.names]
        else:
            continue
        for target in targets:
            owner = _owner(target, modules)
            if owner is not None and owner != module:
                found.add(owner)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Return module -> the course modules it imports."""
    files = module_files(root)
    return {name: imports_of(name, path, files) for name, path in files.items()}


def section(text: str, heading: str) -> str:
    """The part of ``text`` under ``heading``, up to the next heading of its level."""
    parts = text.split(heading + "\n", 1)
    return parts[1].split("\n## ", 1)[0] if len(parts) == 2 else ""


def layers_from(text: str,
                heading: str = LAYERS_HEADING) -> list[tuple[str, list[str]]]:
    """Read the table under ``heading``: ``(layer, [module prefixes])``, bottom first.

    A row of the table starts with the layer's number; its second cell names
    the modules (or packages) in backticks.
    """
    rows = []
    for line in section(text, heading).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"\d+", cells[0]):
            rows.append((int(cells[0]), cells[1], re.findall(r"`([\w.]+)`", cells[2])))
    rows.sort()
    return [(f"{number} {name}", prefixes) for number, name, prefixes in rows]


def long_modules_from(text: str) -> set[str]:
    """Read the modules that ARCHITECTURE.md allows over 600 lines, with a reason."""
    section = text.split("## Modules over 600 lines", 1)
    if len(section) < 2:
        return set()
    body = section[1].split("\n## ", 1)[0]
    # "- `module`: reason": a name without a reason does not count.
    return set(re.findall(r"^- `([\w.]+)`:\s*\S", body, flags=re.MULTILINE))


# ---------------------------------------------------------------------------
# The checks, on any graph
# ---------------------------------------------------------------------------


def layer_of(module: str, layers: list[tuple[str, list[str]]]) -> int | None:
    """The index of the layer whose longest prefix matches ``module``."""
    best, best_length = None, -1
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) \
                    and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def upward_imports(graph: Mapping[str, set[str]],
                   layers: list[tuple[str, list[str]]]) -> list[str]:
    """List each import into a higher layer, and each module in no layer."""
    problems = []
    for module in sorted(graph):
        own = layer_of(module, layers)
        if own is None:
            problems.append(f"{module} is in no layer of ARCHITECTURE.md: "
                            "add it to one")
            continue
        for target in sorted(graph[module]):
            theirs = layer_of(target, layers)
            if theirs is not None and theirs > own:
                problems.append(f"{module} (layer {layers[own][0]}) imports {target} "
                                f"(layer {layers[theirs][0]}), a layer above it")
    return problems


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Return the import graph's circles: its strongly connected groups of 2 or more.

    Tarjan's algorithm, written without recursion.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


# ---------------------------------------------------------------------------
# The course
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def document() -> str:
    return ARCHITECTURE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_document_has_layers(document) -> None:
    layers = layers_from(document)
    assert len(layers) >= 4, "ARCHITECTURE.md's table of layers was not found"
    named = [prefix for _, prefixes in layers for prefix in prefixes]
    assert len(named) == len(set(named)), "a module is named in two layers"


def test_no_import_runs_up_a_layer(document, graph) -> None:
    problems = upward_imports(graph, layers_from(document))
    assert not problems, "\n".join(problems)


def test_no_import_circle(graph) -> None:
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_every_long_module_has_a_reason(document) -> None:
    allowed = long_modules_from(document)
    long = {}
    for name, path in module_files().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            long[name] = lines
    unexplained = {name: n for name, n in long.items() if name not in allowed}
    assert not unexplained, (
        f"modules over {MAX_LINES} lines with no reason under ARCHITECTURE.md's "
        f"'Modules over 600 lines': {unexplained}")
    stale = allowed - set(long)
    assert not stale, (f"ARCHITECTURE.md lists modules no longer over {MAX_LINES} "
                       f"lines: {stale}")


def test_the_engines_subpackages_import_only_downward(document, graph) -> None:
    rows = layers_from(document, ENGINE_HEADING)
    assert len(rows) >= 5, "ARCHITECTURE.md's table of the engine's subpackages"
    inside = {m: {d for d in deps if d == ENGINE or d.startswith(ENGINE + ".")}
              for m, deps in graph.items()
              if m == ENGINE or m.startswith(ENGINE + ".")}
    problems = upward_imports(inside, rows)
    assert not problems, "\n".join(problems)
    # The package's __init__ is the top row: what a notebook imports, never
    # what the engine's own modules import.
    assert [prefixes for _, prefixes in rows][-1] == [ENGINE]


def test_every_engine_module_sits_in_a_subpackage(document) -> None:
    subpackages = [prefix for _, prefixes in layers_from(document, ENGINE_HEADING)
                   for prefix in prefixes if prefix != ENGINE]
    loose = [m for m in module_files() if m.startswith(ENGINE + ".")
             and not any(m == p or m.startswith(p + ".") for p in subpackages)]
    assert not loose, f"{ENGINE}'s modules in no subpackage of ARCHITECTURE.md: {loose}"
    top = sorted(p.name for p in (ROOT / Path(*ENGINE.split("."))).glob("*.py"))
    assert top == sorted(ENGINE_TOP), top


def _imported_tops(source: str) -> set[str]:
    """The top-level packages that ``source`` imports (IPython magics left out)."""
    lines = [line for line in source.splitlines()
             if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def _learner_sources(root: Path = ROOT) -> dict[str, str]:
    """Every code cell of the student notebooks and chapters, every explorer."""
    sources = {}
    for folder in ("exercises", "book"):
        for path in sorted((root / folder).rglob("*.ipynb")):
            if "_build" in path.parts:
                continue
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            for number, cell in enumerate(cells):
                if cell["cell_type"] == "code":
                    text = cell["source"]
                    sources[f"{path.relative_to(root)} cell {number}"] = (
                        text if isinstance(text, str) else "".join(text))
    for path in sorted((root / "jaxcourse" / "exercises" / "widgets").glob("*.py")):
        sources[str(path.relative_to(root))] = path.read_text(encoding="utf-8")
    return sources


def test_no_notebook_chapter_or_explorer_imports_the_answers() -> None:
    sources = _learner_sources()
    assert sum(".ipynb" in name for name in sources) > 100
    assert any("exercise_kit" in _imported_tops(s) for s in sources.values())
    wrong = [name for name, source in sources.items()
             if "solutions" in _imported_tops(source)]
    assert not wrong, f"these import solutions (the reference answers): {wrong}"


def test_an_import_of_the_answers_is_found(tmp_path) -> None:
    (tmp_path / "exercises").mkdir()
    cell = {"cell_type": "code", "source": ["%matplotlib inline\n",
                                            "from solutions.scaling import MESHES\n"]}
    (tmp_path / "exercises" / "01_x.ipynb").write_text(json.dumps({"cells": [cell]}))
    [(name, source)] = _learner_sources(tmp_path).items()
    assert name == "exercises/01_x.ipynb cell 0"
    assert _imported_tops(source) == {"solutions"}
    assert _imported_tops("import exercise_kit.scaling_checks as c") == {"exercise_kit"}


def test_the_engine_never_imports_the_content(graph) -> None:
    engine = {m: deps for m, deps in graph.items() if m.startswith("jaxcourse.")}
    wrong = {m: sorted(d for d in deps if d.startswith(("solutions", "exercise_kit")))
             for m, deps in engine.items()}
    assert not any(wrong.values()), {m: d for m, d in wrong.items() if d}


# ---------------------------------------------------------------------------
# The checks fail when they should
# ---------------------------------------------------------------------------

_LAYERS = [("1 low", ["pkg.low"]), ("2 high", ["pkg.high", "pkg.high.special"])]


def test_an_upward_import_is_found() -> None:
    graph = {"pkg.low.a": {"pkg.high.b"}, "pkg.high.b": set()}
    problems = upward_imports(graph, _LAYERS)
    assert len(problems) == 1 and "pkg.low.a" in problems[0]
    assert "pkg.high.b" in problems[0]


def test_a_downward_import_passes_and_a_module_without_a_layer_fails() -> None:
    assert upward_imports({"pkg.high.b": {"pkg.low.a"}, "pkg.low.a": set()},
                          _LAYERS) == []
    assert "in no layer" in upward_imports({"pkg.other": set()}, _LAYERS)[0]


def test_a_circle_is_found_even_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_a_function_level_import_counts(tmp_path) -> None:
    (tmp_path / "jaxcourse").mkdir()
    (tmp_path / "solutions").mkdir()
    (tmp_path / "jaxcourse" / "__init__.py").write_text("")
    (tmp_path / "jaxcourse" / "low.py").write_text(
        "def f():\n    from jaxcourse import high\n    return high\n")
    (tmp_path / "jaxcourse" / "high.py").write_text("from . import low\n")
    graph = import_graph(tmp_path)
    assert graph["jaxcourse.low"] == {"jaxcourse.high"}
    assert graph["jaxcourse.high"] == {"jaxcourse.low"}
    assert circles(graph) == [["jaxcourse.high", "jaxcourse.low"]]


def test_a_table_is_read_only_under_its_heading() -> None:
    text = ("## Layers, bottom first\n| 1 | low | `a` | x |\n| 2 | high | `b` | y |\n"
            "## Other\n| 1 | other | `c` | z |\n")
    assert layers_from(text) == [("1 low", ["a"]), ("2 high", ["b"])]
    assert layers_from(text, "## Other") == [("1 other", ["c"])]
    assert layers_from(text, "## Missing") == []


def test_a_subpackage_importing_the_engines_init_is_found() -> None:
    rows = [("1 checking", [f"{ENGINE}.checking"]), ("2 public names", [ENGINE])]
    graph = {f"{ENGINE}.checking.spec": {ENGINE}, ENGINE: {f"{ENGINE}.checking.spec"}}
    problems = upward_imports(graph, rows)
    assert len(problems) == 1 and problems[0].startswith(f"{ENGINE}.checking.spec")


def test_the_reasons_are_read_only_with_a_reason() -> None:
    text = ("## Modules over 600 lines\n- `a.b`: one thing, a table\n- `c.d`\n"
            "## Next\n- `e.f`: not here\n")
    assert long_modules_from(text) == {"a.b"}
