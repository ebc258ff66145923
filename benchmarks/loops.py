"""How close do the chapters' training loops get to the device-resident limit?

Run: ``make bench`` (or ``python benchmarks/loops.py --epochs 5``).

The limit is one epoch of the same jitted SGD update over data already on the
device: a :func:`jax.lax.scan` over pre-batched arrays, one Python call per
epoch. Every loop below trains the same model with the same 468 full batches
of 128 per epoch, read in file order without shuffling (as the chapters' timed
loops do, so that their parameters can be compared), and the epochs of all
loops are interleaved round by round, so that the machine's noise hits them
alike; each ratio is a loop's median epoch time over the limit's median from
the same run. The two chapters' loops
run in separate processes, as the chapters do (each in its own kernel).

For chapter 1 (TFDS) and chapter 2 (PyTorch data loading), three loops each:

* ``reference``: the original tutorials' loop (for torch, a per-sample
  transform and the default collate, turned into NumPy);
* ``plain``: the chapter's plain loop, one jitted step per batch (for TFDS a
  pipeline built once; for torch the chapter's batched loader over whole
  arrays);
* ``fast``: the fastest loop the chapter teaches: the loader hands over a
  chunk of batches at once, as compact ``uint8``, and a ``lax.scan`` runs the
  steps of a chunk in one call, while JAX's asynchronous dispatch lets Python
  fetch the next chunk as the device computes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jax
import jax.numpy as jnp
import numpy as np

from jaxcourse import data, mlp

BATCH = mlp.REFERENCE.batch_size
CHUNK = 39  # batches per scan call: 468 = 12 × 39
LIMITS = {"tfds": 1.2, "torch": 1.3}


def tfds_loops(info: data.DatasetInfo) -> dict[str, Callable]:
    """The three chapter-1 loops, each a function ``params -> params``."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    tf.config.set_visible_devices([], "GPU")
    scan_epoch = mlp.make_scan_epoch()

    def load():
        return tfds.load(
            info.name,
            split="train",
            as_supervised=True,
            data_dir=info.data_dir,
            download=False,
        )

    def per_batch(params, ds):
        for x, y in tfds.as_numpy(ds):
            x = jnp.reshape(x, (len(x), -1)).astype(jnp.float32)
            params = mlp.update(params, x, mlp.one_hot(y))
        return params

    def reference(params):
        # As the original tutorial: the pipeline is built anew every epoch, so
        # its auto-cache starts empty and every epoch decodes the PNGs again.
        return per_batch(params, load().batch(BATCH, drop_remainder=True).prefetch(1))

    # Chapter 1's training loop: one pipeline, one jitted step per batch.
    batches = load().batch(BATCH, drop_remainder=True).prefetch(1)

    def plain(params):
        return per_batch(params, batches)

    # tfds.load already caches the decoded examples of a small dataset after
    # its first pass (its auto-cache), so decoding is a first-epoch cost; the
    # speed-up is the 12 scan calls instead of 468 updates. This .cache() keeps
    # the finished chunks, so later passes skip re-batching the examples.
    chunks = (
        load()
        .batch(BATCH, drop_remainder=True)
        .batch(CHUNK)
        .map(lambda x, y: (tf.reshape(x, (CHUNK, BATCH, 784)), y))
        .cache()
        .prefetch(2)
    )

    def fast(params):
        for x, y in tfds.as_numpy(chunks):
            params = scan_epoch(params, x, y)
        return params

    return {"reference": reference, "plain": plain, "fast": fast}


