"""The console in a real browser against the real broker: what a person
sees when topics are created, records produced, consumers fall behind and
catch up, a partition is damaged, offsets are reset and transactions end.
Every step's screenshot is saved under target/console-screenshots/."""

from __future__ import annotations

from selenium.webdriver.common.by import By


def committed_offsets(console, group: str) -> dict:
    answer = console.call("fetch_offsets", group_id=group)
    return {(o["topic"], o["partition"]): o["offset"] for o in answer["offsets"]}


def test_a_new_topic_appears_in_the_list_and_on_the_overview(console):
    console.open("overview")
    console.wait_text("tile-partitions", lambda t: "0 / 0" in t, "to show no partitions yet")
    console.open("topics")
    assert "No topics yet" in console.body_text()
    console.shot("empty")

    console.click("new-topic")
    console.type("topic-name", "orders")
    form = console.find("create-topic-form")
    partitions = form.find_element(By.NAME, "partitions")
    partitions.clear()
    partitions.send_keys("3")
    console.shot("form")
    console.click("create-topic")

    # The topic's own page opens with its three partitions.
    console.wait(lambda d: d.find_element(By.ID, "title").text == "orders", "the topic page")
    rows = console.texts_of("partition-row-", 3)
    assert all("online" in r for r in rows), rows
    console.shot("topic")

    console.open("topics")
    row = console.wait_text("topic-row-orders", lambda t: "orders" in t, "to list the topic")
    assert row.split()[:3] == ["orders", "3", "1"], row
    console.open("overview")
    console.wait_text("tile-partitions", lambda t: "3 / 3" in t and "1 topic" in t, "to count its partitions")
    console.shot("overview")


def test_a_produced_record_shows_up_with_its_headers_in_every_format(console):
    console.call("create_topic", topic="events", partitions=2, replication_factor=1)
    console.open("messages?topic=events&partition=1")
    console.wait_text("records", lambda t: "No records here" in t, "to show an empty partition")

    console.click("produce-toggle")
    console.select("produce-partition", "1")
    console.type("produce-key", "user-42")
    console.type("produce-value", '{"id": 42, "name": "Ada"}')
    form = console.find("produce-form")
    form.find_element(By.XPATH, ".//button[contains(., 'Add header')]").click()
    name, value = form.find_elements(By.CSS_SELECTOR, ".kv-row input")[:2]
    name.send_keys("trace-id")
    value.send_keys("abc-123")
    console.shot("form")
    console.click("produce-send")

    record = console.wait_text("record-0", lambda t: "user-42" in t, "to show the produced record")
    assert '{"id": 42, "name": "Ada"}' in record, record
    headers = console.text_of("record-headers")
    assert "trace-id" in headers and "abc-123" in headers, headers
    console.shot("text")

    console.select("browse-format", "json")
    console.wait_text("record-0", lambda t: '"name": "Ada"' in t and '{\n  "id": 42' in t, "as pretty JSON")
    console.select("browse-format", "hex")
    console.wait_text("record-0", lambda t: "7b 22 69 64 22" in t, "as hex")
    console.select("browse-format", "base64")
    console.wait_text("record-0", lambda t: "eyJpZCI6IDQyLCAibmFtZSI6ICJBZGEifQ==" in t, "as base64")
    console.shot("base64")


def test_lag_rises_while_nobody_consumes_and_falls_after_a_commit(console):
    console.call("create_topic", topic="clicks", partitions=1, replication_factor=1)
    joined = console.call("join_group", group_id="readers", member_id="m1", topics=["clicks"])
    console.open("groups/readers")
    console.wait_text("group-state", lambda t: t == "Stable", "to show a stable group")
    console.produce("clicks", 0, [f"click-{i}" for i in range(5)])
    console.call("commit_offsets", group_id="readers", member_id="m1", generation=joined["generation"],
                 offsets=[{"topic": "clicks", "partition": 0, "offset": 5}])
    console.wait_text("group-total-lag", lambda t: t == "0", "to show no lag after the first commit")
    console.shot("caught-up")

    # Produce without consuming: the lag rises.
    console.produce("clicks", 0, [f"click-{i}" for i in range(5, 25)])
    console.wait_text("group-total-lag", lambda t: t == "20", "to rise to 20")
    row = console.text_of("lag-clicks-0")
    assert row.split()[:5] == ["clicks", "0", "5", "25", "20"], row
    console.shot("lag-risen")

    # Consume and commit: it falls.
    fetched = console.call("fetch", topic="clicks", partition=0, offset=5, max_records=100)
    assert len(fetched["records"]) == 20
    console.call("commit_offsets", group_id="readers", member_id="m1", generation=joined["generation"],
                 offsets=[{"topic": "clicks", "partition": 0, "offset": 25}])
    console.wait_text("group-total-lag", lambda t: t == "0", "to fall back to 0")
    assert console.text_of("lag-clicks-0").split()[:5] == ["clicks", "0", "25", "25", "0"]
    # The plot kept the rise: uPlot draws into a canvas inside the chart.
    assert console.driver.find_elements(By.CSS_SELECTOR, ".chart canvas")
    console.shot("lag-fallen")
    console.open("groups")
    assert "readers" in console.text_of("group-row-readers")


