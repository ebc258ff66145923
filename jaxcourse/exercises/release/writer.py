"""A class release: what students get for an assignment, without the answers.

Written by :func:`write_release` (``python -m jaxcourse.exercises.release DIR``,
:mod:`jaxcourse.exercises.release.cli`), ``DIR`` holds:

- ``exercises/``: the chapters' student notebooks (and their Chinese
  editions), whose first cell takes the course from the release, never from
  the internet
  (:func:`~jaxcourse.exercises.authoring.release_stubs.release_install_cell`);
- ``jaxcourse/``: the engine, whole, with the release's settings
  (:mod:`jaxcourse.exercises.checking.class_release`): Show solution off, or on from
  ``--solutions-after`` once the teacher has published the solutions;
- ``solutions/``: the content package without any reference answer: a
  manifest of the released chapters, each module that defines exercises with
  its references' bodies withheld
  (:func:`~jaxcourse.exercises.authoring.release_stubs.stub_source`), the checks'
  helpers and named mistakes those modules import, each mistake's body
  withheld too (:mod:`~jaxcourse.exercises.authoring.answerless`: a mistake's helpers
  compute the right answer first; a Check judges from its stored output),
  the texts of the editions, and the stored reference outputs,
  *complete* (what the course leaves out as too large to store is computed
  here, in a fresh process with the chapter's devices), under a fingerprint of
  the release's own files, so that every Check, and the named mistakes, run
  from them;
- ``pyproject.toml`` (``pip install DIR`` installs the release as the
  ``jaxcourse`` distribution, for a JupyterHub image) and a
  ``jaxcourse-<version>.dist-info`` that declares the manifest when ``DIR``
  is simply on the path.

The stored outputs apply to the JAX, jaxlib and NumPy of the machine that
wrote the release, on CPU: make it in the environment the students use. A
Check elsewhere raises :class:`~jaxcourse.exercises.checking.class_release.
ReferenceWithheldError`, which says what differs. A chapter whose stored
outputs cannot be completed is left out, and the command says why (the
settings record it). The grader is the course's own, with its references:
grade the students' notebooks with the full course, not with the release.
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib
import importlib.metadata
import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import nbformat

from ... import __version__, course
from ...cli import course_commit
from ...course import Topic
from ...progress import remaining_text
from ..authoring.answerless import (
    answer_functions,
    imported_names,
    store_text,
    texts_without_solutions,
    withhold,
)
from ..authoring.masters import ROOT
from ..authoring.release_stubs import release_cells, stub_source
from ..authoring.students import out_of_date
from ..checking import references
from ..checking.class_release import SETTINGS_NAME
from ..checking.references import writer
from ..checking.registry import _REGISTRY, EDITION_FOLDERS, exercise_ids

__all__ = [
    "ReleaseError",
    "chapter_of",
    "reference_names",
    "resolve_chapters",
    "write_release",
]

#: A file only a release has, beside the settings: what the release is.
README = """\
# A class release of the JAX course

Written by `python -m jaxcourse.exercises.release` on {created} for the
chapters {chapters}. It holds the student notebooks (`exercises/`), the
course's engine (`jaxcourse/`) and its exercises without any reference answer
(`solutions/`): each Check compares an answer with the reference outputs
stored in `solutions/*_outputs.json`, computed with JAX {jax} on CPU.

Open the notebooks from `exercises/` (their first cell finds this folder), or
install the release into the students' environment with `pip install .` in
this folder. Do not install the full course there: it holds the answers.
Show solution: {solutions}.

