"""The hostile class's answers: honest ones, twins, and every way of borrowing.

Shared by the grader's tests (tests/test_grading_borrowed.py: locally and on
Slurm) and nbgrader's (tests/test_nbgrader.py: through ``nbgrader
autograde``), so that every path grades the same submissions.
"""

from __future__ import annotations

import nbformat

BATCHED, VMAPPED = IDS = ["bayes.batched_log_joint", "bayes.vmapped_log_joint"]
ELBO = "bayes.elbo_value_and_grad"

# ---- the answers ------------------------------------------------------------------
# Each learner's answer is different (else the class's flags would list it),
# and right: a borrowing submission's other exercise is graded as usual.

HONEST_BATCHED = [
    """\
def batched_log_joint(beta, all_x, y):
    prior = jnp.sum(jsp.stats.norm.logpdf(beta), axis=-1)
    logits = jnp.einsum("pf,bf->bp", all_x, beta)
    return prior + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)
""",
    """\
def batched_log_joint(beta, all_x, y):
    prior = jsp.stats.norm.logpdf(beta).sum(axis=-1)
    logits = beta @ all_x.T
    return prior - jax.nn.softplus((1 - 2 * y) * logits).sum(axis=-1)
""",
    """\
def batched_log_joint(beta, all_x, y):
    return jax.vmap(log_joint, in_axes=(0, None, None))(beta, all_x, y)
""",
    """\
def batched_log_joint(beta, all_x, y):
    signs = 2 * y - 1
    logits = jnp.matmul(beta, all_x.T)
    likelihood = jnp.sum(-jax.nn.softplus(-signs * logits), axis=-1)
    return jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=-1) + likelihood
""",
    """\
def batched_log_joint(beta, all_x, y):
    logits = jnp.dot(beta, all_x.T)
    prior = -0.5 * jnp.sum(beta**2, axis=-1)
    prior = prior - 0.5 * beta.shape[-1] * jnp.log(2 * jnp.pi)
    return prior + jnp.sum(jax.nn.log_sigmoid((2 * y - 1) * logits), axis=-1)
""",
    """\
def batched_log_joint(beta, all_x, y):
    one = lambda b: log_joint(b, all_x, y)
    return jax.vmap(one)(beta)
""",
    """\
def batched_log_joint(beta, all_x, y):
    total = jnp.zeros(beta.shape[0])
    total = total + jsp.stats.norm.logpdf(beta).sum(-1)
    return total + jax.nn.log_sigmoid((2 * y - 1) * (beta @ all_x.T)).sum(-1)
""",
]
HONEST_VMAPPED = [
    """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    return jax.vmap(log_joint, in_axes=(0, None, None, None))(
        betas, all_x, y, prior_scale)
""",
    """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    return jax.vmap(lambda beta: log_joint(beta, all_x, y, prior_scale))(betas)
""",
    """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    return jax.vmap(log_joint, (0, None, None, None))(betas, all_x, y, prior_scale)
""",
    """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    def one(beta):
        return log_joint(beta, all_x, y, prior_scale)
    return jax.vmap(one)(betas)
""",
    """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    many = jax.vmap(log_joint, in_axes=(0, None, None, None), out_axes=0)
    return many(betas, all_x, y, prior_scale)
""",
    """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    axes = (0,) + (None,) * 3
    return jax.vmap(log_joint, in_axes=axes)(betas, all_x, y, prior_scale)
""",
    """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    import functools
    per_beta = functools.partial(log_joint, all_x=all_x, y=y,
                                 prior_scale=prior_scale)
    return jax.vmap(per_beta)(betas)
""",
]
# The twins: one answer, written twice (names, comments and layout differ).
TWIN = """\
def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    mapped = jax.vmap(log_joint, in_axes=[0, None, None, None])
    return mapped(betas, all_x, y, prior_scale)
"""
TWIN_RETYPED = """\
def vmapped_log_joint(b, xs, ys, prior_scale=1.0):
    # my own: the data stay put
    f = jax.vmap(log_joint,
                 in_axes=[0, None, None, None])
    return f(b, xs, ys, prior_scale)
"""