def torch_loops(info: data.DatasetInfo) -> dict[str, Callable]:
    """The three chapter-2 loops, each a function ``params -> params``."""
    import torch
    import torchvision
    from torch.utils.data import DataLoader, default_collate

    torch.set_num_threads(1)
    dataset_cls = getattr(torchvision.datasets, info.torch_class)
    scan_epoch = mlp.make_scan_epoch()

    def flatten_and_cast(picture) -> np.ndarray:
        return np.ravel(np.array(picture, dtype=np.float32))

    def numpy_collate(batch):
        return jax.tree.map(np.asarray, default_collate(batch))

    per_sample = dataset_cls(
        root=info.data_dir, train=True, download=False, transform=flatten_and_cast
    )
    tensors = dataset_cls(root=info.data_dir, train=True, download=False)
    images = tensors.data.numpy().reshape(len(tensors), -1)  # uint8, (N, 784)
    labels = tensors.targets.numpy()

    def reference(params):
        loader = DataLoader(
            per_sample, batch_size=BATCH, drop_last=True, collate_fn=numpy_collate
        )
        for x, y in loader:
            params = mlp.update(params, x, mlp.one_hot(y))
        return params

    def batches(size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        # A batch sampler hands out index lists; one fancy-index per batch
        # replaces BATCH calls to __getitem__ and a per-sample collate.
        sampler = torch.utils.data.BatchSampler(
            torch.utils.data.SequentialSampler(range(len(labels))), size, True
        )
        for index in sampler:
            yield images[index], labels[index]

    def plain(params):
        for x, y in batches(BATCH):
            params = mlp.update(params, x.astype(np.float32), mlp.one_hot(y))
        return params

    def fast(params):
        for x, y in batches(BATCH * CHUNK):
            params = scan_epoch(
                params, x.reshape(CHUNK, BATCH, 784), y.reshape(CHUNK, BATCH)
            )
        return params

    return {"reference": reference, "plain": plain, "fast": fast}


def main() -> None:
    """Time every loop, interleaved, and print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--epochs",
        type=int,
        default=5,
        help="timed epochs per loop (after one warm-up)",
    )
    parser.add_argument(
        "--only",
        choices=("tfds", "torch"),
        help="time one chapter's loops (with the limit) and not the other's",
    )
    args = parser.parse_args()
    if args.only is None:
        # Each chapter runs in a kernel of its own, and so does each half of
        # the benchmark: TensorFlow's and PyTorch's thread pools in one process
        # compete with XLA's for the two cores and distort both sets of ratios.
        for chapter in ("tfds", "torch"):
            command = [sys.executable, __file__, "--epochs", str(args.epochs)]
            subprocess.run([*command, "--only", chapter], check=True)
            print()
        return

    info = data.require()
    train_x, train_y = data.load_numpy("train")
    steps = len(train_y) // BATCH
    n = steps * BATCH
    resident_x = jax.device_put(
        train_x[:n].reshape(steps, BATCH, 784).astype(np.float32)
    )
    resident_y = jax.device_put(train_y[:n].reshape(steps, BATCH).astype(np.int32))
    scan_epoch = mlp.make_scan_epoch()

    loops: dict[str, Callable] = {
        "limit: device-resident scan": lambda p: scan_epoch(p, resident_x, resident_y)
    }
    if args.only != "torch":
        loops.update({f"ch1 tfds {k}": f for k, f in tfds_loops(info).items()})
    if args.only != "tfds":
        loops.update({f"ch2 torch {k}": f for k, f in torch_loops(info).items()})

    params0 = mlp.init_params(mlp.REFERENCE.layer_sizes, jax.random.key(0))
    results = {}
    times: dict[str, list[float]] = {name: [] for name in loops}
    print(
        f"{info.title}: {steps} batches of {BATCH} per epoch, "
        f"{args.epochs} timed epochs per loop (+1 warm-up), interleaved"
    )
    for round_ in range(args.epochs + 1):
        for name, loop in loops.items():
            start = time.perf_counter()
            params = jax.block_until_ready(loop(params0))
            if round_:
                times[name].append(time.perf_counter() - start)
            results[name] = params

    # Every loop trained the same model on the same batches in the same order.
    ref = results["limit: device-resident scan"]
    for name, params in results.items():
        for (w, b), (w0, b0) in zip(params, ref, strict=True):
            np.testing.assert_allclose(w, w0, rtol=1e-3, atol=1e-5, err_msg=name)
            np.testing.assert_allclose(b, b0, rtol=1e-3, atol=1e-5, err_msg=name)

    limit = statistics.median(times["limit: device-resident scan"])
    print(f"\n{'loop':32s} {'median s':>9s} {'ratio':>7s}")
    for name, ts in times.items():
        ratio = statistics.median(ts) / limit
        target = ""
        if name.endswith("fast"):
            bound = LIMITS["tfds" if "tfds" in name else "torch"]
            target = f"  target <= {bound}x: {'met' if ratio <= bound else 'NOT met'}"
        print(f"{name:32s} {statistics.median(ts):9.3f} {ratio:6.2f}x{target}")


if __name__ == "__main__":
    main()