Written from the JAX course {version} (commit {commit}); the student
notebooks record it too (metadata `jaxcourse.release`), and the grader
prints it in its report.
"""


class ReleaseError(Exception):
    """A release cannot be written as asked; the message says why."""


def chapter_of(topic: Topic) -> str:
    """Return a topic's chapter name: its exercise notebook's stem (``03_bayes``)."""
    return Path(topic.exercises).stem.removesuffix("_exercises")


def resolve_chapters(names: Sequence[str] | None) -> list[Topic]:
    """Return the topics of ``names`` (chapters such as ``03_bayes``, or keys).

    Every topic of the course when ``names`` is empty or None.

    Raises
    ------
    ReleaseError
        If a name is neither a chapter nor a topic key.
    """
    topics = list(course.topics())
    if not names:
        return topics
    chosen = []
    for name in names:
        match = [t for t in topics if name in (chapter_of(t), t.key)]
        if not match:
            known = ", ".join(chapter_of(t) for t in topics)
            raise ReleaseError(f"no chapter {name!r}; the course has: {known}")
        chosen += [t for t in match if t not in chosen]
    return chosen


def reference_names(module_name: str) -> list[str]:
    """Return the reference functions of the exercises ``module_name`` defines."""
    exercise_ids()  # every topic's module imported, so every exercise registered
    return sorted({e.reference.__name__ for e in _REGISTRY.values()
                   if e.reference.__module__ == module_name})


def _content_package(topics: Sequence[Topic]) -> tuple[str, Path]:
    names = {t.module.split(".", 1)[0] for t in topics}
    if len(names) != 1:
        raise ReleaseError(f"the topics come from several packages: {sorted(names)}")
    name = names.pop()
    return name, _package_folder(name)


def _helpers(module: ModuleType, packages: Sequence[str],
             topic_modules: set[str]) -> list[str]:
    """Return the modules of ``packages`` that ``module`` imports, directly or not.

    Raises
    ------
    ReleaseError
        If one of them defines exercises: its answers would ship as a helper.
    """
    found = [name for name in references._dependencies(module)
             if name.split(".", 1)[0] in packages]
    answers = sorted(set(found) & topic_modules)
    if answers:
        raise ReleaseError(f"{module.__name__} imports {answers}, which hold "
                           "reference answers: move what it needs to a helper")
    return found


def _module_file(package_dir: Path, name: str, package: bool = False) -> Path:
    if package:  # the package's own __init__
        return package_dir.joinpath(*name.split(".")[1:], "__init__.py")
    return package_dir.joinpath(*name.split(".")[1:]).with_suffix(".py")


def _package_folder(name: str) -> Path:
    return Path(importlib.import_module(name).__file__).resolve().parent


# ---- the stored outputs, complete -------------------------------------------------


def _completed_entries(module: ModuleType, devices: int, complete: bool) -> dict:
    """Return the course's store entries for ``module``, completed.

    With ``complete``, the observations the store left out (too large to
    store) are computed in a fresh process with ``devices`` devices.
    """
    store = references._read(references.store_path(module.__file__))
    if store is None:
        raise ReleaseError(f"{module.__name__} has no stored outputs: run `python -m "
                           "jaxcourse.exercises.authoring` first")
    entries = copy.deepcopy(store.entries)
    if complete and _lacking(module, entries):
        filled = writer.complete_in_process(module.__name__, module.__file__, devices)
        for exercise_id, fill in filled.items():
            entry = entries[exercise_id]
            for case, obs in fill["reference"].items():
                entry["reference"][int(case)] = obs
            for number, row in fill["mistakes"].items():
                for case, obs in row.items():
                    entry["mistakes"][int(number)][int(case)] = obs
    return entries


def _store_text(name: str, release_file: Path, entries: dict) -> str:
    """Return a release's store: ``entries`` under its own files' fingerprint.

    The fingerprint is the release's version of module ``name`` (its digest,
    the release's helpers and manifest), so a Check in the release finds the
    store fresh; written once every file it covers is in place.
    """
    try:
        return store_text(name, release_file, entries)
    except FileNotFoundError as err:
        raise ReleaseError(f"not in the release: {err}") from None


def _lacking(module: ModuleType, entries: dict) -> list[str]:
    """Name what a Check would need the reference for: observations not stored."""
    lacking = []
    for exercise in _REGISTRY.values():
        if exercise.reference.__module__ != module.__name__:
            continue
        entry = references._entry(entries, exercise.id) or {}
        cases = exercise.cases
        for i, obs in enumerate(entry.get("reference", [None] * len(cases))):
            if obs is None:
                lacking.append(f"{exercise.id}, case {i + 1}: the reference's output")
        for number, row in enumerate(entry.get("mistakes", [])):
            for i, obs in enumerate(row):
                if obs is None and references._looks_up_mistakes(cases[i]):
                    lacking.append(f"{exercise.id}, case {i + 1}: mistake "
                                   f"{number + 1}'s output")
    return lacking


# ---- notebooks and the package's metadata -----------------------------------------


def _notebooks(topic: Topic) -> list[tuple[Path, Path]]:
    """Return ``topic``'s student notebook and its editions: (source, target)."""
    student = Path(topic.student)
    pairs = [(ROOT / student, student)]
    for folder in EDITION_FOLDERS:
        edition = student.parent / folder / student.name
        if (ROOT / edition).is_file():
            pairs.append((ROOT / edition, edition))
    missing = [str(source) for source, _ in pairs if not source.is_file()]
    if missing:
        raise ReleaseError(f"no student notebook {missing[0]}: a release is written "
                           "from a checkout of the course")
    return pairs


