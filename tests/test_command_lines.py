"""What an adopter meets first: the licence, the version, and the command lines.

Every ``python -m jaxcourse.<command>`` answers ``--version`` and ``--help``
and ends with a documented exit code and a message, never a traceback, for a
bad option, a missing path or a missing program (jaxcourse/cli.py, README's
"Command lines"); long jobs report progress (jaxcourse/progress.py), one line
per item where the output is not a terminal; the grader's tables line up
under Chinese names and open in Excel.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

import jaxcourse
from jaxcourse import cli, hub, progress, zh_hans
from jaxcourse.data import cli as data_cli
from jaxcourse.exercises.authoring import cli as authoring
from jaxcourse.exercises.authoring import warm_cache
from jaxcourse.exercises.checking.references import writer
from jaxcourse.exercises.grading import cli as grading
from jaxcourse.exercises.grading import nbgrader_scores
from jaxcourse.exercises.grading.rows import SubmissionResult
from jaxcourse.exercises.grading.tables import summary_text, text_width, write_tables
from jaxcourse.exercises.release import cli as release
from jaxcourse.i18n import cli as i18n_cli
from jaxcourse.slurm import cli as slurm_cli
from jaxcourse.transformer import planning, slice_plans

ROOT = Path(__file__).resolve().parents[1]
VERSION = jaxcourse.__version__

# Every command line of the course, as README's "Command lines" lists them.
MAINS = {
    "jaxcourse.data": data_cli.main,
    "jaxcourse.exercises.grading": grading.main,
    "jaxcourse.exercises.release": release.main,
    "jaxcourse.exercises.authoring": authoring.main,
    "jaxcourse.exercises.authoring.warm_cache": warm_cache.main,
    "jaxcourse.exercises.checking.references": writer.main,
    "jaxcourse.exercises.grading.nbgrader_scores": nbgrader_scores.main,
    "jaxcourse.slurm": slurm_cli.main,
    "jaxcourse.hub": hub.main,
    "jaxcourse.i18n": i18n_cli.main,
    "jaxcourse.zh_hans": zh_hans.main,
    "jaxcourse.transformer.planning": planning.main,
    "jaxcourse.transformer.slice_plans": slice_plans.main,
}


def readme_commands() -> set[str]:
    """The modules README's "Command lines" names (``.x`` is ``jaxcourse.x``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Command lines"):]
    listed = section[section.index("Every command ("):section.index(") prints")]
    names = re.findall(r"`(?:python -m )?(jaxcourse[\w.]*|\.[\w.]+)`", listed)
    return {name if name.startswith("jaxcourse") else "jaxcourse" + name
            for name in names}


def test_the_readme_names_every_command_line_and_only_those() -> None:
    # Three modules moved with the engine's subpackages and the README kept
    # their old paths, each "No module named ..." (#67).
    listed = readme_commands()
    assert listed == set(MAINS), (sorted(listed - set(MAINS)),
                                  sorted(set(MAINS) - listed))
    for name in listed:
        spec = importlib.util.find_spec(name)
        assert spec is not None, name
        if spec.submodule_search_locations is not None:  # a package runs its __main__
            assert importlib.util.find_spec(f"{name}.__main__") is not None, name


# ---- licence, citation, one version ----------------------------------------------


