"""The pinned clients are the ones installed: a missing or different client
fails here (never a skip)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
JS_DIR = Path(__file__).resolve().parent.parent / "js"


def pinned(name: str) -> str:
    for line in REQUIREMENTS.read_text().splitlines():
        m = re.match(rf"^{re.escape(name)}==(\S+)$", line.strip())
        if m:
            return m.group(1)
    raise AssertionError(f"{name} is not pinned in {REQUIREMENTS}")


def test_python_clients_are_the_pinned_versions():
    import aiokafka
    import confluent_kafka
    import kafka

    assert confluent_kafka.__version__ == pinned("confluent-kafka")
    assert kafka.__version__ == pinned("kafka-python")
    assert aiokafka.__version__ == pinned("aiokafka")
    # confluent-kafka's wheel bundles librdkafka of the same minor version.
    assert confluent_kafka.libversion()[0].startswith(".".join(pinned("confluent-kafka").split(".")[:2]))


def test_python_codecs_are_importable():
    import cramjam
    import lz4.frame
    import snappy
    import zstandard
    from aiokafka import codec as aiocodec
    from kafka import codec as kcodec

    assert kcodec.has_snappy() and kcodec.has_lz4() and kcodec.has_zstd() and kcodec.has_gzip()
    assert aiocodec.has_snappy() and aiocodec.has_lz4() and aiocodec.has_zstd() and aiocodec.has_gzip()
    from importlib.metadata import version

    for dist in ["lz4", "python-snappy", "zstandard", "cramjam"]:
        assert version(dist) == pinned(dist), f"{dist} {version(dist)} installed, {pinned(dist)} pinned"
    data = b"the same bytes, compressed and back" * 8
    assert lz4.frame.decompress(lz4.frame.compress(data)) == data
    assert snappy.decompress(snappy.compress(data)) == data
    assert zstandard.ZstdDecompressor().decompress(zstandard.ZstdCompressor().compress(data)) == data
    assert bytes(cramjam.snappy.decompress_raw(cramjam.snappy.compress_raw(data))) == data


def test_kafkajs_is_the_locked_version():
    lock = json.loads((JS_DIR / "package-lock.json").read_text())
    wanted = json.loads((JS_DIR / "package.json").read_text())["dependencies"]
    for name, version in wanted.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name
        installed = json.loads((JS_DIR / "node_modules" / name / "package.json").read_text())
        assert installed["version"] == version, f"{name} {installed['version']} installed, {version} pinned"
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout
    assert int(node.strip().lstrip("v").split(".")[0]) >= 18, node


def test_kcat_is_installed_with_every_codec():
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^Version 1\.7\.1 ", out, re.M), out
    features = re.search(r"builtin\.features=(\S+)", out)
    assert features, out
    assert {"gzip", "snappy", "lz4", "zstd"} <= set(features.group(1).rstrip(")").split(",")), out
