"""Fixtures of the console's browser scenarios.

`browser`: one headless Chromium for the session (Debian's chromium and
chromium-driver, driven by selenium), with a fresh profile directory and the
flags this machine's closed network needs. `broker`: the real mk-server
binary with its console on free loopback ports, one per scenario. `console`:
the page as a person uses it — open a view, wait until something shows,
save a screenshot — plus a small JSON-TCP client for what Kafka clients
would do meanwhile (produce, join a group, commit).
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from mkinterop.server import MkServer, start_server

# Without the background-networking flags Chromium keeps reaching for
# Google's services, and this machine's closed network refuses it.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTH, HEIGHT = 1440, 1000
WAIT_S = 20.0


def screenshot_dir() -> Path:
    d = Path(os.environ.get("MK_CONSOLE_SCREENSHOTS", "../../target/console-screenshots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("MK_CHROMIUM", "/usr/bin/chromium")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={WIDTH},{HEIGHT}")
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ.get("MK_CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    yield driver
    driver.quit()


@pytest.fixture
def broker(tmp_path):
    server = start_server(tmp_path, console=True, extra_args=["--group-session-timeout-ms", "60000"])
    yield server
    server.stop()


class Console:
    """The console in the browser, and the broker behind it."""

    def __init__(self, driver, server: MkServer, name: str):
        self.driver = driver
        self.server = server
        self.name = name
        self.shots = 0

    # ----- the page ---------------------------------------------------------

    def open(self, view: str) -> None:
        """Navigates to `#/view` (a fresh load of the page)."""
        self.driver.get(f"{self.server.console_url}/#/{view}")
        self.wait(lambda d: d.find_element(By.ID, "view").text and "Loading" not in d.find_element(By.ID, "view").text,
                  f"the {view} view to render")

    def wait(self, condition, what: str):
        try:
            return WebDriverWait(self.driver, WAIT_S, poll_frequency=0.2).until(condition)
        except TimeoutException:
            self.shot("timeout")
            raise AssertionError(
                f"waited {WAIT_S}s for {what}; the page shows:\n{self.driver.find_element(By.TAG_NAME, 'body').text[:3000]}"
            ) from None

    def find(self, testid: str):
        return self.driver.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def find_all(self, testid_prefix: str):
        return self.driver.find_elements(By.CSS_SELECTOR, f'[data-testid^="{testid_prefix}"]')

    def text_of(self, testid: str) -> str:
        """The visible text of an element, waiting for it to exist."""
        return self.wait(lambda d: self._text(testid), f"[{testid}] to show")

    def _text(self, testid: str):
        # The views re-render every few seconds: an element found a moment
        # ago may be gone; the wait simply looks again.
        try:
            found = self.driver.find_elements(By.CSS_SELECTOR, f'[data-testid="{testid}"]')
            return found[0].text if found and found[0].is_displayed() else None
        except StaleElementReferenceException:
            return None

    def texts_of(self, testid_prefix: str, count: int) -> list[str]:
        """The texts of the `count` elements whose testid starts with the
        prefix, once there are that many."""
        def check(_):
            try:
                found = self.find_all(testid_prefix)
                return [e.text for e in found] if len(found) == count else None
            except StaleElementReferenceException:
                return None
        return self.wait(check, f"{count} [{testid_prefix}...] elements")

    def wait_text(self, testid: str, predicate, what: str) -> str:
        """Waits until the visible text of [testid] satisfies `predicate`."""
        def check(_):
            t = self._text(testid)
            return t if t is not None and predicate(t) else None
        return self.wait(check, f"[{testid}] {what}")

    def click(self, testid: str) -> None:
        def clicked(_):
            try:
                found = self.driver.find_elements(By.CSS_SELECTOR, f'[data-testid="{testid}"]')
                if found and found[0].is_displayed() and found[0].is_enabled():
                    found[0].click()
                    return True
            except StaleElementReferenceException:
                pass
            return False
        self.wait(clicked, f"[{testid}] to be clickable")

    def type(self, testid: str, text: str) -> None:
        field = self.find(testid)
        field.clear()
        field.send_keys(text)

    def select(self, testid: str, value: str) -> None:
        from selenium.webdriver.support.ui import Select

        Select(self.find(testid)).select_by_value(value)

    def body_text(self) -> str:
        return self.driver.find_element(By.TAG_NAME, "body").text

    def shot(self, step: str) -> Path:
        """Saves a screenshot of the whole page for review:
        <scenario>-<n>-<step>.png."""
        self.shots += 1
        path = screenshot_dir() / f"{self.name}-{self.shots:02d}-{step}.png"
        # A window as tall as the page, so the sticky sidebar spans it too.
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(WIDTH, max(HEIGHT, height))
        try:
            self.driver.save_screenshot(str(path))
        finally:
            self.driver.set_window_size(WIDTH, HEIGHT)
        return path

    def script_errors(self) -> list[str]:
        """Errors the page's scripts logged (a failed request the page
        shows as an error box is not one)."""
        return [
            e["message"]
            for e in self.driver.get_log("browser")
            if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]
        ]

    # ----- a client of the broker, over JSON-TCP -------------------------------

    def call(self, operation: str, **fields) -> dict:
        host, port = self.server.json_addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=WAIT_S) as s:
            s.sendall((json.dumps({"operation": operation, **fields}) + "\n").encode())
            answer = s.makefile("rb").readline()
        reply = json.loads(answer)
        assert reply.get("ok"), f"{operation} {fields}: {reply}"
        return reply

    def produce(self, topic: str, partition: int, values: list[str]) -> None:
        records = [{"value_b64": base64.b64encode(v.encode()).decode()} for v in values]
        self.call("produce", topic=topic, partition=partition, acks="all", records=records)


@pytest.fixture
def console(browser, broker, request):
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    browser.get_log("browser")  # forget what an earlier scenario logged
    c = Console(browser, broker, name)
    yield c
    c.shot("end")
    errors = c.script_errors()
    assert not errors, f"the page's scripts logged errors: {errors}"