def test_the_licence_the_citation_and_the_version_agree() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # An SPDX expression and the file it names (setuptools >= 77, no warning).
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE", "NOTICE"]
    notice = (ROOT / "NOTICE").read_text()
    assert re.search(r"^Copyright \d{4} The JAX course authors$", notice, re.M)
    assert "Apache License, Version 2.0" in notice and "Chapter 9" in notice
    # Complete metadata: who, where, what (an index and a packager read these).
    assert project["authors"] and project["classifiers"] and project["keywords"]
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])
    # Chapter 8's script imports Orbax: an extra names it.
    assert any(r.startswith("orbax-checkpoint")
               for r in project["optional-dependencies"]["checkpoint"])
    licence = (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence
    # One source: pyproject reads jaxcourse/version.py, and holds no number itself.
    assert project["dynamic"] == ["version"] and "version" not in project
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    assert setuptools["setuptools"]["dynamic"]["version"] == {
        "attr": "jaxcourse.version.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(citation)
    assert all("name" in a or "family-names" in a for a in citation["authors"])
    assert str(citation["version"]) == VERSION
    assert citation["license"] == "Apache-2.0"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{VERSION}]" in changelog


def test_notebooks_and_launch_buttons_name_the_release_not_main() -> None:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"]["branch"] == f"v{VERSION}"
    address = f"git+{config['repository']['url']}@v{VERSION}"
    firsts = []
    for notebook in sorted(ROOT.glob("*/**/*.ipynb")):
        if notebook.parts[len(ROOT.parts)] not in ("book", "solutions", "exercises"):
            continue
        text = notebook.read_text(encoding="utf-8")
        if "find_spec(\\\"jaxcourse\\\") is None" in text:
            firsts.append(notebook)
            assert address in text and "@main" not in text, notebook
    assert len(firsts) > 50  # every chapter, solution and student notebook


# ---- --version, a bad option, --help ---------------------------------------------


@pytest.mark.parametrize("name", sorted(MAINS))
def test_every_command_prints_the_version(name: str, monkeypatch, capsys) -> None:
    # The commit comes from git; here a fixed one (this run starts no process).
    monkeypatch.setattr(cli, "course_commit", lambda changes=False: "0123abc")
    with pytest.raises(SystemExit) as done:
        MAINS[name](["--version"])
    assert done.value.code == cli.EXIT_OK
    assert capsys.readouterr().out == f"jaxcourse {VERSION} (commit 0123abc)\n"


@pytest.mark.parametrize("name", sorted(MAINS))
def test_a_bad_option_is_exit_code_2_with_the_usage(name: str, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        MAINS[name](["--no-such-option"])
    assert done.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and "error: " in err and "Traceback" not in err


# Slurm's own commands (squeue ...) print Slurm's own help: a process, not here.
@pytest.mark.parametrize("command", [c for c in slurm_cli._HELP
                                     if c not in slurm_cli.PASSED_ON])
def test_each_slurm_command_has_its_own_help(command: str, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        slurm_cli.main([command, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(
        f"usage: python -m jaxcourse.slurm {command}")


def test_each_hub_command_has_its_own_help(capsys) -> None:
    for command, (line, _) in hub._COMMANDS.items():
        with pytest.raises(SystemExit) as done:
            hub.main([command, "--help"])
        assert done.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: python -m jaxcourse.hub {command}")
        assert line in out.replace("\n", " ").replace("  ", " ")
    with pytest.raises(SystemExit):
        hub.main(["--help"])
    listed = capsys.readouterr().out
    assert all(f"\n    {c} " in listed for c in hub._COMMANDS), listed


def test_the_grader_names_a_missing_path_and_needs_out(tmp_path: Path,
                                                      capsys) -> None:
    missing = tmp_path / "submisions"  # a typo
    with pytest.raises(SystemExit) as done:
        grading.main([str(missing), "--out", str(tmp_path / "out")])
    assert done.value.code == cli.EXIT_USAGE
    assert f"no such file or folder: {missing}" in capsys.readouterr().err
    (tmp_path / "class").mkdir()
    with pytest.raises(SystemExit) as done:
        grading.main([str(tmp_path / "class")])  # --out is never guessed
    assert done.value.code == cli.EXIT_USAGE
    assert "--out" in capsys.readouterr().err
    # A folder without notebooks: said, exit code 2, nothing written.
    assert grading.main([str(tmp_path / "class"), "--out",
                         str(tmp_path / "out")]) == cli.EXIT_USAGE
    assert "no notebooks to grade in" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_grader_refuses_a_misspelled_chapter_or_exercise(tmp_path: Path,
                                                             capsys) -> None:
    # A typo graded nothing, called every submission crashed and wrote their
    # feedback (--chapter), or ended in a KeyError's traceback (--exercises).
    (tmp_path / "class").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "class" / "alice.ipynb")
    out = tmp_path / "out"
    for typo, said in (
            (["--chapter", "03_bayse"],
             "no chapter '03_bayse': did you mean 03_bayes?"),
            (["--chapter", "bayes"], "no chapter 'bayes': "),
            (["--exercises", "bayes.sample_betas", "bayes.sample_beta"],
             "no exercise 'bayes.sample_beta': did you mean bayes.sample_betas? "
             "one of bayes.batched_log_joint,"),
            (["--chapter", "03_bayes", "--exercises", "mlp.relu"],
             "no exercise of 03_bayes 'mlp.relu': ")):
        assert grading.main([str(tmp_path / "class"), "--out", str(out), *typo]
                            ) == cli.EXIT_USAGE, typo
        err = capsys.readouterr().err
        assert err.startswith(f"error: {said}") and err.count("\n") == 1, err
        assert not out.exists(), typo


def test_run_turns_errors_into_codes(capsys) -> None:
    def raising(error: BaseException):
        def main() -> int:
            raise error
        return main

    assert cli.run(raising(cli.MissingToolError("bwrap is missing"))) == 3
    assert capsys.readouterr().err == "error: bwrap is missing\n"
    assert cli.run(raising(cli.UsageError("no such notebook: a"))) == 2
    assert cli.run(raising(jaxcourse.CourseError("sbatch refused"))) == 1
    assert cli.run(raising(KeyboardInterrupt())) == 130
    assert cli.run(lambda: None) == 0
    with pytest.raises(ZeroDivisionError):  # a bug of the course keeps its traceback
        cli.run(raising(ZeroDivisionError()))


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300,
                          env={**os.environ, **(env or {})})


def test_missing_programs_are_exit_code_3_without_a_traceback(tmp_path: Path) -> None:
    # `hub grade` where bubblewrap is missing: the grader's refusal, not a traceback.
    folder = tmp_path / "hub" / "course" / "submitted" / "03_bayes"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "exercises" / "03_bayes_exercises.ipynb",
                folder / "student1.ipynb")
    graded = _run("-m", "jaxcourse.hub", "grade", env={
        "JAX_COURSE_HUB_DIR": str(tmp_path / "hub"),
        "JAXCOURSE_BWRAP": str(tmp_path / "no-bwrap")})
    assert graded.returncode == cli.EXIT_MISSING_TOOL, graded.stderr[-2000:]
    assert graded.stderr.startswith("error: no sandbox for the submissions: ")
    assert "Traceback" not in graded.stderr
    # Slurm's commands where Slurm is not installed.
    bare = tmp_path / "bin"
    bare.mkdir()
    queued = _run("-m", "jaxcourse.slurm", "squeue", env={
        "PATH": str(bare), "JAX_COURSE_SLURM_DIR": str(tmp_path / "slurm")})
    assert queued.returncode == cli.EXIT_MISSING_TOOL, queued.stderr[-2000:]
    assert "squeue not found" in queued.stderr and "make cluster" in queued.stderr
    assert "Traceback" not in queued.stderr
    # --version from a real process: git gives the checkout's commit.
    version = _run("-m", "jaxcourse.exercises.grading", "--version")
    assert version.returncode == 0
    assert re.fullmatch(rf"jaxcourse {re.escape(VERSION)}( \(commit [0-9a-f]{{40}}"
                        r"(\+modified)?\))?\n", version.stdout), version.stdout


def test_make_help_lists_every_documented_target() -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    listed = subprocess.run([make, "-s", "help"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert listed.returncode == 0, listed.stderr
    makefile = (ROOT / "Makefile").read_text()
    documented = re.findall(r"^([a-z][a-z-]*):.*## ", makefile, re.MULTILINE)
    assert {"setup", "test", "test-fast", "book", "release", "help"} <= set(documented)
    shown = [line.split()[1] for line in listed.stdout.splitlines()]
    assert shown == documented


# ---- progress --------------------------------------------------------------------


def test_progress_off_a_terminal_is_one_line_per_item() -> None:
    stream = io.StringIO()  # not a terminal: no bar, no carriage return
    with progress.Progress(3, "grading", stream=stream) as meter:
        meter.done("alice", "graded")
        meter.done("alice", "graded")  # reported twice (Slurm): counted once
        meter.done("王小明", "timed out")
        meter.done("bob")
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and len(lines) == 3
    assert re.fullmatch(r"grading 1/3: alice graded \(about \d+ (s|min) left\)",
                        lines[0]), lines
    assert re.fullmatch(r"grading 2/3: 王小明 timed out \(about \d+ (s|min) left\)",
                        lines[1]), lines
    assert lines[2] == "grading 3/3: bob"  # nothing left to estimate
    assert progress.remaining_text(40) == "about 40 s"
    assert progress.remaining_text(600) == "about 10 min"
    assert progress.remaining_text(3 * 3600) == "about 3.0 h"


def _unreadable_class(folder: Path) -> None:
    """Three submissions that never reach a process: the grader's own rows."""
    folder.mkdir()
    (folder / "alice.ipynb").write_text("", encoding="utf-8")
    (folder / "王小明.ipynb").write_text("{not json", encoding="utf-8")
    (folder / "李華.ipynb").write_text("[]", encoding="utf-8")


def test_a_class_with_chinese_names_graded_off_a_terminal(tmp_path: Path,
                                                          capsys) -> None:
    _unreadable_class(tmp_path / "class")
    out = tmp_path / "grades"
    rows = grading.grade([tmp_path / "class"], chapter="03_bayes", out_dir=out)
    err = capsys.readouterr().err
    # One line per submission as each is done, with the count and the time left.
    lines = [ln for ln in err.splitlines() if ln.startswith("grading ")]
    assert [ln.split(":")[0] for ln in lines] == [
        "grading 1/3", "grading 2/3", "grading 3/3"]
    assert {ln.split(": ", 1)[1].split(" (")[0] for ln in lines} == {
        "alice unreadable", "王小明 unreadable", "李華 unreadable"}
    # The table lines up: every row's score starts under its heading's end.
    table = summary_text(rows).splitlines()
    header = next(ln for ln in table if ln.startswith("submission"))
    body = [ln for ln in table if ln.split(" ")[0] in ("alice", "王小明", "李華")]
    assert len(body) == 3
    ends = {text_width(ln[:ln.index("total") + len("total")]) for ln in [header]}
    for line in body:
        cut = line.rindex("0.00") + len("0.00")  # the total's column
        ends.add(text_width(line[:cut]))
    assert len(ends) == 1, table
    assert text_width("王小明") == 6 and text_width("alice") == 5
    # grades.csv opens in Excel as written: UTF-8 with a byte-order mark.
    write_tables(rows, out)
    raw = (out / "grades.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    with open(out / "grades.csv", encoding="utf-8-sig", newline="") as handle:
        names = [row["submission"] for row in csv.DictReader(handle)]
    assert sorted(names) == sorted(["alice", "王小明", "李華"])


def test_the_report_names_the_course_and_the_release(tmp_path: Path,
                                                      monkeypatch) -> None:
    monkeypatch.setattr(grading, "course_commit", lambda changes=False: "0123abc")
    folder = tmp_path / "class"
    folder.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["jaxcourse"] = {"release": {"version": "0.1.9", "commit": "abc"}}
    nbformat.write(nb, folder / "张伟.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), folder / "bob.ipynb")
    stamp = grading.course_stamp([folder])
    assert stamp["version"] == VERSION
    assert stamp["releases"] == [{"version": "0.1.9", "commit": "abc",
                                  "submissions": ["张伟"]}]
    text = grading.stamp_text(stamp)
    assert f"graded with the JAX course {VERSION} (commit 0123abc)" in text
    assert "1 submission from the class release of 0.1.9 (commit abc)" in text
    assert "not the grader's version" in text
    rows = [SubmissionResult("张伟", {"bayes.a": 1.0}, "graded")]
    _, json_path = write_tables(rows, tmp_path / "out", course=stamp)
    assert json.loads(json_path.read_text(encoding="utf-8"))["course"] == stamp


def test_the_commit_is_read_from_gits_files(tmp_path: Path) -> None:
    git, commit = tmp_path / ".git", "a" * 40
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(commit + "\n")
    assert cli._head_commit(git) == commit
    # A fresh clone keeps its refs packed; a detached HEAD names the commit.
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{'b' * 40} "
                                     "refs/heads/main\n")
    assert cli._head_commit(git) == "b" * 40
    (git / "HEAD").write_text("c" * 40 + "\n")
    assert cli._head_commit(git) == "c" * 40
    # A worktree's .git is a file that points at its folder.
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / ".git").write_text(f"gitdir: {git}\n")
    assert cli._git_dir(tmp_path / "tree") == git


def test_a_slurm_grading_reports_each_row_as_its_task_writes_it(
        tmp_path: Path, monkeypatch) -> None:
    from jaxcourse.exercises.grading import slurm as grading_slurm
    from jaxcourse.slurm import jobs

    work = tmp_path / "slurm" / "run"
    work.mkdir(parents=True)
    written = [SubmissionResult(n, {"bayes.a": 1.0}, "graded").to_dict()
               for n in ("alice", "李華")]
    # The array as squeue would show it: running for two looks, then done.
    looks = iter([[jobs.JobState("7_0", "RUNNING")], [jobs.JobState("7_0", "RUNNING")],
                  [jobs.JobState("7_0", "COMPLETED")]])
    monkeypatch.setattr(jobs, "job_states", lambda job_id: next(looks))
    stream = io.StringIO()
    meter = progress.Progress(2, "grading", stream=stream)

    def each_poll() -> None:
        # A task writes one more row between two looks at the job.
        if written:
            with open(work / "rows-0.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(written.pop(0), ensure_ascii=False) + "\n")
        grading_slurm._report_rows(work, lambda name, row: meter.done(name, row.status))

    states = jobs.wait("7", timeout=30, poll=0.0, each_poll=each_poll)
    assert [s.state for s in states] == ["COMPLETED"]
    lines = stream.getvalue().splitlines()
    assert [ln.split(" (")[0] for ln in lines] == [
        "grading 1/2: alice graded", "grading 2/2: 李華 graded"]
