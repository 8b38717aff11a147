"""The report page in a real browser (headless Chromium): every chart drawn with a size, no script
or console error, the numbers on the page equal to the manifest's and the report's, a screenshot.

Debian's ``chromium`` is installed by ``scripts/test.sh``; without it the test is skipped on a
developer machine and fails in CI (``CI`` set), so CI can never pass without having looked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tokenmill.report import ReportOptions, write_report

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
IN_CI = bool(os.environ.get("CI"))
pytestmark = [pytest.mark.serial, pytest.mark.skipif(  # a browser: in the serial part (tests/conftest.py)
    CHROMIUM is None and not IN_CI,
    reason="headless Chromium is not installed (scripts/test.sh installs Debian's chromium)",
)]
WINDOW = (1400, 3000)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with its own profile; console messages go to stderr."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: scripts/test.sh installs Debian's chromium before the tests")
    profile = tmp_path / "chromium-profile"
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
        "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
        f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=5000", *args,
    ]
    env = {**os.environ, "HOME": str(tmp_path)}
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


class Dom(HTMLParser):
    """What the test reads from the DOM Chromium dumps after the page's scripts ran."""

    def __init__(self) -> None:
        super().__init__()
        self.root: dict[str, str] = {}
        self.charts: list[dict[str, str]] = []
        self.numbers: list[dict[str, str]] = []
        self._number: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        classes = found.get("class", "").split()
        if tag == "html":
            self.root = found
        elif tag == "figure" and "chart" in classes:
            self.charts.append(found)
        elif tag == "span" and "num" in classes:
            self._number = {**found, "text": ""}

    def handle_data(self, data: str) -> None:
        if self._number is not None:
            self._number["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._number is not None:
            self.numbers.append(self._number)
            self._number = None


def lookup(tree: Any, path: list[str]) -> Any:
    for part in path:
        tree = tree[int(part)] if isinstance(tree, list) else tree[part]
    return tree


def same(shown: Any, value: Any) -> bool:
    """Equal, floats to the last bit (the page carries full values; only the text is rounded)."""
    return shown == value and type(shown) is type(value)


def check_page(directory: Path, tmp_path: Path, options: ReportOptions, charts: set[str]) -> tuple[Path, Dom, str]:
    page, numbers = write_report(directory, tmp_path / "report.html", options)
    text = page.read_text(encoding="utf-8")
    # self-contained: nothing to fetch (the SVG namespace URIs are names, not requests)
    assert not re.search(r"<(script|img|iframe)[^>]+src=|<link[^>]+href=|url\(\s*['\"]?https?:", text)
    result = chromium(tmp_path, "--dump-dom", page.as_uri())
    dom = Dom()
    dom.feed(result.stdout)
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    assert dom.root.get("data-errors") == "0", "a script error was caught on the page"
    assert {c["data-chart"] for c in dom.charts} == charts
    assert dom.root["data-charts"] == dom.root["data-charts-rendered"] == str(len(charts))
    for figure in dom.charts:
        width, height = map(int, figure["data-rendered"].split("x"))
        assert width > 600 and height > 100, figure
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    from_manifest = [n for n in dom.numbers if "data-manifest" in n]
    from_report = [n for n in dom.numbers if "data-key" in n]
    assert len(from_manifest) >= 10 and len(from_report) >= 5
    for number in from_manifest:
        value = json.loads(number["data-value"])
        assert same(value, lookup(manifest, json.loads(number["data-manifest"]))), number
        if isinstance(value, int):
            assert number["text"] == f"{value:,}", number
    for number in from_report:
        assert same(json.loads(number["data-value"]), lookup(numbers, number["data-key"].split("."))), number
    return page, dom, result.stdout


def test_one_direction_page_with_drop_samples_and_screenshot(pairs_dir: Path, tmp_path: Path) -> None:
    options = ReportOptions(max_tokens=256, world_size=2)
    charts = {"stages", "lengths-0", "lengths-1", "lengths-2", "funnel-0", "padding", "shapes", "ranks"}
    page, _, dom_text = check_page(pairs_dir, tmp_path, options, charts)
    assert "the cat sees the house" in dom_text and "wrong language" not in dom_text
    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", page.as_uri())
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == WINDOW


def test_many_directions_page(multi_dir: Path, tmp_path: Path) -> None:
    charts = {"stages", "lengths-0", "lengths-2", "lengths-4", "cleaning-directions", "sampling", "padding", "shapes"}
    check_page(multi_dir, tmp_path, ReportOptions(max_tokens=256), charts)


def test_language_model_page_with_a_blend(lm_dir: Path, tmp_path: Path) -> None:
    options = ReportOptions(seq_length=64, blend=((1.0, "train"), (2.0, "train")))
    check_page(lm_dir, tmp_path, options, {"stages", "documents-0", "blend"})


def test_sharded_page(sharded_dir: Path, tmp_path: Path) -> None:
    charts = {"stages", "lengths-0", "lengths-1", "funnel-0", "padding", "shapes"}
    check_page(sharded_dir, tmp_path, ReportOptions(max_tokens=256), charts)