def _release_notebook(source: Path, stamp: dict | None = None) -> str:
    notebook = nbformat.read(source, as_version=4)
    if stamp is not None:
        # The grader reads it from each submission: which release it came from.
        notebook.metadata.setdefault("jaxcourse", {})["release"] = stamp
    release_cells(notebook)
    text = nbformat.writes(notebook) + "\n"
    if "git+" in text:
        raise ReleaseError(f"{source.name} installs the public course in a cell the "
                           "release does not recognise (release_stubs.INSTALL_BLOCK)")
    return text


def _pyproject(package: str, helpers: Sequence[str] = ()) -> str:
    meta = importlib.metadata.distribution("jaxcourse")
    requires = [r for r in meta.requires or [] if "extra ==" not in r]
    included = ["jaxcourse*", *(f"{name}*" for name in (package, *helpers))]
    return (
        '[build-system]\nrequires = ["setuptools>=68"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "jaxcourse"\nversion = "{__version__}"\n'
        'description = "A class release of the JAX course: exercises and checks, '
        'without the reference answers."\nrequires-python = ">=3.11"\n'
        f"dependencies = {json.dumps(requires)}\n\n"
        f'[project.entry-points."{course.ENTRY_POINT_GROUP}"]\n'
        f'course = "{package}:TOPICS"\n\n'
        '[tool.setuptools.packages.find]\n'
        f"include = {json.dumps(included)}\n\n"
        "[tool.setuptools.package-data]\n"
        f'"jaxcourse.exercises" = ["{SETTINGS_NAME}"]\n'
        f'{package} = ["*_outputs.json", "*_texts.json", "*_solutions.json"]\n'
    )


def _dist_info(out: Path, package: str) -> None:
    # Python finds a distribution's entry points in any folder on its path:
    # with DIR on the path, the engine finds the release's manifest (and,
    # being first, the release's rather than an installed course's).
    # The version of the code copied, not the installed metadata's (an
    # editable install keeps the version it was installed with).
    version = __version__
    info = out / f"jaxcourse-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: jaxcourse\nVersion: {version}\n",
        encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[{course.ENTRY_POINT_GROUP}]\ncourse = {package}:TOPICS\n", encoding="utf-8")


def _manifest(topics: Sequence[Topic], helpers: Sequence[str] = ()) -> str:
    rows = "".join(f"    {t!r},\n" for t in topics)
    return (
        '"""The manifest of a class release: its chapters, and no reference answer.\n\n'
        "Written by ``python -m jaxcourse.exercises.release``.\n"
        '"""\n\nfrom jaxcourse.course import Topic\n\n'
        f"TOPICS: tuple[Topic, ...] = (\n{rows})\n"
        + (f"{course.HELPERS_ATTRIBUTE} = {tuple(helpers)!r}\n" if helpers else "")
    )


# ---- writing a release ------------------------------------------------------------


