"""The data layer: offline provisioning, overrides, and bad files."""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jaxcourse import data
from jaxcourse.data import checks, store


def test_offline_provisioning_falls_back_to_fashion_mnist(
    fashion_source: Path, hermetic_data: Path
) -> None:
    info = data.provision(fashion_dir=fashion_source, tfds=False, quiet=True)
    assert info.name == "fashion_mnist"
    assert "Debian" in info.source
    images, labels = data.load_numpy("train")
    assert images.shape == (60_000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (60_000,)
    assert np.bincount(labels).tolist() == [6000] * 10
    test_images, _ = data.load_numpy("test")
    assert test_images.shape == (10_000, 28, 28)
    # torchvision's layout: DATA_DIR/FashionMNIST/raw/<decompressed IDX>.
    assert (hermetic_data / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte").is_file()


def test_provisioning_reports_what_it_chose(
    fashion_source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data.provision(fashion_dir=fashion_source, tfds=False, network_timeout=0.2)
    out = capsys.readouterr().out
    assert "Dataset: Fashion-MNIST (fashion_mnist)" in out


def test_second_run_reuses_verified_files(raw_root: Path) -> None:
    raw = raw_root / "FashionMNIST" / "raw" / "train-images-idx3-ubyte"
    before = raw.stat().st_mtime_ns
    info = data.provision(tfds=False, quiet=True)
    assert info.name == "fashion_mnist"
    assert raw.stat().st_mtime_ns == before


def test_dataset_override_names_the_fix(
    raw_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(data.DATASET_ENV, "mnist")
    with pytest.raises(data.DataNotProvisionedError) as err:
        data.require()
    message = str(err.value)
    assert "MNIST is not provisioned" in message
    assert "--dataset mnist" in message and data.DATASET_ENV in message
    monkeypatch.setenv(data.DATASET_ENV, "fashion_mnist")
    assert data.require().name == "fashion_mnist"


def test_unknown_dataset_is_refused(raw_root: Path) -> None:
    with pytest.raises(data.DataNotProvisionedError, match="Unknown dataset 'cifar'"):
        data.require("cifar")


def test_nothing_provisioned_names_the_command(hermetic_data: Path) -> None:
    with pytest.raises(data.DataNotProvisionedError, match="python -m jaxcourse.data"):
        data.load_numpy("test")


def test_missing_file_is_reported_with_the_fix(raw_root: Path) -> None:
    (raw_root / "FashionMNIST" / "raw" / "t10k-images-idx3-ubyte").unlink()
    with pytest.raises(data.DataCorruptError) as err:
        data.load_numpy("test")
    assert "t10k-images-idx3-ubyte" in str(err.value)
    assert "python -m jaxcourse.data" in str(err.value)


def test_corrupt_file_is_detected_and_repaired(raw_root: Path) -> None:
    target = raw_root / "FashionMNIST" / "raw" / "train-labels-idx1-ubyte"
    payload = bytearray(target.read_bytes())
    payload[100] ^= 0x01  # one flipped bit in one label
    target.write_bytes(bytes(payload))

    with pytest.raises(data.DataCorruptError) as err:
        data.load_numpy("train")
    message = str(err.value)
    assert "train-labels-idx1-ubyte" in message and "corrupt" in message
    assert "python -m jaxcourse.data" in message
    with pytest.raises(data.DataCorruptError):
        data.verify()

    # The fix the message names works: provisioning again rewrites the file.
    data.provision(tfds=False, quiet=True)
    data.verify()
    assert data.load_numpy("train")[1].shape == (60_000,)


def test_corrupt_source_is_refused(tmp_path: Path, fashion_source: Path) -> None:
    source = tmp_path / "fashion"
    shutil.copytree(fashion_source, source)
    blob = gzip.decompress((source / "t10k-images-idx3-ubyte.gz").read_bytes())
    truncated = blob[: len(blob) // 2]
    (source / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(truncated))
    with pytest.raises(data.DataNotProvisionedError) as err:
        data.provision(fashion_dir=source, tfds=False, quiet=True)
    assert "t10k-images-idx3-ubyte" in str(err.value)
    assert "apt-get install dataset-fashion-mnist" in str(err.value)


def test_user_mnist_folder_is_checked_not_trusted(
    tmp_path: Path, fashion_source: Path
) -> None:
    # Fashion-MNIST passed off as MNIST: the .gz files fail MNIST's checksums.
    with pytest.raises(data.DataNotProvisionedError) as err:
        data.provision(
            "mnist",
            mnist_dir=fashion_source,
            tfds=False,
            quiet=True,
            network_timeout=0.2,
        )
    assert "does not match the official MNIST file" in str(err.value)
    # Decompressed, they have no checksum to fail, but the label counts differ.
    plain = tmp_path / "plain"
    plain.mkdir()
    for packed in fashion_source.glob("*.gz"):
        (plain / packed.stem).write_bytes(gzip.decompress(packed.read_bytes()))
    with pytest.raises(data.DataNotProvisionedError) as err:
        data.provision(
            "mnist", mnist_dir=plain, tfds=False, quiet=True, network_timeout=0.2
        )
    assert "not MNIST's" in str(err.value)
    # With no dataset forced, the course falls back to Fashion-MNIST.
    info = data.provision(
        mnist_dir=fashion_source,
        fashion_dir=fashion_source,
        tfds=False,
        quiet=True,
        network_timeout=0.2,
    )
    assert info.name == "fashion_mnist"


def test_user_folder_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(data.DataNotProvisionedError) as err:
        data.provision(
            "mnist", mnist_dir=empty, tfds=False, quiet=True, network_timeout=0.2
        )
    assert "train-images-idx3-ubyte" in str(err.value)


def test_network_probe_is_bounded() -> None:
    started = time.perf_counter()
    assert data.network_answers(timeout=1.0) is False
    # The probe's own timeout is 1 s; the margin is a loaded machine's, not a hang's.
    assert time.perf_counter() - started < 5.0


def test_network_probe_goes_where_the_course_points_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The download host is read when probed, so the fixture's closed port (or
    # this listening one) is what provisioning really asks.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        monkeypatch.setattr(data.sources, "MNIST_HOST", listener.getsockname())
        assert data.network_answers(timeout=5.0) is True


def count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the name of every file the data layer hashes from now on."""
    hashed: list[str] = []
    real = store.sha256_file

    def counting(path: Path) -> str:
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(store, "sha256_file", counting)
    return hashed


def test_checksums_are_verified_once_per_process(
    raw_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The copy was written just now; trust it as one written long ago would be.
    monkeypatch.setattr(checks, "_RECENT_NS", 0)
    hashed = count_hashes(monkeypatch)
    data.ensure()
    assert sorted(hashed) == sorted(n for pair in data.IDX_FILES.values() for n in pair)
    hashed.clear()
    data.load_numpy("train")
    data.load_numpy("test")
    data.require()
    assert hashed == []

    # Corrupted in place, same size, the modification time put back: the
    # file's change time still tells, and it alone is hashed again.
    target = raw_root / "FashionMNIST" / "raw" / "train-labels-idx1-ubyte"
    before = target.stat()
    good = target.read_bytes()
    target.write_bytes(good[:-1] + bytes([good[-1] ^ 0x01]))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert target.stat().st_size == before.st_size
    with pytest.raises(data.DataCorruptError, match="train-labels-idx1-ubyte"):
        data.load_numpy("train")
    assert hashed == ["train-labels-idx1-ubyte"]
    with pytest.raises(data.DataCorruptError, match="train-labels-idx1-ubyte"):
        data.ensure()

    # Put right, it is checked again and trusted again.
    target.write_bytes(good)
    hashed.clear()
    assert data.load_numpy("train")[1].shape == (60_000,)
    assert data.load_numpy("train")[1].shape == (60_000,)
    assert hashed == ["train-labels-idx1-ubyte"]


def test_a_file_just_changed_is_not_trusted_yet(
    raw_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Within the window a second write could leave every timestamp unchanged
    # (coarse file-system clocks), so such a file is hashed on every check.
    monkeypatch.setattr(checks, "_RECENT_NS", 10**18)
    hashed = count_hashes(monkeypatch)
    data.load_numpy("test")
    data.load_numpy("test")
    assert sorted(hashed) == sorted(data.IDX_FILES["test"] * 2)


def test_cli_offline_with_nothing_fails_fast_and_clearly(tmp_path: Path) -> None:
    # The real command, the real network probe, no dataset anywhere.
    env = dict(
        os.environ,
        JAX_COURSE_DATA_DIR=str(tmp_path / "data"),
        JAX_COURSE_FASHION_MNIST_DIR=str(tmp_path / "nowhere"),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcourse.data"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: No dataset could be provisioned")
    assert "apt-get install dataset-fashion-mnist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_check_reports_corruption(raw_root: Path) -> None:
    target = raw_root / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte"
    target.write_bytes(target.read_bytes()[:-1] + b"\x07")
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcourse.data", "--check", "--no-tfds"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "t10k-labels-idx1-ubyte" in proc.stderr and "corrupt" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_full_provisioning_serves_tfds_and_torchvision_offline(
    fashion_source: Path, hermetic_data: Path
) -> None:
    info = data.provision(fashion_dir=fashion_source, quiet=True)
    import tensorflow_datasets as tfds
    import torchvision

    test = tfds.as_numpy(
        tfds.load(
            info.name,
            split="test",
            batch_size=-1,
            data_dir=info.data_dir,
            download=False,
        )
    )
    images, labels = data.load_numpy("test")
    # All three loaders see the same examples in the same order.
    np.testing.assert_array_equal(test["image"][..., 0], images)
    np.testing.assert_array_equal(test["label"], labels)
    dataset_cls = getattr(torchvision.datasets, info.torch_class)
    torch_test = dataset_cls(root=info.data_dir, train=False, download=False)
    np.testing.assert_array_equal(torch_test.data.numpy(), images)

    batches = tfds.load(
        info.name,
        split="train",
        as_supervised=True,
        data_dir=info.data_dir,
        download=False,
    ).batch(1000)
    assert sum(int(b[1].shape[0]) for b in batches) == 60_000

    # A damaged TFDS shard is caught too.
    shard = next(Path(info.data_dir, info.name).glob("*/*.tfrecord*"))
    with shard.open("r+b") as f:
        f.seek(200)
        byte = f.read(1)
        f.seek(200)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(data.DataCorruptError, match=shard.name):
        data.require()
