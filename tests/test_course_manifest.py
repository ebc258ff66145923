"""The engine imports no content; it finds every topic through the manifest."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import jaxcourse
from jaxcourse import course
from jaxcourse.exercises import by_chapter, get

ROOT = Path(__file__).resolve().parents[1]
ENGINE = Path(jaxcourse.__file__).resolve().parent
CONTENT = "solutions"
# A module path of the content package, as a whole string ("solutions",
# "solutions.bayes") or the start of a formatted one (f"solutions.{topic}").
MODULE_PATH = re.compile(rf"^{CONTENT}(\.\w*)*$")


def _content_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            found += [where for a in node.names if a.name.split(".")[0] == CONTENT]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if (node.module or "").split(".")[0] == CONTENT:
                found.append(where)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if MODULE_PATH.match(node.value):
                found.append(f"{where} (by string)")
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and MODULE_PATH.match(str(first.value)):
                found.append(f"{where} (by formatted string)")
    return found


def test_the_engine_never_imports_the_content() -> None:
    found = [hit for path in sorted(ENGINE.rglob("*.py")) for hit in
             _content_imports(path)]
    assert not found, "jaxcourse imports the content package: " + ", ".join(found)


def test_the_guard_sees_every_form_of_import(tmp_path: Path) -> None:
    # The guard must fail on each way of importing: a test that cannot fail
    # proves nothing.
    forms = ["import solutions", "from solutions.bayes import elbo",
             "import importlib; importlib.import_module('solutions.mlp')",
             "key = 'x'; __import__(f'solutions.{key}')"]
    for number, source in enumerate(forms):
        path = ROOT / "tests" / f"_guard_probe_{number}.py"
        path.write_text(source + "\n", encoding="utf-8")
        try:
            assert _content_imports(path), source
        finally:
            path.unlink()


def test_topics_are_the_chapters_in_order() -> None:
    topics = course.topics()
    assert [t.chapter for t in topics] == sorted(t.chapter for t in topics)
    for item in topics:
        assert (ROOT / item.chapter).is_file(), item.chapter
        assert (ROOT / item.exercises).is_file(), item.exercises
        assert (ROOT / item.student).is_file(), item.student
        # One key names the chapter everywhere: its notebooks are
        # NN_<key>.ipynb (NN: its place in the course) and NN_<key>_exercises,
        # and its test file and explorer module carry the key too; the
        # Simplified-Chinese edition shares its original's.
        number = Path(item.chapter).stem.split("_", 1)[0]
        assert number.isdigit() and len(number) == 2, item.chapter
        assert item.chapter == f"book/{number}_{item.key}.ipynb"
        assert item.exercises == f"solutions/{number}_{item.key}_exercises.ipynb"
        assert item.student == f"exercises/{number}_{item.key}_exercises.ipynb"
        original = item.key.removesuffix("_hans")
        assert item.module == f"solutions.{original}", item.key
        assert (ROOT / "tests" / f"test_exercises_{original}.py").is_file(), item.key
        explorers = ENGINE / "exercises" / "widgets"
        assert (explorers / f"explorers_{original}.py").is_file(), item.key


@pytest.mark.parametrize("item", course.topics(), ids=lambda t: t.key)
def test_each_topic_declares_what_its_exercises_need(item: course.Topic) -> None:
    exercises = [get(i) for ids in by_chapter().values() for i in ids
                 if i.startswith(item.key + ".")]
    assert exercises, f"topic {item.key} registers no exercise"
    assert {e.language for e in exercises} == {item.language}
    assert max(e.devices for e in exercises) == item.devices
    assert {e.chapter for e in exercises} == {Path(item.chapter).stem}


def test_an_unknown_topic_is_named() -> None:
    with pytest.raises(KeyError, match="the course has: mlp"):
        course.topic("nope")
