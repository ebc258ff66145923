"""A class release (`python -m jaxcourse.exercises.release`): no answer, working checks.

Fast: what learners import holds no reference answer (the checks' helpers
import no module that defines exercises, the student notebooks import only
helpers); a release's sources (the references' bodies withheld, the first
cell's install) and its files; the Show-solution button in a release; and,
on a release of every chapter written in this process (the stored outputs as
the course has them), that no function anywhere in it (module, notebook cell,
string, JSON text) has the body of a reference, compared as a normalised AST.

Slow: a complete release of every chapter (the outputs the course leaves out
as too large to store computed in fresh processes), in which, in a fresh
process per chapter whose path holds the release and the site-packages but
not the course (no ``.pth`` file runs, so the course's editable install is
not importable), every exercise's Check passes its reference answer (given
as the learner's function, from the course's source), rejects the contract's
wrong answers (``tests/exercise_answers``) with their messages and accepts
the alternatives.
"""

from __future__ import annotations

import ast
import datetime as dt
import html
import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import nbformat
import pytest

from jaxcourse import course
from jaxcourse.exercises import exercise_ids, get
from jaxcourse.exercises.authoring.answerless import answer_functions
from jaxcourse.exercises.authoring.release_stubs import (
    body_key,
    functions_in,
    release_install_cell,
    stub_source,
)
from jaxcourse.exercises.checking import class_release
from jaxcourse.exercises.release.cli import publish_solutions
from jaxcourse.exercises.release.writer import ReleaseError, chapter_of, write_release
from jaxcourse.exercises.widgets.panel import CheckPanel

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = [chapter_of(t) for t in course.topics()]
TOPIC_MODULES = {t.module for t in course.topics()}


def _imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


# ---- what learners import holds no answer --------------------------------------------


def test_no_helper_imports_a_module_that_holds_answers() -> None:
    for path in sorted((ROOT / "exercise_kit").glob("*.py")):
        name = f"exercise_kit.{path.stem}"
        if name in TOPIC_MODULES or path.stem == "__init__":
            continue
        held = _imports(ast.parse(path.read_text(encoding="utf-8"))) & TOPIC_MODULES
        assert not held, f"{name} imports {sorted(held)}, which hold answers"


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").rglob("*.ipynb")),
                         ids=lambda p: p.relative_to(ROOT / "exercises").as_posix())
