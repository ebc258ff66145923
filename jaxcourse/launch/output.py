"""The ranks' output: read it, clean it, and say in words what went wrong.

The supervisor (:mod:`jaxcourse.launch.supervise`) hands every line a rank
prints to these helpers: :class:`MpiLines` puts ``mpirun``'s tagged chunks
back together per rank, :class:`GlooFilter` drops Gloo's connection chatter,
:func:`shorten` removes this machine's folders from paths, and the
``*_message`` functions turn a failure into the message a learner reads (the
rank, the reason, and the last frame of their own code).
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
from pathlib import Path
from typing import IO

__all__ = [
    "GlooFilter",
    "MpiLines",
    "SrunLines",
    "lost_a_peer",
    "mpi_failure_message",
    "rank_failure_message",
    "read_lines",
    "shorten",
    "tail",
    "timeout_message",
]

# Gloo announces every connection it makes on stdout ("[Gloo] Rank 3 is
# connected to 7 peer ranks. Expected number of connected peer ranks is : 7"),
# one message per device, from several threads at once: the messages arrive
# cut into their pieces and shuffled, one line per message, some lines holding
# only a number. They say nothing to a learner and are dropped (see
# GlooFilter).
_GLOO_OPENER = "[Gloo] Rank "
_GLOO_WORDS = re.compile(
    r"\[Gloo\] Rank | is connected to | peer ranks\. "
    r"|Expected number of connected peer ranks is : "
)
_GLOO_PIECES = re.compile(rf"(?:{_GLOO_WORDS.pattern}|\d+)*")

# mpirun --tag-output writes "[jobid,rank]<stdout>:text". It tags every
# chunk it reads from a rank, not every line: a line that a rank wrote in two
# pieces comes out with a second tag inside it, or split around another
# rank's output (see MpiLines).
_MPI_TAG = re.compile(r"\[\d+,(\d+)\]<(stdout|stderr)>:")

_SITE_PACKAGES = re.compile(r"[^\s\"']*[/\\]site-packages[/\\]")
_CARETS = re.compile(r"^\s*[~^]+\s*$")


class MpiLines:
    """Reassemble each rank's lines from mpirun's tagged output chunks.

    Every chunk that ``mpirun`` relays starts with its rank's tag; only the
    last chunk of one of mpirun's output lines ends with a newline. So in a
    line ``[1,1]<stdout>:process 1[1,2]<stdout>:process 2``, rank 2's line is
    complete while rank 1's continues in a later chunk.
    """

    def __init__(self) -> None:
        self.partial: dict[tuple[int, str], str] = {}

    def feed(self, line: str, stream: str = "stdout") -> list[tuple[int, str, str]]:
        """Return the ``(rank, stream, line)`` that ``line`` completes.

        ``stream`` (the pipe it came from) is not needed: the tags name it.
        """
        tags = list(_MPI_TAG.finditer(line))
        first = tags[0].start() if tags else len(line)
        done = []
        if first > 0 or not tags:  # mpirun's own words, shown as rank 0's
            done.append((0, "stderr", line[:first]))
        for tag, after in zip(tags, [*tags[1:], None], strict=True):
            key = (int(tag[1]), tag[2])
            text = line[tag.end() : after.start() if after else len(line)]
            self.partial[key] = self.partial.get(key, "") + text
            if after is None:
                done.append((*key, self.partial.pop(key)))
        return done

    def flush(self) -> list[tuple[int, str, str]]:
        """Return the unfinished lines, once mpirun has exited."""
        done = [(*key, text) for key, text in sorted(self.partial.items())]
        self.partial.clear()
        return done


#: srun relays a task's line in pieces of at most this many characters, each
#: with its own label: a piece of exactly this length is continued by the
#: task's next one (Slurm 22.05; a line of exactly 1024 characters is taken
#: for a piece too, and joined to the next).
SRUN_PIECE = 1024


class SrunLines:
    """Split ``srun --label`` output by task: ``"2: text"`` is rank 2's line.

    Unlike mpirun, srun relays lines, each on the stream (stdout or stderr)
    the task wrote it to; a line longer than :data:`SRUN_PIECE` characters
    arrives in pieces, which are joined again here. A line without a label is
    srun's own and is shown as rank 0's.
    """

    _LABEL = re.compile(r"^\s*(\d+): ?(.*)$")

    def __init__(self) -> None:
        self._pieces: dict[tuple[int, str], str] = {}  # a line not yet ended

    def feed(self, line: str, stream: str = "stdout") -> list[tuple[int, str, str]]:
        """Return the ``(rank, stream, line)`` that ``line`` completes (or none)."""
        hit = self._LABEL.match(line)
        if hit is None:
            return [(0, "stderr", line)]
        rank, text = int(hit[1]), hit[2]
        text = self._pieces.pop((rank, stream), "") + text
        if len(hit[2]) == SRUN_PIECE:
            self._pieces[(rank, stream)] = text
            return []
        return [(rank, stream, text)]

    def flush(self) -> list[tuple[int, str, str]]:
        """Return the pieces of lines that never got their end."""
        left = [(rank, stream, text) for (rank, stream), text in self._pieces.items()]
        self._pieces.clear()
        return left


class GlooFilter:
    """Recognize the lines of Gloo's connection messages in one stream.

    A message is written piece by piece (words and numbers) and ends with a
    newline, so ``k`` messages written at once give ``k`` lines made only of
    those pieces. A line is dropped if it is made only of such pieces and
    either holds one of Gloo's words or completes a message opened earlier.
    A line of the program's own (even just a number) is kept.
    """

    def __init__(self) -> None:
        self.open = 0  # messages begun ("[Gloo] Rank ") but not yet ended

    def is_noise(self, line: str) -> bool:
        """Return whether ``line`` belongs to Gloo's connection messages."""
        if not _GLOO_PIECES.fullmatch(line):
            return False
        if not _GLOO_WORDS.search(line) and self.open == 0:
            return False
        self.open = max(0, self.open + line.count(_GLOO_OPENER) - 1)
        return True


