"""``jaxcourse.collectives``: the NumPy model, the real collectives, the pictures.

The model (:func:`simulate`), the byte counts and the drawings need no devices
and are tested here directly. The real collectives need 8 devices, which JAX
fixes when it starts, so they are compared with the model in a fresh
interpreter (as in ``tests/test_exercises_sharding.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from processes import MARK, run_script

from jaxcourse.collectives import (
    NAMES,
    SUM,
    bytes_sent,
    draw_collective,
    ring_pairs,
    simulate,
)

BLOCKS = np.arange(16, dtype=np.float32).reshape(4, 4)  # device d holds 4d..4d+3


# ---- the NumPy model -----------------------------------------------------------


def test_psum_gives_every_device_the_sum() -> None:
    values, origin = simulate("psum", BLOCKS)
    assert values.tolist() == [[24, 28, 32, 36]] * 4
    assert (origin == SUM).all()


def test_all_gather_gives_every_device_every_block_in_order() -> None:
    values, origin = simulate("all_gather", BLOCKS)
    assert values.tolist() == [list(range(16))] * 4
    assert origin[2].tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4


def test_psum_scatter_is_the_sum_cut_into_pieces() -> None:
    values, origin = simulate("psum_scatter", BLOCKS)
    assert values.tolist() == [[24], [28], [32], [36]]
    assert (origin == SUM).all()
    # psum = all_gather(psum_scatter): the pieces, concatenated, are the sum.
    assert values.reshape(-1).tolist() == simulate("psum", BLOCKS)[0][0].tolist()


@pytest.mark.parametrize("shift", [1, -1, 3])
def test_ppermute_ring_shift_moves_whole_blocks(shift: int) -> None:
    values, origin = simulate("ppermute", BLOCKS, shift=shift)
    for d in range(4):
        sender = (d - shift) % 4
        assert values[d].tolist() == BLOCKS[sender].tolist()
        assert (origin[d] == sender).all()


def test_all_to_all_transposes_devices_and_pieces() -> None:
    values, origin = simulate("all_to_all", BLOCKS)
    # Device d receives piece d of every block: here one number from each.
    assert values.tolist() == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14],
                               [3, 7, 11, 15]]
    assert origin[1].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("name", ["psum_scatter", "all_to_all"])
def test_pieces_must_divide_evenly(name: str) -> None:
    with pytest.raises(ValueError, match="divisible by 4"):
        simulate(name, np.zeros((4, 6)))


def test_unknown_collective_and_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown collective 'pmax'"):
        simulate("pmax", BLOCKS)
    with pytest.raises(ValueError, match="must be"):
        simulate("psum", np.zeros(4))


def test_ring_pairs_close_the_ring() -> None:
    assert ring_pairs(4) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert ring_pairs(3, -1) == [(0, 2), (1, 0), (2, 1)]
    for n in (2, 4, 8):
        sources, destinations = zip(*ring_pairs(n), strict=True)
        assert sorted(sources) == sorted(destinations) == list(range(n))


# ---- bytes sent ----------------------------------------------------------------


def test_bytes_sent_follows_the_ring_algorithms() -> None:
    block = 1024 * 4
    assert bytes_sent("psum", 8, 1024) == 2 * 7 * block // 8
    assert bytes_sent("all_gather", 8, 1024) == 7 * block
    assert bytes_sent("psum_scatter", 8, 1024) == 7 * block // 8
    # One-way ring: the piece for the device k hops away is sent k times.
    assert bytes_sent("all_to_all", 8, 1024) == (1 + 2 + 3 + 4 + 5 + 6 + 7) * block // 8
    assert bytes_sent("all_to_all", 8, 1024, topology="direct") == 7 * block // 8
    # Half an all-gather of the same block on the ring, as the scaling book has it.
    assert bytes_sent("all_to_all", 8, 1024) * 2 == bytes_sent("all_gather", 8, 1024)
    for name in NAMES:
        if name != "all_to_all":
            assert bytes_sent(name, 8, 1024, topology="direct") == bytes_sent(
                name, 8, 1024)
    with pytest.raises(ValueError, match="unknown topology"):
        bytes_sent("psum", 8, 1024, topology="torus")
    assert bytes_sent("ppermute", 8, 1024) == block
    assert bytes_sent("ppermute", 1, 1024) == 0
    # A psum is a psum_scatter followed by an all_gather of the pieces.
    assert bytes_sent("psum", 8, 1024) == bytes_sent("psum_scatter", 8, 1024) + \
        bytes_sent("all_gather", 8, 1024 // 8)
    # all_gather grows with the devices; psum stays under two blocks.
    assert bytes_sent("all_gather", 8, 16) > bytes_sent("all_gather", 2, 16)
    assert all(bytes_sent("psum", n, 64) < 2 * 64 * 4 for n in (2, 4, 8))


# ---- the pictures --------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_draw_collective_draws_one_cell_per_entry(name: str) -> None:
    import matplotlib.pyplot as plt

    fig = draw_collective(name, BLOCKS)
    try:
        before, after = fig.axes
        assert before.get_title() == "before" and after.get_title() == "after"
        assert len(before.patches) == BLOCKS.size
        assert len(after.patches) == simulate(name, BLOCKS)[0].size
        # Numbers are written in the cells while they fit.
        assert len(after.texts) == len(after.patches)
        assert name in fig.texts[0].get_text()  # the suptitle
    finally:
        plt.close(fig)


def test_large_blocks_are_drawn_without_numbers() -> None:
    import matplotlib.pyplot as plt

    fig = draw_collective("all_gather", np.arange(32.0).reshape(4, 8))
    try:
        assert len(fig.axes[1].patches) == 4 * 32  # 4 devices, 32 entries each
        assert len(fig.axes[1].texts) == 0  # 32 entries per device: colours only
    finally:
        plt.close(fig)



def test_draw_steps_draws_each_program_s_collectives_in_a_row() -> None:
    import matplotlib.pyplot as plt

    from jaxcourse.collectives import draw_steps

    pieces, partial = np.arange(4.0)[:, None], np.ones((4, 4))
    fig = draw_steps([("FSDP", [("all_gather", "weight", pieces),
                                ("psum_scatter", "gradient", partial)]),
                      ("data parallel", [("psum", "gradient", partial)])])
    try:
        assert fig.get_size_inches()[0] <= 6.4  # the book's text column
        panels = [ax for ax in fig.axes if ax.patches]
        assert [ax.get_title() for ax in panels] == [
            "all_gather: weight", "psum_scatter: gradient", "psum: gradient"]
        # Before and after, every entry a cell: 4 + 16, 16 + 4, 16 + 16.
        assert [len(ax.patches) for ax in panels] == [20, 20, 32]
    finally:
        plt.close(fig)

# ---- the real collectives, on 8 simulated devices -------------------------------


def test_real_collectives_match_the_model() -> None:
    found = run_script(f"""
        import json
        import jax
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        import numpy as np
        from jaxcourse.collectives import (NAMES, line_mesh, per_device_program,
                                           run_collective, simulate)
        from jaxcourse.exercises.widgets.explorers_sharding import collectives

        out = {{}}
        for n in (2, 4, 8):
            mesh = line_mesh(n)
            blocks = np.arange(n * 8, dtype=np.float32).reshape(n, 8)
            for name in NAMES:
                for shift in ((1, -1, 3) if name == "ppermute" else (1,)):
                    real = run_collective(name, blocks, mesh, shift)
                    model, _ = simulate(name, blocks, shift)
                    out[f"{{name}} n={{n}} shift={{shift}}"] = bool(
                        np.array_equal(real, model))
            out[f"compiled n={{n}}"] = {{
                name: collectives(per_device_program(name, mesh), blocks)
                for name in NAMES}}
        print({MARK!r} + json.dumps(out))
    """)
    agree = {k: v for k, v in found.items() if not k.startswith("compiled")}
    assert agree and all(agree.values()), agree
    assert found["compiled n=8"] == {
        "psum": ["all-reduce"],
        "all_gather": ["all-gather"],
        "psum_scatter": ["reduce-scatter"],
        "ppermute": ["collective-permute"],
        "all_to_all": ["all-to-all"],
    }


def test_line_mesh_is_auto_and_says_when_devices_are_missing() -> None:
    found = run_script(f"""
        import json
        import jax
        from jaxcourse.devices import use_cpu_devices

        use_cpu_devices(8)
        from jaxcourse.collectives import line_mesh

        mesh = line_mesh(4, "batch")
        print({MARK!r} + json.dumps([dict(mesh.shape), str(mesh.axis_types),
                                     [d.id for d in mesh.devices]]))
    """)
    assert found == [{"batch": 4}, "(Auto,)", [0, 1, 2, 3]]
    error = run_script(f"""
        import json
        import jax.numpy as jnp
        from jaxcourse.collectives import line_mesh

        jnp.ones(2)  # JAX starts with one device
        try:
            line_mesh(8)
        except Exception as err:
            print({MARK!r} + json.dumps(f"{{type(err).__name__}}: {{err}}"))
    """)
    assert error.startswith("DeviceSetupError: this needs 8 devices")
    assert "use_cpu_devices(8)" in error


def test_draw_collective_speaks_the_chapter_s_language() -> None:
    import matplotlib.pyplot as plt

    for language, device in (("zh-Hant", "裝置"), ("zh-Hans", "设备")):
        fig = draw_collective("ppermute", BLOCKS, shift=-1, language=language)
        try:
            assert fig.axes[0].get_title() == "之前"
            assert fig.axes[0].get_xlabel() == device
            title = fig.texts[0].get_text()
            assert "d - 1" in title and device in title
        finally:
            plt.close(fig)