def test_student_notebooks_import_only_helpers(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        imported = {name for name in _imports(ast.parse(cell.source))
                    if name.split(".")[0] == "solutions"}
        assert not imported & TOPIC_MODULES, (path.name, cell.source)


def test_the_scaling_constants_live_with_the_checks_and_stay_reexported() -> None:
    from exercise_kit import scaling_checks
    from solutions import scaling

    assert scaling.MESHES is scaling_checks.MESHES
    assert scaling.REMAT_POLICIES is scaling_checks.REMAT_POLICIES


# ---- a release's sources -------------------------------------------------------------

MODULE = '''\
"""A module that defines exercises."""

from __future__ import annotations

import functools


def _square_all(xs):
    return [x * x for x in xs]


def squares(xs):
    """Square every item."""
    # the answer
    return _square_all(xs)


@functools.cache
def one(x): return x + 1


def _inputs(rng):
    return ([1, 2, 3],)


register(squares, one, _inputs)
'''


def test_a_stub_keeps_names_signatures_docstrings_and_decorators() -> None:
    stubbed = stub_source(MODULE, ["squares", "one"])
    tree = ast.parse(stubbed)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert set(functions) == {"squares", "one", "_inputs"}  # the helper is pruned
    assert ast.get_docstring(functions["squares"]) == "Square every item."
    assert [ast.unparse(d) for d in functions["one"].decorator_list] == [
        "functools.cache"]
    for name in ("squares", "one"):
        assert ast.unparse(functions[name].body[-1]) == \
            f"raise withheld(__name__, '{name}')"
    assert "# the answer" not in stubbed and "x * x" not in stubbed
    assert "from __future__ import annotations\n" \
        "from jaxcourse.exercises.checking.class_release import withheld\n" in stubbed
    with pytest.raises(ValueError, match="_inputs_missing"):
        stub_source(MODULE, ["_inputs_missing"])


def test_the_first_cell_takes_the_course_from_the_release() -> None:
    notebook = nbformat.read(ROOT / "exercises" / "03_bayes_exercises.ipynb",
                             as_version=4)
    cell = next(c.source for c in notebook.cells if "git+" in c.source)
    rewritten = release_install_cell(cell)
    assert rewritten is not None and "git+" not in rewritten
    assert "class_release.json" in rewritten
    assert not rewritten.startswith("# Colab")  # it installs nothing now
    assert rewritten.endswith(cell.split("importlib.invalidate_caches()\n", 1)[1])
    assert release_install_cell("import jax\n") is None


def test_a_body_key_ignores_names_comments_and_layout() -> None:
    def key(source: str) -> str | None:
        return body_key(ast.parse(source).body[0])

    one = key("def f(a, b):\n    '''Doc.'''\n    c = a + b  # sum\n    return c * 2\n")
    two = key("def g(x, y):\n    z = (x\n         + y)\n    return z * 2\n")
    assert one == two
    assert one != key("def f(a, b):\n    c = a - b\n    return c * 2\n")
    # A global or built-in name is part of what the code does.
    assert key("def f(d):\n    return sorted(d)\n") != \
        key("def f(d):\n    return set(d)\n")
    assert key("def f():\n    '''Only a docstring.'''\n") is None
    assert [f.name for f in functions_in("x = 'def h():\\n    return 1\\n'")] == ["h"]


# ---- the Show-solution button in a release ------------------------------------------


@pytest.fixture
def in_a_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Make this process's course a release with the settings given, for a test."""
    settings = tmp_path / class_release.SETTINGS_NAME
    published = tmp_path / "solutions.json"
    monkeypatch.setattr(class_release, "settings_path", lambda: settings)
    monkeypatch.setattr(class_release, "solutions_path", lambda _file: published)

    def make(after: str | None, solutions: dict[str, str] | None = None) -> None:
        settings.write_text(json.dumps({"chapters": ["01_mlp"],
                                        "solutions_after": after}))
        if solutions is not None:
            published.write_text(json.dumps(solutions))

    return make


def test_show_solution_is_off_in_a_release(in_a_release) -> None:
    in_a_release(None)
    panel = CheckPanel("mlp.one_hot", run=False)
    assert panel.solution_button.disabled
    assert panel.solution_button.tooltip == "The solutions are not part of this " \
        "class release."
    panel.toggle_solution()
    assert "def one_hot" not in panel.solution.value
    assert "not part of this class release" in panel.solution.value


def test_show_solution_opens_on_its_date_once_published(in_a_release) -> None:
    later = (dt.date.today() + dt.timedelta(days=3)).isoformat()
    in_a_release(later)
    panel = CheckPanel("mlp.one_hot", run=False)
    assert panel.solution_button.disabled
    assert panel.solution_button.tooltip == f"The solutions open on {later}."
    past = (dt.date.today() - dt.timedelta(days=1)).isoformat()
    in_a_release(past)
    assert "has not added them" in CheckPanel(
        "mlp.one_hot", run=False).solution_button.tooltip
    in_a_release(past, {"mlp.one_hot|en": "def one_hot(x, k): ...\n"})
    panel = CheckPanel("mlp.one_hot", run=False)
    assert not panel.solution_button.disabled
    panel.solution_button.click()
    assert "def one_hot(x, k): ..." in html.unescape(
        re.sub(r"<[^>]+>", "", panel.solution.value))


def test_a_damaged_settings_file_keeps_solutions_off(in_a_release) -> None:
    in_a_release(None)
    class_release.settings_path().write_text("{not json")
    assert class_release.solution_state(get("mlp.relu"))[0] is False


def test_self_study_shows_solutions() -> None:
    assert class_release.release_settings() is None  # the course has no settings
    assert class_release.solution_state(get("mlp.relu")) == (True, "")


def test_a_withheld_reference_says_why_it_was_reached() -> None:
    from types import SimpleNamespace

    module = SimpleNamespace(__name__="nowhere", __file__="/nonexistent/nowhere.py")
    sys.modules["nowhere"] = module  # type: ignore[assignment]
    try:
        error = class_release.withheld("nowhere", "answer")
    finally:
        del sys.modules["nowhere"]
    assert isinstance(error, class_release.ReferenceWithheldError)
    assert "no nowhere_outputs.json" in str(error)
    assert "Ask your teacher" in str(error)


# ---- a release of every chapter: no reference's body in it -------------------------


def reference_bodies() -> dict[str, str]:
    """Every reference's normalised body -> its exercise id."""
    import inspect

    bodies = {}
    for exercise_id in exercise_ids():
        reference = get(exercise_id).reference
        source = textwrap.dedent(inspect.getsource(reference))
        function = next(f for f in functions_in(source))
        key = body_key(function)
        assert key is not None, exercise_id
        bodies[key] = exercise_id
    return bodies


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def release_functions(out: Path) -> list[tuple[str, ast.FunctionDef]]:
    """Every function in the release: modules, notebook cells, strings, JSON texts."""
    found = []
    for path in sorted(out.rglob("*")):
        where = path.relative_to(out).as_posix()
        if path.suffix == ".py":
            sources = [path.read_text(encoding="utf-8")]
        elif path.suffix == ".ipynb":
            sources = [c.source for c in nbformat.read(path, as_version=4).cells]
        elif path.suffix == ".json":
            sources = _strings(json.loads(path.read_text(encoding="utf-8").partition(
                "\n")[2] if path.name.endswith("_outputs.json") else
                path.read_text(encoding="utf-8")))
        else:
            continue
        found += [(where, f) for source in sources for f in functions_in(source)]
    return found


@pytest.fixture(scope="module")
def quick_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release of every chapter, its stored outputs as the course has them."""
    out = tmp_path_factory.mktemp("release") / "class"
    write_release(out, solutions_after=dt.date(2030, 1, 1), complete=False, echo=None)
    return out


def test_the_release_holds_no_reference_body(quick_release: Path) -> None:
    bodies = reference_bodies()
    assert len(bodies) == len({get(e).reference for e in exercise_ids()})
    functions = release_functions(quick_release)
    assert len(functions) > 500  # the engine, the helpers, the notebooks were read
    found = [(where, f.name, bodies[body_key(f)]) for where, f in functions
             if body_key(f) in bodies]
    assert not found, found
    # ... and the check itself finds one where there is one.
    course_functions = functions_in((ROOT / "solutions" / "bayes.py").read_text())
    assert any(body_key(f) in bodies for f in course_functions)


def test_the_release_holds_what_students_get(quick_release: Path) -> None:
    out = quick_release
    settings = json.loads((out / "jaxcourse" / "exercises" /
                           class_release.SETTINGS_NAME).read_text())
    assert settings["chapters"] == CHAPTERS and settings["excluded"] == {}
    assert settings["solutions_after"] == "2030-01-01"
    # Which course it came from, there, in its README and in every notebook
    # (the checkout's commit when it was written: git's HEAD, or None).
    from jaxcourse import __version__

    stamp = {"version": settings["course_version"],
             "commit": settings["course_commit"]}
    assert stamp["version"] == __version__
    assert stamp["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", stamp["commit"])
    assert f"JAX course {__version__} (commit " in (out / "README.md").read_text()
    for path in out.rglob("*.ipynb"):
        meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
        assert meta["jaxcourse"]["release"] == stamp, path
    # The student notebooks and their editions, never a master.
    notebooks = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.ipynb"))
    expected = sorted(p.relative_to(ROOT).as_posix()
                      for p in (ROOT / "exercises").rglob("*.ipynb"))
    assert notebooks == expected
    assert not (out / "solutions" / "zh_hans").exists()
    for path in out.rglob("*.ipynb"):
        assert "git+" not in path.read_text(encoding="utf-8"), path
    # The manifest, as the course's, and each module that defines exercises.
    namespace: dict = {}
    exec((out / "solutions" / "__init__.py").read_text(), namespace)
    assert namespace["TOPICS"] == course.topics()
    # Each answer function is withheld: the references, and the named
    # mistakes (whose helpers compute the right answer first), wherever they
    # are defined; the private helpers only they used are gone.
    answers = answer_functions()
    assert set(TOPIC_MODULES) <= set(answers)
    for module, names in answers.items():
        text = out.joinpath(*module.split(".")).with_suffix(".py").read_text()
        assert text.count("raise withheld(__name__, ") == len(names), module
        tree = ast.parse(text)
        assert all(f"raise withheld(__name__, \"{n.name}\")" in ast.unparse(n)
                   .replace("'", '"') for n in tree.body
                   if isinstance(n, ast.FunctionDef) and n.name in names), module
    mistakes = (out / "exercise_kit" / "transformer_mistakes.py").read_text()
    for helper in ("_micro", "_tp", "_activations", "_mesh", "_zero", "_layer"):
        assert f"def {helper}(" not in mistakes, helper
    # The editions' texts, without the solutions they translate.
    for path in (out / "solutions").glob("*_texts.json"):
        table = json.loads(path.read_text(encoding="utf-8"))
        assert table and not any("def " in text for text in table), path
    assert 'course = "solutions:TOPICS"' in (out / "pyproject.toml").read_text()


def test_published_solutions_are_each_exercises_in_each_language(
        quick_release: Path, tmp_path: Path) -> None:
    written = publish_solutions(quick_release, echo=None)
    assert {p.name for p in written} == {
        f"{m.split('.')[1]}_solutions.json" for m in TOPIC_MODULES}
    table = json.loads((quick_release / "solutions" / "bayes_solutions.json")
                       .read_text(encoding="utf-8"))
    assert table["bayes.batched_log_joint|en"].startswith("def batched_log_joint(")
    assert "bayes.batched_log_joint|zh-Hans" in table
    dp = json.loads((quick_release / "solutions" / "dp_zh_solutions.json")
                    .read_text(encoding="utf-8"))
    assert "dp_zh_hans.replicate|zh-Hans" in dp and "dp_zh.replicate|zh-Hant" in dp
    with pytest.raises(ReleaseError, match="not a class release"):
        publish_solutions(tmp_path, echo=None)


def test_a_release_goes_nowhere_near_the_course(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="inside the course's checkout"):
        write_release(ROOT / "release", echo=None)
    (tmp_path / "keep.txt").write_text("a teacher's file")
    with pytest.raises(ReleaseError, match="not empty"):
        write_release(tmp_path, force=True, echo=None)
    assert (tmp_path / "keep.txt").is_file()
    with pytest.raises(ReleaseError, match="no chapter '99_nothing'"):
        write_release(tmp_path / "new", ["99_nothing"], echo=None)


def test_force_replaces_an_earlier_release(tmp_path: Path) -> None:
    out = tmp_path / "class"
    write_release(out, ["bayes"], complete=False, echo=None)
    with pytest.raises(ReleaseError, match="not empty"):
        write_release(out, ["03_bayes"], complete=False, echo=None)
    settings = write_release(out, ["03_bayes", "sharding"], complete=False,
                             force=True, echo=None)
    assert settings["chapters"] == ["03_bayes", "04_sharding"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["class"]  # no staging left
    assert sorted(p.name for p in (out / "exercises").glob("*.ipynb")) == [
        "03_bayes_exercises.ipynb", "04_sharding_exercises.ipynb"]
    assert not (out / "solutions" / "mlp.py").exists()


# ---- a complete release, checked without the course (slow) -------------------------

# The child: the release first on the path, then the tests' answers, then the
# site-packages without their .pth files (python -S), so that the course's
# editable install cannot be imported.
CHILD = r"""
import importlib, importlib.util, json, sys
release, tests, site, original, module_name, chapter, devices = sys.argv[1:8]
sys.path[:0] = [release, tests]
sys.path.append(site)
from jaxcourse.devices import use_cpu_devices
if int(devices) > 1:
    use_cpu_devices(int(devices))
import jaxcourse, solutions
import jaxcourse.exercises as engine
from jaxcourse.exercises.checking import registry
ids = engine.exercise_ids(chapter)
stub = importlib.import_module(module_name)
for imported in (jaxcourse, solutions, stub):
    assert imported.__file__.startswith(release), imported.__file__

# The learner's code: the course's own module (the reference answers), run
# as a notebook would run it, under another name, registering nothing.
saved = engine.register, registry.register
engine.register = registry.register = lambda *exercises: exercises
spec = importlib.util.spec_from_file_location("learner", original)
learner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(learner)
engine.register, registry.register = saved

# The contract's answers call the reference answers as a learner calls their
# own earlier answers: they import them while the learner's module stands in.
package, short = module_name.split(".")
sys.modules[module_name] = learner
setattr(solutions, short, learner)
import exercise_answers
for topic in {exercise_answers.topic_of(i) for i in ids}:
    exercise_answers.answers_module(topic)
sys.modules[module_name] = stub
setattr(solutions, short, stub)

verdicts = {}
for exercise_id in ids:
    exercise = engine.get(exercise_id)
    reference = getattr(learner, exercise.reference.__name__)
    verdicts[exercise_id + ":reference"] = exercise_answers.judge(
        exercise_id, reference)
    topic = exercise_answers.topic_of(exercise_id)
    for row in exercise_answers.wrong(topic) + exercise_answers.right(topic):
        if row.exercise_id == exercise_id:
            verdicts[exercise_id + ":" + row.name] = exercise_answers.judge(
                exercise_id, exercise_answers.answer(exercise_id, row.name))
print("VERDICTS" + json.dumps(verdicts))
"""


@pytest.fixture(scope="module")
def complete_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release of every chapter with complete stored outputs (fresh processes)."""
    out = tmp_path_factory.mktemp("release") / "class"
    settings = write_release(out, echo=None)
    assert settings["excluded"] == {}, settings["excluded"]
    return out


def judged_in_the_release(release: Path, chapter: str) -> dict[str, dict]:
    """Judge a chapter's reference and answers where only the release is importable."""
    topic = next(t for t in course.topics() if chapter_of(t) == chapter)
    original = Path(course.load(topic.key).__file__)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "JAX_COURSE_LANGUAGE", "XLA_FLAGS"))}
    env.update(JAX_PLATFORMS="cpu", JAX_COURSE_WARM_UP="0",
               # Processes that a check launches find the release first too.
               PYTHONPATH=str(release))
    proc = subprocess.run(
        [sys.executable, "-S", "-c", CHILD, str(release), str(ROOT / "tests"),
         sysconfig.get_paths()["purelib"], str(original), topic.module, chapter,
         str(topic.devices)],
        capture_output=True, text=True, timeout=1500, env=env,
        cwd=release / "exercises")
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("VERDICTS"))
    return json.loads(line[len("VERDICTS"):])


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_check_works_in_the_release_without_the_course(
        complete_release: Path, chapter: str) -> None:
    from exercise_answers import right, topic_of, wrong

    from jaxcourse.exercises import by_chapter, message

    verdicts = judged_in_the_release(complete_release, chapter)
    problems = []
    for exercise_id in by_chapter()[chapter]:
        exercise = get(exercise_id)
        found = verdicts[f"{exercise_id}:reference"]
        total = sum(not case.advice for case in exercise.cases)
        if found["summary"] != message("summary", exercise.language, id=exercise_id,
                                       passed=total, total=total):
            problems.append(f"{exercise_id}, the reference: {found['report']}")
        topic = topic_of(exercise_id)
        for row in wrong(topic):
            if row.exercise_id != exercise_id:
                continue
            found = verdicts[f"{exercise_id}:{row.name}"]
            if found["status"] != "failed" or not all(
                    _said(exercise.language, f) in found["report"]
                    for f in row.fragments):
                problems.append(f"{exercise_id}, {row.name}: {found['report']}")
        for row in right(topic):
            if row.exercise_id == exercise_id and \
                    verdicts[f"{exercise_id}:{row.name}"]["status"] != "passed":
                problems.append(f"{exercise_id}, {row.name} (right): "
                                f"{verdicts[f'{exercise_id}:{row.name}']['report']}")
    assert not problems, "\n\n".join(problems)


def _said(language: str, fragment: str) -> str:
    if language != "zh-Hans":
        return fragment
    from jaxcourse import zh_hans

    return zh_hans.convert_text(fragment)
