"""A Quix Streams application the interop suite runs against the broker
(tests/test_apps.py), with the apps venv's Python: a running total per key
kept in a state store, each new total written to an output topic.

Usage: quix_app.py BROKER GROUP INPUT OUTPUT STATE_DIR COUNT GUARANTEE

It stops once it has written COUNT totals (or after 60 s without input)
and prints how many it wrote.
"""

import sys

from quixstreams import Application


def main() -> None:
    broker, group, source, sink, state_dir, count, guarantee = sys.argv[1:8]
    app = Application(
        broker_address=broker,
        consumer_group=group,
        auto_offset_reset="earliest",
        state_dir=state_dir,
        processing_guarantee=guarantee,
    )
    numbers = app.topic(source, key_deserializer="str", value_deserializer="json")
    totals = app.topic(sink, key_serializer="str", value_serializer="json")

    def add(value: dict, state) -> dict:
        total = state.get("total", 0) + value["n"]
        state.set("total", total)
        return {"total": total}

    app.dataframe(numbers).apply(add, stateful=True).to_topic(totals)
    written = app.run(count=int(count), timeout=60)
    print(len(written))


if __name__ == "__main__":
    main()
