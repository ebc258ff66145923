"""Chapter 3's model, for the code that is not the learner's to write.

The Bayesian logistic regression of chapter 3 (a Gaussian prior on the
coefficients, a Bernoulli likelihood), its data set, and the Monte Carlo ELBO
of a diagonal Gaussian approximation. The exercises' reference solutions
(the content package) and the ELBO explorer both start from these; what the
exercises ask for (batching by hand, ``vmap``, the reparameterization, the
gradient step) is written out in the references, not here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy as jsp
import numpy as np

__all__ = ["VI_PRIOR_SCALE", "chapter_data", "elbo", "log_joint"]

#: The chapter widens the prior for variational inference.
VI_PRIOR_SCALE = 10.0


def log_joint(beta, all_x, y, prior_scale=1.0):
    """Log prior + log likelihood of logistic regression, for ONE ``beta``.

    Written as the chapter writes it (no type hints, no axes), because the
    exercises give it to the learner as is.
    """
    result = jnp.sum(jsp.stats.norm.logpdf(beta, loc=0.0, scale=prior_scale))
    signs = 2 * y - 1
    result = result + jnp.sum(-jax.nn.softplus(-signs * jnp.dot(all_x, beta)))
    return result


def chapter_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.random.RandomState]:
    """Chapter 3's data set: ``(true_beta, all_x, y, rng)`` from RandomState(10009).

    ``rng`` is returned where the chapter's stream stands after drawing the
    data, so a caller can continue it exactly as the chapter does.
    """
    rng = np.random.RandomState(10009)
    true_beta = rng.randn(10).astype(np.float32)
    all_x = rng.randn(100, 10).astype(np.float32)
    probs = 1 / (1 + np.exp(-(all_x @ true_beta)))
    y = (rng.rand(100) < probs).astype(np.int32)
    return true_beta, all_x, y, rng


def elbo(loc: jax.Array, log_scale: jax.Array, epsilon: jax.Array,
         all_x: jax.Array, y: jax.Array) -> jax.Array:
    """Monte Carlo ELBO of N(loc, exp(log_scale)**2) with the noise ``epsilon``.

    ``epsilon`` has shape ``(samples, features)``; the estimate averages the
    log joint (with the chapter's wide prior) over the samples and adds the
    Gaussian's entropy in closed form.
    """
    samples = loc + jnp.exp(log_scale) * epsilon
    joints = jax.vmap(log_joint, in_axes=(0, None, None, None))(
        samples, all_x, y, VI_PRIOR_SCALE)
    return jnp.mean(joints) + jnp.sum(log_scale + 0.5 * jnp.log(2 * jnp.pi * jnp.e))
