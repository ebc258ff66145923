"""Answers to chapter 4's exercises (topic ``sharding``), as learners write them.

What checking each must give is in ``sharding.toml``. They need 8 devices:
the contract checks them in a process that asks for 8 devices before it
imports this module (nothing here touches a device).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


# -- exercise 1: the target is P("b", "a")
def spec_transposed():
    return P("a", "b")


def spec_replicated():
    return P()


def spec_columns_only():
    return P(None, "a")


def spec_wrong_axis_name():
    return P("model", "a")


def spec_not_a_spec():
    return ("b", "a")


def spec_from_mesh_names():  # correct, spelled differently
    names = ("a", "b")
    return P(names[1], names[0])


def spec_jax_p():  # correct: jax.P is the same class
    return jax.P("b", "a")


def spec_one_axis_tuples():  # correct: a tuple of one mesh axis is that axis
    return P(("b",), ("a",))


def spec_unpacked():  # correct
    rows_then_columns = ["b", "a"]
    return P(*rows_then_columns)


# -- exercise 2
def dp_params_sharded(params, batch, mesh):  # one device_put for both
    return jax.device_put((params, batch), NamedSharding(mesh, P("batch")))


def dp_batch_replicated(params, batch, mesh):
    return jax.tree.map(lambda a: jax.device_put(a, NamedSharding(mesh, P())),
                        (params, batch))


def dp_batch_by_columns(params, batch, mesh):
    return (jax.device_put(params, NamedSharding(mesh, P())),
            jax.device_put(batch, NamedSharding(mesh, P(None, "batch"))))


def dp_left_on_host(params, batch, mesh):
    return params, batch


def dp_per_leaf(params, batch, mesh):  # correct: leaf by leaf, spelled P("batch", None)
    rep = NamedSharding(mesh, P())
    rows = NamedSharding(mesh, P("batch", None))
    params = [(jax.device_put(w, rep), jax.device_put(b, rep)) for w, b in params]
    inputs, targets = batch
    return params, (jax.device_put(inputs, rows), jax.device_put(targets, rows))


def dp_seed_style(params, batch, mesh):  # correct: the seed's order, a list back
    sharding = NamedSharding(mesh, P("batch"))
    batch = jax.device_put(batch, sharding)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    return [params, batch]


def dp_tree_map(params, batch, mesh):  # correct: leaf by leaf with tree.map
    replicated = NamedSharding(mesh, jax.P())
    by_rows = NamedSharding(mesh, jax.P(mesh.axis_names[0]))
    put = lambda sharding: lambda leaf: jax.device_put(leaf, sharding)  # noqa: E731
    return jax.tree.map(put(replicated), params), jax.tree.map(put(by_rows), batch)


def dp_shardings_pytree(params, batch, mesh):  # correct: one device_put, two shardings
    shardings = (NamedSharding(mesh, P()), NamedSharding(mesh, P("batch")))
    return jax.device_put((params, batch), shardings)


# -- exercise 3
def _place(specs, batch_spec):
    def place(params, batch, mesh):
        params = [(jax.device_put(w, NamedSharding(mesh, ws)),
                   jax.device_put(b, NamedSharding(mesh, bs)))
                  for (w, b), (ws, bs) in zip(params, specs)]  # noqa: B905
        return params, jax.device_put(batch, NamedSharding(mesh, batch_spec))
    return place


R = (P(), P())
mp_swapped = _place([R, (P("model", None), P()), (P(None, "model"), P("model")), R],
                    P("batch"))
mp_bias_forgotten = _place([R, (P(None, "model"), P()), (P("model", None), P()), R],
                           P("batch"))
mp_all_replicated = _place([R, R, R, R], P("batch"))
mp_batch_over_model = _place(
    [R, (P(None, "model"), P("model")), (P("model", None), P()), R], P("model"))


def mp_tree_map(params, batch, mesh):  # correct: a pytree of shardings
    specs = [(P(), P()), (P(None, "model"), P("model")), (P("model"), P(None)),
             (P(), P())]
    shardings = jax.tree.map(lambda s: NamedSharding(mesh, s), specs,
                             is_leaf=lambda s: isinstance(s, P))
    params = jax.device_put([tuple(layer) for layer in params], shardings)
    return params, jax.device_put(batch, NamedSharding(mesh, P("batch", None)))


def mp_seed_style(params, batch, mesh):  # correct: unpacked by hand, a tuple back
    def put(x, *spec):
        return jax.device_put(x, NamedSharding(mesh, P(*spec)))
    (W1, b1), (W2, b2), (W3, b3), (W4, b4) = params
    W1, b1 = put(W1), put(b1)
    W2, b2 = put(W2, None, "model"), put(b2, "model")
    W3, b3 = put(W3, "model", None), put(b3)
    W4, b4 = put(W4), put(b4)
    return ((W1, b1), (W2, b2), (W3, b3), (W4, b4)), put(batch, "batch", None)


def mp_by_index(params, batch, mesh):  # correct: a loop over the layers
    placed = []
    for i, (w, b) in enumerate(params):
        w_spec, b_spec = {1: (P(None, "model"), P("model")),
                          2: (P("model", None), P())}.get(i, (P(), P()))
        placed.append((jax.device_put(w, NamedSharding(mesh, w_spec)),
                       jax.device_put(b, NamedSharding(mesh, b_spec))))
    inputs, targets = batch
    rows = NamedSharding(mesh, P("batch"))
    return placed, (jax.device_put(inputs, rows), jax.device_put(targets, rows))


# -- exercise 4
def hidden_forgot_constraint(mesh):
    @jax.jit
    def hidden_layer(x, w):
        return jax.nn.relu(x @ w)
    return hidden_layer


def hidden_constraint_discarded(mesh):
    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("batch", "model")))
        return h
    return hidden_layer


def _constrained_to(*spec):
    """make_hidden_layer with h constrained to P(*spec) (right: "batch", "model")."""
    def make_hidden_layer(mesh):
        @jax.jit
        def hidden_layer(x, w):
            h = jax.nn.relu(x @ w)
            return jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P(*spec)))
        return hidden_layer
    return make_hidden_layer


hidden_transposed = _constrained_to("model", "batch")
hidden_replicated = _constrained_to()
hidden_wrong_axis_name = _constrained_to("batch", "data")


def hidden_split_contracting(mesh):
    @jax.jit
    def hidden_layer(x, w):
        split = NamedSharding(mesh, P("batch", "model"))
        x = jax.lax.with_sharding_constraint(x, split)
        return jax.nn.relu(x @ w)
    return hidden_layer


def hidden_split_w_rows(mesh):
    def constrain(a, *spec):
        return jax.lax.with_sharding_constraint(a, NamedSharding(mesh, P(*spec)))

    return jax.jit(lambda x, w: constrain(jax.nn.relu(x @ constrain(w, "model", None)),
                                          "batch", "model"))


def hidden_split_w_columns(mesh):  # correct: constrain w's columns, h follows
    def hidden_layer(x, w):
        w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P(None, "model")))
        h = jnp.maximum(x @ w, 0)
        target = NamedSharding(mesh, P("batch", "model"))
        return jax.lax.with_sharding_constraint(h, target)
    return jax.jit(hidden_layer)


def hidden_not_jitted(mesh):  # correct: the check compiles it anyway
    target = NamedSharding(mesh, P("batch", "model"))

    def hidden_layer(x, w):
        return jax.lax.with_sharding_constraint(jax.nn.relu(jnp.dot(x, w)), target)
    return hidden_layer


def hidden_out_shardings(mesh):  # correct: jit's out_shardings states the layout
    return jax.jit(lambda x, w: jax.nn.relu(x @ w),
                   out_shardings=NamedSharding(mesh, P("batch", "model")))


def hidden_own_fixed_mesh(mesh):  # wrong: a 4x2 mesh written in, not the one given
    from solutions.sharding import auto_mesh
    fixed = auto_mesh((4, 2), ("batch", "model"))

    @jax.jit
    def hidden_layer(x, w):
        h = jax.nn.relu(x @ w)
        target = NamedSharding(fixed, P("batch", "model"))
        return jax.lax.with_sharding_constraint(h, target)
    return hidden_layer


def dp_own_fixed_mesh(params, batch, mesh):  # wrong: an 8-device mesh written in
    from solutions.sharding import auto_mesh
    fixed = auto_mesh((8,), ("batch",))
    return (jax.device_put(params, NamedSharding(fixed, P())),
            jax.device_put(batch, NamedSharding(fixed, P("batch"))))


# -- exercise 5 (Explicit mode): x's columns and y's rows are split alike
def product_plain(x, y, spec):  # JAX refuses: the sharding is ambiguous
    return x @ y


def product_constrained(x, y, spec):  # an Auto-mode habit; still ambiguous
    return jax.lax.with_sharding_constraint(x @ y, spec)


def product_replicated(x, y, spec):
    return jnp.matmul(x, y, out_sharding=P())


def product_fixed_spec(x, y, spec):
    return jnp.matmul(x, y, out_sharding=P("X", None))


def product_swapped_spec(x, y, spec):
    rows, columns = spec
    return jnp.matmul(x, y, out_sharding=P(columns, rows))


def product_dot(x, y, spec):  # correct
    return jnp.dot(x, y, out_sharding=spec)


def product_einsum(x, y, spec):  # correct
    return jnp.einsum("ik,kj->ij", x, y, out_sharding=spec)


def product_then_reshard(x, y, spec):  # correct: replicated product, then moved
    return jax.reshard(jnp.matmul(x, y, out_sharding=P()), spec)


def product_gather_first(x, y, spec):  # correct: gather x, then the result is clear
    whole_x = jax.reshard(x, P())
    return jax.reshard(whole_x @ y, spec)


def product_auto_axes(x, y, spec):  # correct: let the compiler choose, fix the output
    return jax.sharding.auto_axes(jnp.matmul, out_sharding=spec)(x, y)
