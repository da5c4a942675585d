"""The Java client is the pinned one: kafka-clients 4.3.0 from the jars that
`cargo xtask interop` extracted, run by our driver on Java 17 or later. A
missing JDK, classpath or jar fails here (never a skip)."""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

from mkinterop import java_client

JARS_TXT = Path(__file__).resolve().parent.parent / "java" / "jars.txt"


def test_the_java_client_is_kafka_clients_4_3_0():
    version = java_client.call("version")
    assert version["kafka_clients"] == "4.3.0", version
    assert int(version["java"].split(".")[0]) >= 17, version


def test_the_classpath_holds_the_driver_and_exactly_the_pinned_jars():
    driver, *jars = os.environ["MK_JAVA_CLASSPATH"].split(":")
    with zipfile.ZipFile(driver) as z:
        assert "mkinterop/Driver.class" in z.namelist(), driver
    pinned = [line.strip() for line in JARS_TXT.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert [Path(j).name for j in jars] == pinned
    assert all(Path(j).is_file() for j in jars), jars
    assert "kafka-clients-4.3.0.jar" in pinned and any(re.match(r"snappy-java-.*\.jar", j) for j in pinned)
    assert Path(os.environ["MK_JAVA_ARCHIVE"]).is_file(), "no class data sharing archive"
