"""Answers to chapter 2's exercises (topic ``torch_data``), as learners write them.

What checking each must give is in ``torch_data.toml``. PyTorch is imported
inside the answers that use it, so that the light job (Colab's packages, no
PyTorch) can import this module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from solutions import torch_data

# ---- wrong answers ------------------------------------------------------------


def collate_torch(batch):
    from torch.utils.data import default_collate

    return default_collate(batch)


def collate_no_recursion(batch):
    return tuple(np.stack([np.asarray(v) for v in field])
                 for field in zip(*batch, strict=True))


def collate_wrong_axis(batch):
    first = batch[0]
    if isinstance(first, (tuple, list)):
        return type(first)(collate_wrong_axis(list(f))
                           for f in zip(*batch, strict=True))
    return np.stack([np.asarray(x) for x in batch], axis=-1)


def collate_lists(batch):
    return tuple(list(field) for field in zip(*batch, strict=True))


def collate_only_pairs(batch):
    images, labels = zip(*batch, strict=True)
    return np.stack(images), np.array(labels)


def flatten_no_cast(pic):
    return np.asarray(pic).reshape(-1)


def flatten_float64(pic):
    return np.asarray(pic).astype(float).ravel()


def flatten_reshape_method(pic):
    return pic.reshape(-1).astype(np.float32)


def flatten_hard_coded(pic):
    return np.asarray(pic, dtype=np.float32).reshape(784)


def flatten_scaled(pic):
    return np.asarray(pic, dtype=np.float32).ravel() / 255.0


def flatten_to_tensor(pic):
    import torch

    return torch.flatten(torch.as_tensor(np.asarray(pic), dtype=torch.float32))


def flatten_jax(pic):
    return jnp.ravel(jnp.asarray(np.asarray(pic), dtype=jnp.float32))


def batches_drop_last(images, labels, batch_size):
    n = len(images) // batch_size
    return [(images[i * batch_size:(i + 1) * batch_size],
             labels[i * batch_size:(i + 1) * batch_size]) for i in range(n)]


def batches_off_by_one(images, labels, batch_size):
    return [(images[s:s + batch_size - 1], labels[s:s + batch_size - 1])
            for s in range(0, len(images), batch_size)]


def batches_per_example(images, labels, batch_size):
    out = []
    for start in range(0, len(images), batch_size):
        rows = [images[i] for i in range(start, min(start + batch_size, len(images)))]
        ys = [labels[i] for i in range(start, min(start + batch_size, len(images)))]
        out.append((np.stack(rows), np.array(ys)))
    return out


def batches_zip_loop(images, labels, batch_size):
    pairs = list(zip(images, labels, strict=True))
    return [torch_data.numpy_collate(pairs[s:s + batch_size])
            for s in range(0, len(pairs), batch_size)]


def batches_labels_unsliced(images, labels, batch_size):
    return [(images[s:s + batch_size], labels)
            for s in range(0, len(images), batch_size)]


def shuffled_with_replacement(num_examples, batch_size, seed):
    idx = np.random.default_rng(seed).integers(0, num_examples, num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_not_shuffled(num_examples, batch_size, seed):
    idx = np.arange(num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_global_seed(num_examples, batch_size, seed):
    np.random.seed(seed)
    idx = np.random.permutation(num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_unseeded(num_examples, batch_size, seed):
    idx = np.random.default_rng().permutation(num_examples)
    return [idx[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def shuffled_drop_last(num_examples, batch_size, seed):
    idx = np.random.default_rng(seed).permutation(num_examples)
    return [idx[i * batch_size:(i + 1) * batch_size]
            for i in range(num_examples // batch_size)]


def loader_default_collate(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=batch_size)


def loader_drop_last(dataset, batch_size, collate_fn):
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    full_batches = BatchSampler(SequentialSampler(dataset), batch_size, True)
    return DataLoader(dataset, batch_sampler=full_batches, collate_fn=collate_fn)


def loader_batch_128(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, batch_size=128, collate_fn=collate_fn)


def loader_list(dataset, batch_size, collate_fn):
    # Batches, but not a DataLoader: the exercise asks for a real one.
    return [collate_fn(dataset[s:s + batch_size])
            for s in range(0, len(dataset), batch_size)]


# ---- alternative correct answers ---------------------------------------------


def collate_tree_map(batch):
    return jax.tree.map(lambda *leaves: np.stack(leaves), *batch)


def collate_asarray(batch):
    if isinstance(batch[0], (tuple, list)):
        return type(batch[0])(collate_asarray([ex[i] for ex in batch])
                              for i in range(len(batch[0])))
    return np.array(batch)


def collate_seed(batch):
    # The seed's version (and the current JAX docs' "Training a simple neural
    # network, with PyTorch data loading"): torch's default_collate, then every
    # leaf turned into NumPy. It returns lists where the reference keeps tuples.
    from torch.utils.data import default_collate

    return jax.tree.map(np.asarray, default_collate(batch))


def collate_old_docs(batch):
    # The older docs' recursive version: lists for every container.
    if isinstance(batch[0], np.ndarray):
        return np.stack(batch)
    if isinstance(batch[0], (tuple, list)):
        return [collate_old_docs(list(samples)) for samples in zip(*batch, strict=True)]
    return np.array(batch)


def flatten_reshape(pic):
    return np.array(pic).reshape(-1).astype(np.float32)


def flatten_float32_ravel(pic):
    return np.asarray(pic).astype(np.float32).ravel()


def batches_generator(images, labels, batch_size):
    for start in range(0, len(images), batch_size):
        stop = start + batch_size
        yield images[start:stop], labels[start:stop]


def batches_array_split(images, labels, batch_size):
    cuts = range(batch_size, len(images), batch_size)
    return list(zip(np.array_split(images, cuts), np.array_split(labels, cuts),
                    strict=True))


def batches_fancy_index(images, labels, batch_size):
    order = np.arange(len(images))
    parts = (order[s:s + batch_size] for s in range(0, len(order), batch_size))
    return [(images[i], labels[i]) for i in parts]


def shuffled_shuffle(num_examples, batch_size, seed):
    order = np.arange(num_examples)
    np.random.default_rng(seed).shuffle(order)
    return np.array_split(order, range(batch_size, num_examples, batch_size))


def shuffled_lists(num_examples, batch_size, seed):
    order = np.random.default_rng(seed).permutation(num_examples)
    return [order[s:s + batch_size] for s in range(0, num_examples, batch_size)]


def loader_keywords(dataset, batch_size, collate_fn):
    from torch.utils.data import DataLoader

    return DataLoader(dataset=dataset, batch_size=batch_size, shuffle=False,
                      collate_fn=collate_fn, drop_last=False)


def loader_sampler(dataset, batch_size, collate_fn):
    # The docs' NumpyLoader idea: an explicit sequential sampler.
    from torch.utils.data import DataLoader, SequentialSampler

    return DataLoader(dataset, batch_size=batch_size,
                      sampler=SequentialSampler(dataset), collate_fn=collate_fn)


def loader_batch_sampler(dataset, batch_size, collate_fn):
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate_fn)
