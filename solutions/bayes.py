"""Reference code for chapter 3's exercises: batching a Bayesian model, and its ELBO.

Importing this module registers the exercises ``bayes.batched_log_joint``,
``bayes.vmapped_log_joint``, ``bayes.sample_betas``,
``bayes.elbo_value_and_grad`` and ``bayes.ascent_step`` with
:mod:`jaxcourse.exercises`.

The model is chapter 3's Bayesian logistic regression, with one change: the
data are arguments (``all_x``, ``y``) instead of globals, so the checks can
feed their own seeded data sets, and ``vmap`` has something to *not* batch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy as jsp
import numpy as np

from jaxcourse.bayes import VI_PRIOR_SCALE, chapter_data, log_joint
from jaxcourse.exercises import Case, Exercise, Mistake, register
from jaxcourse.numerics import sum_tolerance

CHAPTER = "03_bayes"


# --------------------------------------------------------------------------
# Reference solutions
# --------------------------------------------------------------------------


def batched_log_joint(beta, all_x, y):
    """``log_joint`` for a batch of betas, shape ``(batch, features)``, by hand."""
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=1.0), axis=-1)
    signs = 2 * y - 1
    logits = jnp.dot(all_x, beta.T).T  # (batch, points)
    result = result + jnp.sum(-jax.nn.softplus(-signs * logits), axis=-1)
    return result


def vmapped_log_joint(betas, all_x, y, prior_scale=1.0):
    """``log_joint`` of every row of ``betas`` on the same data, with ``jax.vmap``."""
    batched = jax.vmap(log_joint, in_axes=(0, None, None, None))
    return batched(betas, all_x, y, prior_scale)


def sample_betas(key, beta_loc, beta_log_scale, num_samples):
    """``num_samples`` reparameterized draws from N(loc, exp(log_scale)**2)."""
    epsilon = jax.random.normal(key, (num_samples, beta_loc.shape[0]))
    return beta_loc + jnp.exp(beta_log_scale) * epsilon


def elbo_value_and_grad(beta_loc, beta_log_scale, epsilon, all_x, y):
    """Return the ELBO estimate and its gradients w.r.t. loc and log-scale."""

    def elbo(loc, log_scale):
        beta_sample = loc + jnp.exp(log_scale) * epsilon
        log_joints = jax.vmap(log_joint, in_axes=(0, None, None, None))(
            beta_sample, all_x, y, VI_PRIOR_SCALE)
        entropy = jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))
        return jnp.mean(log_joints) + entropy

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def ascent_step(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    """One step of gradient ascent on the ELBO: ``(elbo, new_loc, new_log_scale)``."""
    value, (loc_grad, log_scale_grad) = elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    return (value, beta_loc + step_size * loc_grad,
            beta_log_scale + step_size * log_scale_grad)


# --------------------------------------------------------------------------
# Checker specs
# --------------------------------------------------------------------------


def _as_jax(*args: object) -> tuple:
    # The chapter hands these functions JAX arrays; so do the checks. Being
    # immutable, they also let a Check compile the whole function at once
    # (Exercise.compiled_calls), which keeps the first Check quick.
    return tuple(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def _chapter_betas(rng: np.random.Generator) -> tuple:
    _, all_x, y, stream = chapter_data()
    stream.randn(10)  # the chapter's test_beta comes first,
    stream.randn(10, 10)  # then the two batches of the failing call,
    stream.randn(10, 10)  # as in the seed's run
    return _as_jax(stream.randn(10, 10).astype(np.float32), all_x, y)


def _problem(batch: int, features: int, points: int):
    def make(rng: np.random.Generator, n: int | None = None) -> tuple:
        betas = rng.normal(size=(batch if n is None else n, features))
        all_x = rng.normal(size=(points, features))
        y = rng.integers(0, 2, size=points).astype(np.int32)
        return _as_jax(betas.astype(np.float32), all_x.astype(np.float32), y)

    return make


def _posterior(features: int, samples: int, *, key_seed: int = 0):
    def make(rng: np.random.Generator) -> tuple:
        loc = rng.normal(size=features).astype(np.float32)
        log_scale = rng.normal(scale=0.5, size=features).astype(np.float32)
        return _as_jax(jax.random.key(key_seed), loc, log_scale, samples)

    return make


def _elbo_inputs(features: int, samples: int, points: int):
    def make(rng: np.random.Generator) -> tuple:
        loc = rng.normal(size=features).astype(np.float32)
        log_scale = rng.normal(scale=0.3, size=features).astype(np.float32) - 1
        epsilon = rng.normal(size=(samples, features)).astype(np.float32)
        all_x = rng.normal(size=(points, features)).astype(np.float32)
        y = rng.integers(0, 2, size=points).astype(np.int32)
        return _as_jax(loc, log_scale, epsilon, all_x, y)

    return make


def _chapter_elbo_inputs(rng: np.random.Generator) -> tuple:
    _, all_x, y, _ = chapter_data()
    epsilon = rng.normal(size=(128, 10)).astype(np.float32)
    return _as_jax(np.zeros(10, np.float32), np.zeros(10, np.float32), epsilon, all_x,
                   y)


# Known wrong answers, named when a learner's output matches theirs.


def _no_axis(beta, all_x, y):
    result = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0))
    logits = jnp.dot(all_x, beta.T).T
    return result + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits))


def _no_transpose(beta, all_x, y):
    result = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=-1)
    logits = jnp.dot(all_x, beta.T)  # (points, batch): the signs pair wrongly
    return result + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=-1)


def _batch_axis(beta, all_x, y):
    result = jnp.sum(jsp.stats.norm.logpdf(beta, 0.0, 1.0), axis=0)
    logits = jnp.dot(all_x, beta.T).T
    return result + jnp.sum(-jax.nn.softplus(-(2 * y - 1) * logits), axis=0)


_ENTROPY_CONSTANT = 0.5 * np.log(2 * np.pi * np.e)


def _elbo_variant(*, entropy_sign=1.0, reduce=jnp.mean, prior_scale=VI_PRIOR_SCALE,
                  constant=_ENTROPY_CONSTANT, detached=False,
                  argnums=(0, 1)):
    def wrong(beta_loc, beta_log_scale, epsilon, all_x, y):
        fixed = beta_loc + jnp.exp(beta_log_scale) * epsilon

        def elbo(loc, log_scale):
            sample = fixed if detached else loc + jnp.exp(log_scale) * epsilon
            joints = jax.vmap(log_joint, in_axes=(0, None, None, None))(
                sample, all_x, y, prior_scale)
            entropy = jnp.sum(log_scale + constant)
            return reduce(joints) + entropy_sign * entropy

        return jax.value_and_grad(elbo, argnums=argnums)(beta_loc, beta_log_scale)

    return wrong


def _no_entropy(beta_loc, beta_log_scale, epsilon, all_x, y):
    def elbo(loc, log_scale):
        sample = loc + jnp.exp(log_scale) * epsilon
        return jnp.mean(jax.vmap(log_joint, in_axes=(0, None, None, None))(
            sample, all_x, y, VI_PRIOR_SCALE))

    return jax.value_and_grad(elbo, argnums=(0, 1))(beta_loc, beta_log_scale)


def _step_inputs(features: int, samples: int, points: int, step_size: float,
                 chapter: bool = False):
    def make(rng: np.random.Generator) -> tuple:
        loc, log_scale, *rest = (_chapter_elbo_inputs(rng) if chapter else
                                 _elbo_inputs(features, samples, points)(rng))
        # JAX arrays (see _as_jax), as in the chapter's loop: immutable, so the
        # seed's `beta_loc += step_size * grad` rebinds instead of writing in place.
        return (loc, log_scale, *rest, step_size)

    return make


def _descent(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    value, (g_loc, g_scale) = elbo_value_and_grad(
        beta_loc, beta_log_scale, epsilon, all_x, y)
    return value, beta_loc - step_size * g_loc, beta_log_scale - step_size * g_scale


def _loc_only(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    value, (g_loc, _) = elbo_value_and_grad(beta_loc, beta_log_scale, epsilon, all_x, y)
    return value, beta_loc + step_size * g_loc, beta_log_scale


def _fixed_step(beta_loc, beta_log_scale, epsilon, all_x, y, step_size):
    return ascent_step(beta_loc, beta_log_scale, epsilon, all_x, y, 0.01)


#: How many times a log joint's (or an ELBO's) size its terms add up to, the
#: dot products' |x| @ |beta| inside the softplus included: at most 6.4 in these
#: cases (all the log joint's terms are negative), 8.0 over 200 seeds.
LOG_JOINT_TERMS = 10.0
#: A bound on the ELBO gradient's terms: each point's |x| times its sigmoid,
#: averaged over the samples (times sigma |eps| for the log-scale): at most 42
#: in these cases (the chapter's 100 points), 44 over 200 seeds.
ELBO_GRADIENT_TERMS = 64.0


def log_joint_tolerance(features: int, points: int) -> dict[str, float]:
    """Return the ``rtol`` and ``atol`` of two float32 evaluations of log joints.

    A log joint chains a dot product of ``features`` terms per point, the sum
    over the ``points`` and the prior's sum over the features: to first order
    within gamma_n, ``n = 2 features + points``, of exact, relative to its
    terms (at most :data:`LOG_JOINT_TERMS` times its size). Two evaluations
    differ by twice that.
    """
    return {"rtol": 2 * sum_tolerance(2 * features + points) * LOG_JOINT_TERMS,
            "atol": 0.0}


def elbo_tolerance(features: int, samples: int, points: int,
                   step_size: float = 1.0) -> dict[str, float]:
    """Return the ``rtol`` and ``atol`` of two float32 ELBOs and gradients (or steps).

    The ELBO averages ``samples`` log joints and adds the entropy's sum over
    the features: ``n = 3 features + points + samples`` chained terms. To
    first order the value is within gamma_n of exact relative to
    :data:`LOG_JOINT_TERMS` times its size (``rtol``, which also covers a
    step's final rounding), a gradient relative to its terms (below
    :data:`ELBO_GRADIENT_TERMS`, times ``step_size`` for a step's change).
    Two evaluations differ by twice that.
    """
    tolerance = 2 * sum_tolerance(3 * features + points + samples)
    return {"rtol": tolerance * LOG_JOINT_TERMS,
            "atol": tolerance * step_size * ELBO_GRADIENT_TERMS}


# The gradient w.r.t. the log-scale sums sigma * eps over 16 samples (at most
# 29 in magnitude here): two float32 sums are within 2 gamma_16 of that. A
# sample only rounds three times (exp, product, sum), far less.
_SAMPLES_TOL = {"rtol": 0.0, "atol": 2 * sum_tolerance(16) * 32}

register(
    Exercise(
        id="bayes.batched_log_joint",
        title="The log joint, batched by hand",
        chapter=CHAPTER,
        reference=batched_log_joint,
        compiled_calls=True,
        cases=[
            Case("the chapter's data and its 10 test betas (10, 10) -> (10,)",
                 _chapter_betas, dtype="kind", **log_joint_tolerance(10, 100)),
            Case("5 betas, 8 features, 30 points -> (5,)", _problem(5, 8, 30),
                 dtype="kind", **log_joint_tolerance(8, 30)),
            Case("a batch of one beta -> shape (1,)", _problem(1, 4, 20), seed=1,
                 dtype="kind", **log_joint_tolerance(4, 20)),
            Case("6 betas, 6 features, 6 points: shapes that broadcast even when "
                 "the axes are wrong", _problem(6, 6, 6), seed=2, dtype="kind",
                 **log_joint_tolerance(6, 6)),
            Case("jax.jit(batched_log_joint) on 7 betas", _problem(7, 5, 40),
                 seed=3, transform="jit", dtype="kind", **log_joint_tolerance(5, 40)),
            Case("no Python loop over the betas (traced with 4 and 32)",
                 _problem(4, 5, 20), transform="vectorized"),
        ],
        hints=[
            "beta now has shape (batch, features). Each line of log_joint must "
            "keep the batch axis and reduce only over features or points.",
            "A product of all_x with the transposed betas has shape (points, "
            "batch); the (points,) signs broadcast along the last axis, so which "
            "layout do the logits need?",
            "Both sums need axis=-1: without it they add up the whole batch into "
            "one number.",
        ],
        mistakes=[
            Mistake("the sums have no axis: they add the whole batch together; "
                    "use axis=-1", _no_axis),
            Mistake("the logits are (points, batch): transpose them to (batch, "
                    "points) before multiplying by the signs", _no_transpose),
            Mistake("summed over the batch axis (axis=0); sum over features and "
                    "points instead (axis=-1)", _batch_axis),
        ],
    ),
    Exercise(
        id="bayes.vmapped_log_joint",
        title="The log joint, batched with jax.vmap and in_axes",
        chapter=CHAPTER,
        reference=vmapped_log_joint,
        compiled_calls=True,
        cases=[
            Case("the chapter's data and its 10 test betas -> (10,)",
                 _chapter_betas, dtype="kind", **log_joint_tolerance(10, 100)),
            Case("prior_scale=10.0 is honoured (4 betas, 3 features, 25 points)",
                 _problem(4, 3, 25), seed=1, kwargs={"prior_scale": 10.0},
                 dtype="kind", **log_joint_tolerance(3, 25)),
            Case("6 betas and 6 points: the data must not be batched",
                 _problem(6, 4, 6), seed=2, dtype="kind", **log_joint_tolerance(4, 6)),
            Case("jax.jit(vmapped_log_joint) on 9 betas", _problem(9, 5, 40),
                 seed=3, transform="jit", dtype="kind", **log_joint_tolerance(5, 40)),
            Case("no Python loop over the betas (traced with 4 and 32)",
                 _problem(4, 5, 20), transform="vectorized"),
        ],
        hints=[
            "jax.vmap(log_joint, in_axes=...) maps over the leading axis of the "
            "arguments whose entry in in_axes is 0, and passes the others whole "
            "(entry None).",
            "Only betas is batched: write one in_axes entry per argument of "
            "log_joint (betas, all_x, y, prior_scale) and decide which is mapped.",
            "Pass prior_scale positionally (with None in in_axes) or fix it with "
            "functools.partial: vmap maps keyword arguments over axis 0, which "
            "fails for a float.",
        ],
        mistakes=[
            Mistake("the data were batched too (in_axes=0): each beta met one data "
                    "point; use None for all_x and y",
                    lambda b, x, y, prior_scale=1.0: jax.vmap(
                        log_joint, in_axes=(0, 0, 0, None))(b, x, y, prior_scale)),
            Mistake("prior_scale is ignored: pass it on to log_joint",
                    lambda b, x, y, prior_scale=1.0: jax.vmap(
                        log_joint, in_axes=(0, None, None))(b, x, y)),
        ],
    ),
    Exercise(
        id="bayes.sample_betas",
        title="Reparameterized samples",
        chapter=CHAPTER,
        reference=sample_betas,
        compiled_calls=True,
        cases=[
            # Keys cannot be compared as NumPy arrays, so every case goes
            # through a transform (no in-place check needed for a pure function).
            Case("jax.jit: 128 samples of 10 coefficients from key 0",
                 _posterior(10, 128), transform="jit", **_SAMPLES_TOL),
            Case("jax.jit: 5 samples of 3 coefficients from key 7",
                 _posterior(3, 5, key_seed=7), seed=1, transform="jit",
                 **_SAMPLES_TOL),
            Case("jax.grad w.r.t. beta_loc of the sum: num_samples everywhere",
                 _posterior(4, 16), seed=2, transform="grad", argnums=1,
                 **_SAMPLES_TOL),
            Case("jax.grad w.r.t. beta_log_scale of the sum: the samples depend "
                 "on it through exp", _posterior(4, 16), seed=3, transform="grad",
                 argnums=2, **_SAMPLES_TOL),
        ],
        hints=[
            "Draw standard normal noise with the key as given: one row per "
            "sample, one column per coefficient.",
            "Then shift and scale it: beta_loc + sigma * epsilon, broadcasting the "
            "(features,) vectors over the samples.",
            "beta_log_scale is log sigma, so sigma = jnp.exp(beta_log_scale).",
        ],
        mistakes=[
            Mistake("beta_log_scale is the log of sigma: scale by "
                    "jnp.exp(beta_log_scale)",
                    lambda k, loc, ls, n: loc + ls * jax.random.normal(
                        k, (n, loc.shape[0]))),
            Mistake("beta_log_scale is log sigma, not log of the variance: "
                    "sigma = jnp.exp(beta_log_scale), without the 0.5",
                    lambda k, loc, ls, n: loc + jnp.exp(0.5 * ls) * jax.random.normal(
                        k, (n, loc.shape[0]))),
            Mistake("the noise comes from a split key: draw it from `key` itself",
                    lambda k, loc, ls, n: loc + jnp.exp(ls) * jax.random.normal(
                        jax.random.split(k)[1], (n, loc.shape[0]))),
        ],
    ),
    Exercise(
        id="bayes.elbo_value_and_grad",
        title="The ELBO and its gradient with jax.value_and_grad",
        chapter=CHAPTER,
        reference=elbo_value_and_grad,
        compiled_calls=True,
        cases=[
            Case("the chapter's data, loc = log_scale = 0, 128 samples",
                 _chapter_elbo_inputs, dtype="kind", **elbo_tolerance(10, 128, 100)),
            Case("5 coefficients, 16 samples, 40 points", _elbo_inputs(5, 16, 40),
                 seed=1, dtype="kind", **elbo_tolerance(5, 16, 40)),
            Case("jax.jit(elbo_value_and_grad), 3 coefficients, 8 samples",
                 _elbo_inputs(3, 8, 20), seed=2, transform="jit", dtype="kind",
                 **elbo_tolerance(3, 8, 20)),
        ],
        hints=[
            "Write an inner function of (loc, log_scale) that returns the ELBO, "
            "and let jax.value_and_grad differentiate it with respect to both of "
            "its arguments: the result is (value, (loc_grad, log_scale_grad)).",
            "Inside, build the samples from loc and log_scale and the given "
            "epsilon, so the gradient flows through them; average the log joint "
            "over the samples (a vmap over the samples' axis) with the chapter's "
            "wider prior, scale 10.",
            "The ELBO is the expected log joint PLUS the entropy of the diagonal "
            "Gaussian, whose formula is in the chapter.",
        ],
        mistakes=[
            Mistake("the entropy term is missing", _no_entropy),
            Mistake("the entropy is subtracted: the ELBO adds it",
                    _elbo_variant(entropy_sign=-1.0)),
            Mistake("the log joints are summed over the samples: average them "
                    "(jnp.mean) to estimate the expectation",
                    _elbo_variant(reduce=jnp.sum)),
            Mistake("prior_scale must be 10.0 here, as in the chapter's "
                    "variational inference", _elbo_variant(prior_scale=1.0)),
            Mistake("that is the reference run's constant, -0.5 * log(2 pi): the "
                    "entropy of a Gaussian has + 0.5 * log(2 pi e)",
                    _elbo_variant(constant=-0.5 * np.log(2 * np.pi))),
            Mistake("the samples were built outside the differentiated function: "
                    "the gradient cannot flow through them (reparameterize inside)",
                    _elbo_variant(detached=True)),
        ],
    ),
    Exercise(
        id="bayes.ascent_step",
        title="One step of gradient ascent on the ELBO",
        chapter=CHAPTER,
        reference=ascent_step,
        compiled_calls=True,
        cases=[
            Case("chapter 3's data, beta_loc = beta_log_scale = 0, 128 samples, "
                 "step_size 0.01", _step_inputs(10, 128, 100, 0.01, chapter=True),
                 **elbo_tolerance(10, 128, 100, 0.01)),
            Case("4 features, 16 samples, 30 points, step_size 0.05",
                 _step_inputs(4, 16, 30, 0.05), seed=1,
                 **elbo_tolerance(4, 16, 30, 0.05)),
            Case("7 features, 32 samples, 50 points, step_size 0.2",
                 _step_inputs(7, 32, 50, 0.2), seed=2,
                 **elbo_tolerance(7, 32, 50, 0.2)),
            Case("under jax.jit: 3 features, 8 samples, 20 points, step 0.1",
                 _step_inputs(3, 8, 20, 0.1), seed=3, transform="jit",
                 **elbo_tolerance(3, 8, 20, 0.1)),
        ],
        hints=[
            "Your elbo_value_and_grad (exercise 4) gives the ELBO and its two "
            "gradients for the given epsilon: start from it.",
            "The ELBO is to be maximized: which way along its gradient does each "
            "parameter move, and by how much?",
            "Both parameters move, each by step_size times its own gradient; "
            "return the ELBO computed before the step, then the two new arrays.",
        ],
        mistakes=[
            Mistake("the parameters moved against the gradient: that is descent; "
                    "the ELBO is maximized, so move along the gradient", _descent),
            Mistake("beta_log_scale did not move: update both parameters", _loc_only),
            Mistake("the step size is written in: use the step_size argument",
                    _fixed_step),
        ],
    ),
)
