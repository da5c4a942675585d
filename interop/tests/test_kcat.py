"""kcat (Debian's package, librdkafka inside): metadata listing (-L), keyed
produce (-P -K:), consume to the end (-C -e) with format strings (-f), and
offsets by timestamp (-Q), each checked on kcat's real output. kcat cannot
create topics: they are made with `mk-server topic create` over JSON-TCP."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import defaultdict

from conftest import unique_topic

from mkinterop.kcat import create_topic_via_cli as kcat_create_topic
from mkinterop.kcat import kcat

def test_kcat_metadata_list(broker):
    topic = unique_topic("kcat-list")
    kcat_create_topic(broker, topic, 3)
    port = broker.bootstrap.rsplit(":", 1)[1]
    out = kcat(broker, "-L", "-t", topic).stdout.decode()
    assert re.search(r"^Metadata for " + re.escape(topic) + r" \(from broker 1: 127\.0\.0\.1:" + port + r"/1\):$", out, re.M), out
    assert re.search(r"^ 1 brokers:\n  broker 1 at 127\.0\.0\.1:" + port + r"( \(controller\))?\n", out, re.M), out
    assert re.search(r'^ 1 topics:\n  topic "' + re.escape(topic) + r'" with 3 partitions:\n', out, re.M), out
    for p in range(3):
        assert re.search(rf"^    partition {p}, leader 1, replicas: 1, isrs: 1$", out, re.M), out

    # The JSON envelope says the same.
    md = json.loads(kcat(broker, "-L", "-J", "-t", topic).stdout)
    assert [b["id"] for b in md["brokers"]] == [1]
    assert md["brokers"][0]["name"] == f"127.0.0.1:{port}"
    [t] = md["topics"]
    assert t["topic"] == topic and "error" not in t, t
    assert [(p["partition"], p["leader"], [r["id"] for r in p["replicas"]]) for p in t["partitions"]] == [
        (p, 1, [1]) for p in range(3)
    ]


def test_kcat_keyed_produce_and_consume_to_end(broker):
    topic = unique_topic("kcat-keyed")
    kcat_create_topic(broker, topic, 3)
    n = 3000
    lines = [(f"key-{i % 50}", f"value-{i:05d}") for i in range(n)]
    stdin = "".join(f"{k}:{v}\n" for k, v in lines).encode()
    kcat(broker, "-P", "-t", topic, "-K:", "-X", "acks=all", "-X", "enable.idempotence=true", stdin=stdin)

    proc = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%t|%p|%o|%k|%s|%T\\n")
    rows = [line.split("|") for line in proc.stdout.decode().splitlines()]
    assert len(rows) == n, f"kcat -C printed {len(rows)} records, {n} produced"
    assert {r[0] for r in rows} == {topic}

    by_partition = defaultdict(list)
    partitions_of_key = defaultdict(set)
    index = {v: i for i, (_, v) in enumerate(lines)}
    key_of = dict((v, k) for k, v in lines)
    now_ms = int(time.time() * 1000)
    for _, p, o, k, v, ts in rows:
        assert key_of[v] == k, f"{v}: key {k!r}, produced with {key_of[v]!r}"
        assert now_ms - 600_000 < int(ts) <= now_ms + 60_000, f"timestamp {ts} of {v}"
        by_partition[int(p)].append((int(o), index[v]))
        partitions_of_key[k].add(int(p))
    assert sorted(by_partition) == [0, 1, 2], f"partitions used: {sorted(by_partition)}"
    for p, recs in by_partition.items():
        assert [o for o, _ in recs] == list(range(len(recs))), f"partition {p} offsets"
        assert [i for _, i in recs] == sorted(i for _, i in recs), f"partition {p} not in input order"
    assert all(len(ps) == 1 for ps in partitions_of_key.values()), dict(partitions_of_key)

    # -e: kcat says it reached each partition's end, at that partition's count.
    err = proc.stderr.decode()
    for p, recs in by_partition.items():
        assert f"Reached end of topic {topic} [{p}] at offset {len(recs)}" in err, err


def test_kcat_query_offsets_by_timestamp(broker):
    topic = unique_topic("kcat-times")
    kcat_create_topic(broker, topic, 1)
    kcat(broker, "-P", "-t", topic, "-p", "0", stdin=b"".join(b"r%d\n" % i for i in range(10)))
    proc = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%o %T\\n")
    stamps = [tuple(map(int, line.split())) for line in proc.stdout.decode().splitlines()]
    assert [o for o, _ in stamps] == list(range(10))
    # The earliest offset whose timestamp is >= the query.
    ts5 = stamps[5][1]
    expected = min(o for o, ts in stamps if ts >= ts5)
    out = kcat(broker, "-Q", "-t", f"{topic}:0:{ts5}").stdout.decode()
    assert re.search(rf"^{re.escape(topic)} \[0\] offset {expected}$", out, re.M), out
    out = kcat(broker, "-Q", "-t", f"{topic}:0:{stamps[0][1] - 1000}").stdout.decode()
    assert re.search(rf"^{re.escape(topic)} \[0\] offset 0$", out, re.M), out


def test_kcat_reads_every_codec_it_produced(broker, compressed_by_kcat):
    for codec, (topic, sent) in compressed_by_kcat.items():
        proc = kcat(broker, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%o|%k|%s\\n")
        rows = [line.split("|") for line in proc.stdout.decode().splitlines()]
        assert rows == [[str(i), r.key.decode(), r.value.decode()] for i, r in enumerate(sent)], codec
