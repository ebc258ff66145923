"""Stored reference outputs: fresh, equal to the live ones, and never trusted stale.

A first Check judges against outputs computed ahead of time
(``jaxcourse.exercises.checking.references``). These tests check that every store in
``solutions/`` is fresh and holds every exercise, that every stored output
equals a live recomputation (slow: every reference and mistake runs again, in
a process with the exercise's devices), and, on a small module written here,
that a store is used when fresh and ignored, with no error, when its sources
or versions changed or it is corrupt.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from jaxcourse.exercises import check, exercise_ids, get, register, unregister
from jaxcourse.exercises.checking import judging, observe, references
from jaxcourse.exercises.checking.references import (
    MAX_STORED,
    store_path,
    stored_outputs,
)
from jaxcourse.exercises.checking.references import writer as references_writer
from jaxcourse.exercises.checking.references.writer import serialize, stale

# ---- the course's stores ------------------------------------------------------


def test_no_store_is_stale():
    old = {name: references_writer.changes(name)
           for name in references_writer.module_files()}
    old = {name: why for name, why in old.items() if why}
    assert old == {}, (
        f"stale stores, and why: {old}; "
        "run `python -m jaxcourse.exercises.checking.references`"
    )


@pytest.mark.parametrize("exercise_id", exercise_ids())
def test_every_exercise_has_stored_outputs(exercise_id):
    exercise = get(exercise_id)
    stored = stored_outputs(exercise)
    assert stored is not None, f"{exercise_id}: no fresh stored outputs"
    assert len(stored.reference) == len(exercise.cases)
    assert len(stored.mistakes) == len(exercise.mistakes)
    # Only outputs too large to store are left to compute live.
    assert any(o is not None for o in stored.reference)


def test_stores_stay_small():
    # Each named mistake is stored on every case, its 24 random calls
    # included: issue #51's tables (about 75 mistakes more in chapters 6-8)
    # took the stores from 2.0 to 2.3 MiB, and chapter 10's three exercises
    # (#64) to 3.1. 3.5 MiB leaves room, and still catches an output that
    # should be left to compute live (MAX_STORED).
    paths = [store_path(f) for f, _ in references_writer.module_files().values()]
    total = sum(p.stat().st_size for p in paths)
    assert total < 3.5 * 1024 * 1024, f"the stores take {total} bytes"


def test_an_edition_is_stored_once_beside_its_twin():
    # Chapter 9's Simplified-Chinese exercises run the Traditional ones'
    # functions on the same cases: their entries only point at their twins.
    path = store_path(references_writer.module_files()["solutions.dp_zh"][0])
    entries = json.loads(path.read_text(encoding="utf-8").partition("\n")[2])
    editions = {k: v for k, v in entries.items() if k.startswith("dp_zh_hans.")}
    assert editions and all(set(v) == {"signature", "same_as"}
                            for v in editions.values())
    for exercise_id, entry in editions.items():
        twin = entry["same_as"]
        assert twin == "dp_zh." + exercise_id.split(".", 1)[1]
        mine, theirs = stored_outputs(get(exercise_id)), stored_outputs(get(twin))
        assert mine is not None and mine.limits == theirs.limits
        assert [o and o.to_json() for o in mine.reference] == \
            [o and o.to_json() for o in theirs.reference]


_VERIFIED: dict[str, dict[str, list[str]]] = {}


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", exercise_ids())
def test_stored_outputs_equal_live_ones(exercise_id):
    # One fresh process per module (with its devices) recomputes every stored
    # observation, the reference's and each mistake's, and compares it by the
    # case's own comparison; each exercise's test reads its part.
    name = get(exercise_id).reference.__module__
    if name not in _VERIFIED:
        module_file, devices = references_writer.module_files()[name]
        _VERIFIED[name] = references_writer.verify_in_process(
            name, module_file, devices)
    assert _VERIFIED[name].get(exercise_id) == []


# ---- a small module of our own, its store written here ---------------------------

MODULE = '''
import numpy as np

from jaxcourse.exercises import Case, Exercise, Mistake, register


def double(x):
    return 2 * x


def _triple(x):
    return 3 * x


register(Exercise(
    id="refdemo.double",
    title="Double",
    reference=double,
    cases=[
        Case("double of 5 numbers",
             lambda rng: (rng.normal(size=5).astype(np.float32),)),
        Case("jax.jit(double)", lambda rng: (np.ones(3, np.float32),),
             transform="jit"),
        Case("double of a large vector",
             lambda rng: (rng.normal(size={big}).astype(np.float32),), seed=1),
    ],
    mistakes=[Mistake("tripled instead", _triple)],
))
'''


def quadruple(x):
    return 4 * x


def _fresh_caches():
    judging._REFERENCE_CACHE.clear()
    judging._MISTAKE_CACHE.clear()
    references._STORES.clear()


@pytest.fixture()
def topic(tmp_path, monkeypatch):
    """Write, import and store a one-exercise module; yield the module."""
    name = f"refdemo_{tmp_path.name.replace('-', '_')}"
    big = MAX_STORED  # float32: 4 bytes each, so its output is too large to store
    (tmp_path / f"{name}.py").write_text(MODULE.format(big=big))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    _fresh_caches()
    module = importlib.import_module(name)
    store_path(module.__file__).write_text(references_writer.compute_store(name))
    yield module
    unregister("refdemo.double")
    sys.modules.pop(name, None)
    _fresh_caches()


def _rewrite(module, change) -> None:
    """Apply ``change(header, entries)`` and write the store back, checksum redone."""
    path = store_path(module.__file__)
    head, body = path.read_text().split("\n", 1)
    header, entries = json.loads(head), json.loads(body)
    change(header, entries)
    path.write_text(serialize(entries, header["fingerprint"]))
    _fresh_caches()


def _poison_reference(header, entries) -> None:
    # The first case's stored answer becomes that of 4 * x: a store that is
    # used makes the correct function fail there.
    obs = entries["refdemo.double"]["reference"][0]
    exercise = get("refdemo.double")
    x = exercise.cases[0].make_inputs()[0]
    obs["value"] = observe.Observation("value", value=4 * x).to_json()["value"]


def test_fresh_store_is_used(topic):
    exercise = get("refdemo.double")
    stored = stored_outputs(exercise)
    assert stored is not None
    # The large case's output is not stored but computed live.
    assert stored.reference[2] is None
    assert all(o.kind == "value" for o in stored.reference[:2])
    assert check("refdemo.double", topic.double).passed
    live = observe.observe(topic.double, exercise.cases[2], None)
    np.testing.assert_array_equal(judging.reference_observations(exercise)[2].value,
                                  live.value)
    _rewrite(topic, _poison_reference)
    result = check("refdemo.double", topic.double)
    assert [f.passed for f in result.feedback] == [False, True, True]
    assert check("refdemo.double", quadruple).feedback[0].passed


def test_mistakes_are_named_from_the_store(topic):
    result = check("refdemo.double", topic._triple)
    assert "tripled instead" in result.feedback[0].message

    def mistake_is_quadruple(header, entries):
        row = entries["refdemo.double"]["mistakes"][0]
        x = get("refdemo.double").cases[0].make_inputs()[0]
        row[0]["value"] = observe.Observation("value", value=4 * x).to_json()["value"]

    _rewrite(topic, mistake_is_quadruple)
    result = check("refdemo.double", quadruple)
    assert "tripled instead" in result.feedback[0].message


def test_an_edited_module_is_judged_live(topic):
    _rewrite(topic, _poison_reference)
    path = Path(topic.__file__)
    path.write_text(path.read_text() + "\n# edited after its store was written\n")
    _fresh_caches()
    assert stored_outputs(get("refdemo.double")) is None
    assert check("refdemo.double", topic.double).passed
    assert stale([topic.__name__]) == [store_path(topic.__file__)]


@pytest.mark.parametrize("setting", ["jax", "numpy", "jax_enable_x64", "format"])
def test_other_versions_or_settings_are_judged_live(topic, setting):
    def elsewhere(header, entries):
        _poison_reference(header, entries)
        header["fingerprint"]["settings"][setting] = "another"

    _rewrite(topic, elsewhere)
    assert stored_outputs(get("refdemo.double")) is None
    assert check("refdemo.double", topic.double).passed


def test_a_changed_jaxcourse_module_is_judged_live(topic):
    def observe_changed(header, entries):
        _poison_reference(header, entries)
        sources = header["fingerprint"]["sources"]
        # It makes the observations.
        assert "jaxcourse.exercises.checking.observe" in sources
        sources["jaxcourse.exercises.checking.observe"] = "0" * 64

    _rewrite(topic, observe_changed)
    assert stored_outputs(get("refdemo.double")) is None
    assert check("refdemo.double", topic.double).passed


def test_another_exercise_under_the_same_id_is_judged_live(topic):
    import dataclasses

    exercise = get("refdemo.double")
    cases = [dataclasses.replace(c, seed=c.seed + 7) for c in exercise.cases]
    other = dataclasses.replace(exercise, cases=cases)
    assert references_writer.changes(topic.__name__) == []
    register(other)
    assert stored_outputs(other) is None
    assert check("refdemo.double", topic.double).passed
    # The writer sees it too: the store is rewritten, not reported fresh.
    assert references_writer.changes(topic.__name__) == [
        "refdemo.double: its functions or cases changed"]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00\xff not a store \n at all")


def _flipped(path: Path) -> None:
    # One byte of the body changes; the header's checksum no longer matches.
    text = path.read_text()
    i = text.index('"data":"') + 8
    path.write_text(text[:i] + ("A" if text[i] != "A" else "B") + text[i + 1:])


def _empty(path: Path) -> None:
    path.write_text("")


def _bad_entry(module) -> None:
    def bogus(header, entries):
        _poison_reference(header, entries)
        entries["refdemo.double"]["reference"][1]["kind"] = "bogus"

    _rewrite(module, bogus)


def _not_a_dict(module) -> None:
    # A list where the entries go, under a header whose checksum is right.
    path = store_path(module.__file__)
    header = json.loads(path.read_text().split("\n", 1)[0])
    body = "[1, 2, 3]\n"
    header["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    path.write_text(json.dumps(header) + "\n" + body)
    _fresh_caches()


@pytest.mark.parametrize("damage", [_truncate, _garbage, _flipped, _empty])
def test_a_corrupt_store_is_judged_live(topic, damage):
    damage(store_path(topic.__file__))
    _fresh_caches()
    assert stored_outputs(get("refdemo.double")) is None
    assert check("refdemo.double", topic.double).passed
    assert "tripled instead" in check("refdemo.double", topic._triple).messages[0]


@pytest.mark.parametrize("damage", [_bad_entry, _not_a_dict])
def test_a_well_formed_but_wrong_store_is_judged_live(topic, damage):
    damage(topic)
    assert stored_outputs(get("refdemo.double")) is None
    assert check("refdemo.double", topic.double).passed


def test_a_missing_store_is_judged_live(topic):
    store_path(topic.__file__).unlink()
    _fresh_caches()
    assert stored_outputs(get("refdemo.double")) is None
    assert check("refdemo.double", topic.double).passed
    assert stale([topic.__name__]) == [store_path(topic.__file__)]


def test_the_fingerprint_names_what_the_module_imports(topic):
    fingerprint = references.fingerprint(topic)
    sources = fingerprint["sources"]
    assert topic.__name__ in sources
    assert "jaxcourse.exercises.checking.observe" in sources
    # Wording and display never change an output: editing them keeps stores.
    assert "jaxcourse.messages" not in sources
    assert "jaxcourse.exercises.widgets.panel" not in sources
    assert fingerprint["platform"] == "cpu"


def test_imports_are_found_in_every_form():
    roots = {"jaxcourse": references._package_root()}
    found = references._imported(textwrap.dedent("""
        from jaxcourse import (
            devices,
            mlp as m,  # a comment
        )
        import jaxcourse.collectives as c, os
        from .checking import judging
        from .widgets.explorers_sharding import COLLECTIVES
        WORKER = '''
        from jaxcourse.processes import new_tag
        '''
        from numpy import array
    """), "jaxcourse.exercises", roots)
    assert found >= {"jaxcourse", "jaxcourse.devices", "jaxcourse.mlp",
                     "jaxcourse.collectives", "jaxcourse.exercises",
                     "jaxcourse.exercises.checking.judging",
                     "jaxcourse.exercises.widgets.explorers_sharding",
                     "jaxcourse.processes"}
    assert all(name.startswith("jaxcourse") for name in found)


def test_verification_finds_a_wrong_stored_output(topic):
    assert references_writer.verify_store(topic.__name__) == {"refdemo.double": []}
    _rewrite(topic, _poison_reference)
    problems = references_writer.verify_store(topic.__name__)["refdemo.double"]
    assert len(problems) == 1 and problems[0].startswith("case 1, reference: ")


def test_a_store_with_windows_line_endings_is_used(topic):
    path = store_path(topic.__file__)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    module = Path(topic.__file__)
    module.write_bytes(module.read_bytes().replace(b"\n", b"\r\n"))
    _fresh_caches()
    assert stored_outputs(get("refdemo.double")) is not None