def _check_folder(out: Path, force: bool) -> None:
    """Refuse a folder that is no place for a release (nothing is written yet)."""
    out = out.resolve()
    if out.is_relative_to(ROOT.resolve()):
        # Its packages would shadow the course's, and its files join the lint.
        raise ReleaseError(f"{out} is inside the course's checkout: write the "
                           "release elsewhere")
    if out.exists() and any(out.iterdir()) and not (
            force and (out / "jaxcourse" / "exercises" / SETTINGS_NAME).is_file()):
        raise ReleaseError(f"{out} is not empty (--force replaces an earlier "
                           "release, and nothing else)")


def _check_course(topics: Sequence[Topic], modules: dict, complete: bool) -> None:
    """Refuse a course whose student notebooks or stored outputs are stale."""
    stale = set(out_of_date())
    names = [Path(t.student).name for t in topics if Path(t.student).name in stale]
    if names:
        raise ReleaseError(f"out of date: {', '.join(names)}: run `python -m "
                           "jaxcourse.exercises.authoring` first")
    for name in modules if complete else ():
        why = writer.changes(name)
        if why:
            raise ReleaseError(f"the stored outputs of {name} are out of date "
                               f"({', '.join(why)}): run `python -m "
                               "jaxcourse.exercises.authoring` first")


