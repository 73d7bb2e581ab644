"""The search page at /, in a real headless Chromium (Debian's chromium + chromium-driver, via Selenium)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

selenium = pytest.importorskip("selenium", reason="selenium is not installed: scripts/setup.sh --test installs it")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no Chromium here: install Debian's chromium and chromium-driver (scripts/setup.sh --test does)",
)

#: Set to a path to keep a screenshot of the page with results (docs/web-search.png is made this way).
SCREENSHOT = os.environ.get("WEB_PAGE_SCREENSHOT")


@pytest.fixture
def browser(tmp_path):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1200,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_search_page_shows_status_hits_sources_and_highlights(served, browser, tmp_path):
    browser.get(served.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: "sources" in d.find_element(By.ID, "status").text)
    sources = len(os.listdir(served.docs))
    assert f"{sources} sources" in browser.find_element(By.ID, "status").text
    assert "bge-small" in browser.find_element(By.ID, "status").text

    box = browser.find_element(By.ID, "query")
    box.send_keys("how do ROS 2 nodes communicate?")
    browser.find_element(By.ID, "go").click()
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#results .hit")))
    hits = browser.find_elements(By.CSS_SELECTOR, "#results .hit")
    assert len(hits) == 5
    first = hits[0]
    assert first.find_element(By.CSS_SELECTOR, ".rank").text == "#1"
    source = first.find_element(By.CSS_SELECTOR, ".source")
    assert source.text == "ros2_communication_guide.md" and source.get_attribute("title").endswith(source.text)
    assert "How nodes communicate" in first.find_element(By.CSS_SELECTOR, ".where").text
    marks = {m.text.lower() for m in first.find_elements(By.CSS_SELECTOR, ".text mark")}
    assert {"nodes", "communicate"} <= marks
    assert "5 passages" in browser.find_element(By.ID, "message").text
    if SCREENSHOT:
        Path(SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(SCREENSHOT)

    # A filter error comes back as the API's code and message, shown on the page.
    box.clear()
    box.send_keys("x" * (served.state.config.server.max_query_chars + 1))
    browser.find_element(By.ID, "go").click()
    wait.until(lambda d: "query_too_long" in d.find_element(By.ID, "message").text)
    assert browser.find_elements(By.CSS_SELECTOR, "#results .hit") == []


def test_passages_are_text_not_markup(served, browser):
    # A document holding HTML-looking text must not become markup on the page.
    trap = served.docs / "trap.txt"
    trap.write_text("Pangolin notes: <img src=x onerror=\"document.title='pwned'\"> <b>bold pangolin</b>\n")
    try:
        with served.client() as client:
            job = client.post("/v1/ingest", json={"paths": [str(trap)]}).json()
            assert served.wait_job(client, job["id"])["state"] == "done"
        browser.get(served.url + "/")
        browser.find_element(By.ID, "query").send_keys("pangolin")
        browser.find_element(By.ID, "go").click()
        WebDriverWait(browser, 60).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#results .hit")))
        text = browser.find_element(By.CSS_SELECTOR, "#results .hit .text")
        assert "<b>bold" in text.text and text.find_elements(By.TAG_NAME, "img") == []
        assert browser.title == "ragloom"
    finally:
        trap.unlink()
        with served.client() as client:
            for source in client.get("/v1/sources").json():
                if source["path"] == str(trap):
                    client.delete(f"/v1/sources/{source['id']}")