# The five ways to borrow, and how each is told.
BORROWED = {
    # from solutions.X import f
    "b_imports": (BATCHED, "is", "from solutions.bayes import batched_log_joint\n"),
    # importlib.import_module
    "c_importlib": (VMAPPED, "is", (
        "import importlib\n"
        "vmapped_log_joint = importlib.import_module('solutions.bayes')"
        ".vmapped_log_joint\n")),
    # getattr on the module, the name built
    "d_getattr": (BATCHED, "is", (
        "import solutions.bayes as course\n"
        "batched_log_joint = getattr(course, 'batched_' + 'log_joint')\n")),
    # a function of its own that calls the reference
    "e_wrapper": (VMAPPED, "calls", (
        "import solutions.bayes\n\n"
        "def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):\n"
        "    answer = solutions.bayes.vmapped_log_joint\n"
        "    return answer(betas, all_x, y, prior_scale)\n")),
    # the source, read from the installed file, run by exec
    "f_exec_source": (BATCHED, "copy", (
        "import inspect\nimport solutions.bayes\n"
        "exec(inspect.getsource(solutions.bayes.batched_log_joint))\n")),
    # the whole installed file, run by exec into a namespace of its own
    "g_exec_file": (VMAPPED, "copy", (
        "import solutions.bayes\n"
        "namespace = {}\n"
        "with open(solutions.bayes.__file__) as file:\n"
        "    exec(file.read(), namespace)\n"
        "vmapped_log_joint = namespace['vmapped_log_joint']\n")),
    # What the in-process tripwire does not see: the course copy a
    # submission runs against holds no answer, so each computes nothing.
    # The reference called by one of the course's own helpers (a frame
    # inside jaxcourse/ calls it, as the checks' machinery would).
    "k_course_helper": (BATCHED, "calls", (
        "import functools\n"
        "from jaxcourse.exercises.checking.time_limit import call_with_time_limit\n"
        "import solutions.bayes\n\n"
        "def batched_log_joint(beta, all_x, y):\n"
        "    answer = functools.partial(solutions.bayes.batched_log_joint,\n"
        "                               beta, all_x, y)\n"
        "    return call_with_time_limit(answer, None)\n")),
    # The detector switched off from a cell, then the reference imported.
    "l_detector_off": (VMAPPED, "calls", (
        "import contextlib\n"
        "import types\n"
        "import jaxcourse.exercises.grading.borrowing as borrowing\n"
        "borrowing.Watch.borrowed = lambda self, function: None\n"
        "borrowing.Watch.find_copies = lambda self, sources: None\n"
        "borrowing.Watch.watching = lambda self: contextlib.nullcontext(\n"
        "    types.SimpleNamespace(ran=None))\n"
        "from solutions.bayes import vmapped_log_joint as _answer\n\n"
        "def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):\n"
        "    return _answer(betas, all_x, y, prior_scale)\n")),
    # The source taken with inspect.getsource, changed (so that no compiled
    # copy compares equal), and exec'd with the module's globals.
    "m_exec_changed": (BATCHED, "calls", (
        "import inspect\nimport solutions.bayes\n"
        "source = inspect.getsource(solutions.bayes.batched_log_joint)\n"
        "source = source.replace('):', '):\\n    _mine = 1', 1)\n"
        "namespace = dict(vars(solutions.bayes))\n"
        "exec(source, namespace)\n"
        "batched_log_joint = namespace['batched_log_joint']\n")),
}


# A library function that returns the exercise's answer: borrowed too
# (jaxcourse.exercises.checking.library_answers), read from the notebook's text.
LIBRARY_ELBO = (
    "import jaxcourse.bayes\n\n"
    "def elbo_value_and_grad(beta_loc, beta_log_scale, epsilon, all_x, y):\n"
    "    both = jax.value_and_grad(jaxcourse.bayes.elbo, argnums=(0, 1))\n"
    "    return both(beta_loc, beta_log_scale, epsilon, all_x, y)\n")


def with_answers(nb: nbformat.NotebookNode, **cells: str) -> nbformat.NotebookNode:
    """Put each ``function=source`` in place of the cell that defines ``function``.

    A student notebook (the course's, or a class release's) with these cells
    answered, as a learner's would be; ``nb`` itself is changed and returned.
    """
    for cell in nb.cells:
        for function, source in cells.items():
            if cell.cell_type == "code" and cell.source.startswith(f"def {function}("):
                cell.source = source
                break
    return nb


def borrowed_sentence(exercise: str, how: str) -> str:
    """What the feedback says of ``exercise``'s function, borrowed ``how``."""
    function = exercise.split(".")[1]
    return (f"`{function}` is the course's `solutions.bayes.{function}`, "
            if how == "is" else
            f"`{function}` runs the course's `solutions.bayes.{function}`: "
            if how == "calls" else
            f"`{function}` is the course's `solutions.bayes.{function}`, run "
            "from its installed file")