def write_release(
    out: Path,
    chapters: Sequence[str] | None = None,
    *,
    solutions_after: dt.date | None = None,
    complete: bool = True,
    force: bool = False,
    echo: Callable[[str], None] | None = print,
    changes: bool = False,
) -> dict:
    """Write a class release of ``chapters`` to ``out``; return its settings.

    Parameters
    ----------
    out : Path
        The release's folder: absent or empty (or, with ``force``, an
        earlier release, replaced).
    chapters : sequence of str, optional
        Chapters (``03_bayes``) or topic keys (``bayes``); by default all.
    solutions_after : datetime.date, optional
        From this day on, Show solution shows the solutions that
        :func:`publish_solutions` adds; by default never.
    complete : bool
        Compute the outputs the course leaves out as too large to store (a
        fresh process per module that lacks some). Without it, the cases
        that lack them need the reference, which the release does not hold,
        and the stores are taken as they are, fresh or not: only for tests of
        the release's files.
    force : bool
        Replace an earlier release in ``out``.
    echo : callable, optional
        Called with one line per step; None to stay quiet.
    changes : bool
        Ask git whether the checkout differs from its commit (a process), and
        record ``+modified`` after the commit if it does.

    Returns
    -------
    dict
        The settings written (``chapters``, ``excluded`` with the reasons).

    Raises
    ------
    ReleaseError
        When the course's stored outputs or student notebooks are out of
        date, a helper imports a module holding answers, or ``out`` is not
        a place for a release.
    """
    say = echo or (lambda _line: None)
    topics = resolve_chapters(chapters)
    package, package_dir = _content_package(course.topics())
    # The packages beside it that the exercises import (checks, mistakes).
    helper_packages = [p for p in course.content_packages() if p != package]
    folders = {p: _package_folder(p) for p in (package, *helper_packages)}
    topic_modules = {t.module for t in course.topics()}
    modules = {}  # module name -> (course module, devices)
    for topic in topics:
        module = course.load(topic.key)
        devices = max(topic.devices, modules.get(topic.module, (None, 1))[1])
        modules[topic.module] = (module, devices)
    _check_folder(out, force)
    _check_course(topics, modules, complete)
    final, out = out, out.parent / f".{out.name}.partial"
    if out.exists():
        shutil.rmtree(out)  # an interrupted run's
    out.mkdir(parents=True)
    engine = Path(course.__file__).resolve().parent
    shutil.copytree(engine, out / "jaxcourse", ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", SETTINGS_NAME, "*_solutions.json"))
    target = out / package
    target.mkdir()
    excluded: dict[str, str] = {}
    stores = []  # (module name, release file, completed entries)
    # The answer functions: the references, and the named mistakes, whose
    # helpers compute the right answer first. A Check judges from their
    # stored outputs, so the release holds none of them (answerless.withhold).
    answers = answer_functions()
    keep = set().union(*(imported_names(folder) for folder in folders.values()))
    started = time.monotonic()
    for done, (name, (module, devices)) in enumerate(sorted(modules.items()), 1):
        helpers = _helpers(module, tuple(folders), topic_modules)
        source = Path(module.__file__).read_text(encoding="utf-8")
        release_file = _module_file(target, name)
        release_file.parent.mkdir(parents=True, exist_ok=True)
        withheld = answers.get(name, set()) | set(reference_names(name))
        release_file.write_text(stub_source(source, sorted(withheld), keep),
                                encoding="utf-8")
        for helper in helpers:
            if helper == package:
                continue  # the package's __init__: the manifest, written below
            top = helper.split(".", 1)[0]
            source_file = _module_file(folders[top], helper, top == helper)
            destination = _module_file(out / top, helper, top == helper)
            destination.parent.mkdir(parents=True, exist_ok=True)
            text = source_file.read_text(encoding="utf-8")
            destination.write_text(withhold(text, answers.get(helper, set()), keep),
                                   encoding="utf-8")
        # The editions' texts of this module's topics (``<key>_zh_hans_texts``),
        # and those the module reads itself (``dp_zh_hans_texts``).
        stems = {name.rsplit(".", 1)[1], *(t.key for t in topics if t.module == name)}
        for texts in package_dir.glob("*_texts.json"):
            if any(texts.name.startswith(stem + "_") for stem in stems):
                (target / texts.name).write_text(texts_without_solutions(texts),
                                                 encoding="utf-8")
        entries = _completed_entries(module, devices, complete)
        lacking = _lacking(module, entries)
        stores.append((name, release_file, entries))
        # Completing a module's outputs is the slow part (a process each):
        # the count and the time left, from the pace so far.
        left = (time.monotonic() - started) / done * (len(modules) - done)
        say(f"release {done}/{len(modules)}: {name}: "
            f"{len(reference_names(name))} references withheld, "
            f"{len(helpers)} helper modules, outputs "
            f"{'complete' if not lacking else f'lacking {len(lacking)}'}"
            + (f" ({remaining_text(left)} left)" if done < len(modules) else ""))
        if lacking and complete:
            for topic in topics:
                if topic.module == name:
                    excluded[chapter_of(topic)] = "; ".join(lacking)
    released = [t for t in topics if chapter_of(t) not in excluded]
    stamp = {"version": __version__, "commit": course_commit(changes)}
    (target / "__init__.py").write_text(_manifest(released, helper_packages),
                                        encoding="utf-8")
    for name, release_file, entries in stores:  # every file they cover written
        references.store_path(release_file).write_text(
            _store_text(name, release_file, entries), encoding="utf-8")
    for topic in released:
        for source, relative in _notebooks(topic):
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            (out / relative).write_text(_release_notebook(source, stamp),
                                        encoding="utf-8")
            say(f"wrote {relative}")
    for chapter, why in excluded.items():
        say(f"left out {chapter}: its Check would need the reference ({why})")
    import jax

    settings = {
        "chapters": [chapter_of(t) for t in released],
        "solutions_after": solutions_after.isoformat() if solutions_after else None,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "excluded": excluded,
        "jax": jax.__version__,
        # Which course the release came from: the grader prints it.
        "course_version": stamp["version"],
        "course_commit": stamp["commit"],
    }
    (out / "jaxcourse" / "exercises" / SETTINGS_NAME).write_text(
        json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    (out / "pyproject.toml").write_text(_pyproject(package, helper_packages),
                                        encoding="utf-8")
    _dist_info(out, package)
    (out / "README.md").write_text(README.format(
        created=settings["created"][:10], chapters=", ".join(settings["chapters"]),
        jax=jax.__version__, version=stamp["version"],
        commit=stamp["commit"] or "unknown: not a git checkout",
        solutions=f"from {settings['solutions_after']}, once published "
        "(`--publish-solutions`)" if solutions_after else "off"), encoding="utf-8")
    # Written whole, then moved in place: an interrupted run leaves no
    # half-release where students look (nor removes the earlier one before).
    if final.exists():
        shutil.rmtree(final)
    out.rename(final)
    return settings