def test_a_partition_damaged_while_the_broker_was_stopped_is_marked(console):
    console.call("create_topic", topic="fragile", partitions=1, replication_factor=1,
                 config={"segment.bytes": 1024})
    console.call("create_topic", topic="sturdy", partitions=1, replication_factor=1)
    for i in range(8):
        console.produce("fragile", 0, [f"record-{i}-{'x' * 120}" for _ in range(3)])
    console.produce("sturdy", 0, ["fine"])
    console.open("topics/fragile/0")
    console.wait(lambda d: len(console.find_all("segment-")) >= 2, "the partition to have rolled segments")
    console.shot("segments")

    # Flip one byte inside the first (closed) segment while the broker is
    # stopped, then start it again on the same data directory.
    assert console.server.stop() == 0
    log = console.server.data_dir / "broker-1" / "fragile-0" / ("0" * 20 + ".log")
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    log.write_bytes(bytes(data))
    console.server.restart()

    # Reading the partition finds the damage: the browser shows the error...
    console.open("messages?topic=fragile&partition=0&offset=0")
    console.wait(lambda d: "STORAGE_ERROR" in console.body_text(), "the read to fail with STORAGE_ERROR")
    console.shot("read-fails")
    # ...and from then on the partition is marked everywhere.
    console.open("overview")
    console.wait_text("tile-damaged", lambda t: t.split()[-1] == "1", "to count one damaged partition")
    assert "1 damaged partition" in console.text_of("health")
    assert "fragile-0 is damaged" in console.text_of("alert-damaged")
    console.shot("overview")
    console.open("topics/fragile")
    assert "damaged" in console.text_of("partition-row-0")
    console.open("topics/fragile/0")
    assert "damaged" in console.text_of("partition-damaged")
    console.shot("partition")
    # The other topic keeps serving.
    console.open("messages?topic=sturdy&partition=0&offset=0")
    assert "fine" in console.text_of("record-0")


def test_reset_offsets_shows_a_dry_run_then_applies_it(console):
    console.call("create_topic", topic="ledger", partitions=1, replication_factor=1)
    console.produce("ledger", 0, [f"entry-{i}" for i in range(10)])
    console.call("alter_group_offsets", group_id="auditors",
                 offsets=[{"topic": "ledger", "partition": 0, "offset": 7}])
    console.open("groups/auditors")
    console.wait_text("group-total-lag", lambda t: t == "3", "to show lag 3")

    console.select("reset-to", "earliest")
    console.click("reset-preview")
    assert "Dry run: nothing changed yet." in console.text_of("reset-status")
    plan = console.text_of("plan-ledger-0")
    assert plan.split() == ["ledger", "0", "7", "0", "−7"], plan
    console.shot("dry-run")
    assert committed_offsets(console, "auditors") == {("ledger", 0): 7}
    assert console.text_of("group-total-lag") == "3"

    console.click("reset-apply")
    assert "Applied" in console.wait_text("reset-status", lambda t: "Applied" in t, "to say it applied")
    console.wait_text("group-total-lag", lambda t: t == "10", "to show lag 10 after the reset")
    assert committed_offsets(console, "auditors") == {("ledger", 0): 0}
    console.shot("applied")


def test_transactions_and_their_markers_show(console):
    console.call("create_topic", topic="payments", partitions=1, replication_factor=1)
    tx = console.call("begin_txn", transactional_id="checkout")
    console.call("txn_produce", transactional_id="checkout", producer_epoch=tx["producer_epoch"],
                 topic="payments", partition=0, value_b64="eyJhbW91bnQiOiAxMH0=")
    console.open("transactions")
    console.wait_text("txn-open-checkout", lambda t: "Ongoing" in t and "payments-0" in t, "the open transaction")
    console.shot("open")
    console.call("commit_txn", transactional_id="checkout", producer_epoch=tx["producer_epoch"])
    tx = console.call("begin_txn", transactional_id="checkout")
    console.call("txn_produce", transactional_id="checkout", producer_epoch=tx["producer_epoch"],
                 topic="payments", partition=0, value_b64="eyJhbW91bnQiOiA5OTl9")
    console.call("abort_txn", transactional_id="checkout", producer_epoch=tx["producer_epoch"])
    outcomes = console.texts_of("txn-recent-checkout", 2)
    assert "aborted" in outcomes[0] and "committed" in outcomes[1], outcomes
    console.shot("recent")

    console.open("messages?topic=payments&partition=0&offset=0")
    assert "COMMIT marker" in console.text_of("record-1")
    aborted = console.text_of("record-2")
    assert "aborted" in aborted and '{"amount": 999}' in aborted, aborted
    assert "ABORT marker" in console.text_of("record-3")
    console.shot("markers")