def read_lines(pipe: IO[bytes], rank: int, stream: str, out: queue.Queue) -> None:
    """Put every line of ``pipe`` on ``out`` as ``(rank, stream, line)``.

    Runs in a thread per pipe; puts ``None`` once the pipe closes.
    """
    with contextlib.suppress(ValueError, OSError):
        for raw in iter(pipe.readline, b""):
            out.put((rank, stream, raw.decode("utf-8", "replace").rstrip("\r\n")))
    with contextlib.suppress(OSError):
        pipe.close()
    # Wake the supervisor at once: the process has most likely just ended.
    out.put(None)


def shorten(line: str, workdir: Path) -> str:
    """Drop the folders of this machine from paths in ``line``.

    Tracebacks name files by absolute path; the launch folder and the
    virtual environment's location say nothing to the reader (and must not
    end up in a stored notebook).
    """
    line = line.replace(f"{workdir}{os.sep}", "")
    return _SITE_PACKAGES.sub("site-packages/", line)


def tail(lines: list[str], workdir: Path, n: int = 4) -> str:
    """Summarize what a rank printed last, for an error message.

    A Python traceback is cut down to the last frame in the user's own code
    (not in an installed package) and the exception; anything else to its
    last ``n`` lines.
    """
    lines = [
        shorten(line, workdir)
        for line in lines
        if line.strip() and not _CARETS.match(line)
    ]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (")]
    if starts:
        block = lines[starts[-1] + 1 :]
        frames = [i for i, line in enumerate(block) if line.startswith("  File ")]
        if frames:
            # The exception starts at the first unindented line after the frames.
            end = next(
                (i for i in range(frames[-1] + 1, len(block)) if block[i][:1] != " "),
                len(block),
            )
            own = [i for i in frames if "site-packages/" not in block[i]]
            kept = []
            if own:
                kept += block[own[-1] : own[-1] + 2]
            kept += block[end : end + n]
            return "\n".join(f"    {line}" for line in kept)
    return "\n".join(f"    {line}" for line in lines[-n:])


# What a rank prints when it fails only because another one did: the
# coordination service reports the lost task, or a collective loses its peer.
_KNOCK_ON = ("coordination", "heartbeat", "UNAVAILABLE", "unhealthy",
             "DEADLINE_EXCEEDED", "Connection reset", "Connection closed",
             "closed by peer", "Broken pipe", "terminated", "Gloo")


def lost_a_peer(lines: list[str]) -> bool:
    """Say whether a failed rank's last words are a lost peer's, not its own.

    When one rank dies its partners soon fail too ("Connection reset by
    peer"), and on a loaded machine one of them may be seen to end first. The
    launcher and the report of ``srun`` pass such a rank over for one that
    failed on its own.

    Parameters
    ----------
    lines : list of str
        What the rank printed on stderr (stdout if nothing there), in order.

    Returns
    -------
    bool
        True when one of its last six lines names a lost peer or service.
    """
    return any(word in line for line in lines[-6:] for word in _KNOCK_ON)


def rank_failure_message(
    rank: int,
    code: int,
    err_lines: list[list[str]],
    out_lines: list[list[str]],
    workdir: Path,
) -> str:
    """Say which rank failed, how, and what it printed last."""
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    lines = err_lines[rank] or out_lines[rank]
    summary = tail(lines, workdir)
    message = f"rank {rank} {how}"
    message += f":\n{summary}" if summary else " and printed nothing."
    return message + "\nEvery other rank was ended."


def mpi_failure_message(code: int, err_lines: list[list[str]], workdir: Path) -> str:
    """Say how ``mpirun`` ended and what the last rank to complain printed."""
    ranks = [r for r, lines in enumerate(err_lines) if lines]
    message = f"mpirun exited with code {code}"
    if ranks:
        message += f"; last lines on stderr of rank {ranks[-1]}:\n"
        message += tail(err_lines[ranks[-1]], workdir)
    return message + "\nEvery rank was ended."


def timeout_message(
    timeout: float, running: list[int], out_lines: list[list[str]]
) -> str:
    """Say which ranks were still running, and the last line each printed."""
    names = ", ".join(str(r) for r in running)
    which = f"rank {names} is" if len(running) == 1 else f"ranks {names} are"
    lines = [
        f"timed out after {timeout:g} s; {which} still running (a collective "
        "waiting for a rank that never joins?). Every rank was ended.",
        "Last line each rank printed:",
    ]
    for rank in range(len(out_lines)):
        last = out_lines[rank][-1] if out_lines[rank] else "(nothing)"
        lines.append(f"    [rank {rank}] {last}")
    return "\n".join(lines)
