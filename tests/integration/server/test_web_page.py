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
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no Chromium here: install Debian's chromium and chromium-driver (scripts/setup.sh --test does)",
)

#: Set to a path to keep a screenshot of the page with results; WEB_PAGE_ASK_SCREENSHOT, of an
#: answer with a citation clicked (docs/web-search.png and docs/web-ask.png are made this way).
SCREENSHOT = os.environ.get("WEB_PAGE_SCREENSHOT")
ASK_SCREENSHOT = os.environ.get("WEB_PAGE_ASK_SCREENSHOT")

#: Records what is added to the answer as it arrives: text nodes (streamed tokens), then links.
_WATCH_ANSWER = """
window.answerAdded = [];
new MutationObserver((records) => {
  for (const record of records) for (const node of record.addedNodes) {
    window.answerAdded.push(node.nodeType === Node.TEXT_NODE ? "text:" + node.textContent
      : node.nodeName.toLowerCase() + ":" + node.textContent);
  }
}).observe(document.getElementById("answer-text"), {childList: true});
"""

_IN_VIEW = """
const box = arguments[0].getBoundingClientRect();
return box.top >= 0 && box.bottom <= window.innerHeight;
"""


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


def test_ask_streams_an_answer_whose_citations_scroll_to_their_passages(served, browser):
    browser.set_window_size(1200, 700)
    browser.get(served.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: "sources" in d.find_element(By.ID, "status").text)
    assert not browser.find_element(By.ID, "answer").is_displayed()
    browser.execute_script(_WATCH_ANSWER)
    browser.find_element(By.ID, "query").send_keys("What QoS policies and message types do ROS 2 topics use?")
    Select(browser.find_element(By.ID, "strategy")).select_by_value("extractive")
    browser.find_element(By.ID, "ask").click()
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#answer-text a.cite")))

    # Streamed: token text went in first, then the finished answer with its citations as links.
    added = browser.execute_script("return window.answerAdded")
    assert added[0].startswith("text:") and len(added[0]) > len("text:")
    first_link = next(i for i, item in enumerate(added) if item.startswith("a:"))
    assert first_link > 0 and all(item.startswith("text:") for item in added[:first_link - 1])
    text = browser.find_element(By.ID, "answer-text").text
    links = browser.find_elements(By.CSS_SELECTOR, "#answer-text a.cite")
    assert links and all(link.text in text for link in links)
    assert "streaming" not in browser.find_element(By.ID, "answer-text").get_attribute("class")
    assert browser.find_element(By.ID, "answer-meta").text.startswith("extractive")

    # The numbered passages follow, each under its number; the cited ones say so.
    passages = browser.find_elements(By.CSS_SELECTOR, "#results .hit")
    assert len(passages) == 5
    assert [p.find_element(By.CSS_SELECTOR, ".rank").text for p in passages] == [f"[{n}]" for n in range(1, 6)]
    cited = {int(link.get_attribute("data-number")) for link in links}
    badges = {int(p.get_attribute("id").removeprefix("hit-")) for p in passages
              if p.find_elements(By.CSS_SELECTOR, ".cited-badge")}
    assert badges == cited

    # Clicking a citation scrolls its passage into view and highlights it.
    link = max(links, key=lambda a: int(a.get_attribute("data-number")))
    number = int(link.get_attribute("data-number"))
    target = browser.find_element(By.ID, f"hit-{number}")
    browser.execute_script("window.scrollTo(0, 0)")
    assert number >= 3 and not browser.execute_script(_IN_VIEW, target)  # below the fold of a 700 px window
    link.click()
    wait.until(lambda d: d.execute_script(_IN_VIEW, target))
    assert "focused" in target.get_attribute("class")
    assert [p.get_attribute("id") for p in browser.find_elements(By.CSS_SELECTOR, "#results .hit.focused")] == [
        f"hit-{number}"]
    if ASK_SCREENSHOT:
        browser.set_window_size(1200, 1250)
        browser.execute_script("window.scrollTo(0, 0)")
        Path(ASK_SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(ASK_SCREENSHOT)


def test_an_answer_is_text_not_markup_and_errors_show(served, browser):
    trap = served.docs / "trap-answer.txt"
    trap.write_text("Quokka facts: <img src=x onerror=\"document.title='pwned'\"> quokkas <b>smile</b> a lot.\n")
    try:
        with served.client() as client:
            job = client.post("/v1/ingest", json={"paths": [str(trap)]}).json()
            assert served.wait_job(client, job["id"])["state"] == "done"
        browser.get(served.url + "/")
        wait = WebDriverWait(browser, 60)
        browser.find_element(By.ID, "query").send_keys("quokka facts smile")
        Select(browser.find_element(By.ID, "strategy")).select_by_value("extractive")
        browser.find_element(By.ID, "ask").click()
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#answer-text a.cite")))
        answer = browser.find_element(By.ID, "answer-text")
        assert "<b>smile</b>" in answer.text and answer.find_elements(By.TAG_NAME, "img") == []
        assert browser.find_elements(By.CSS_SELECTOR, "#results img") == [] and browser.title == "ragloom"
        box = browser.find_element(By.ID, "query")
        box.clear()
        box.send_keys("x" * (served.state.config.server.max_query_chars + 1))
        browser.find_element(By.ID, "ask").click()
        wait.until(lambda d: "query_too_long" in d.find_element(By.ID, "message").text)
    finally:
        trap.unlink()
        with served.client() as client:
            for source in client.get("/v1/sources").json():
                if source["path"] == str(trap):
                    client.delete(f"/v1/sources/{source['id']}")


_RECORD_BODIES = """
window.sentBodies = [];
const original = window.fetch;
window.fetch = (url, options = {}) => {
  if (String(url).includes("/v1/ask")) window.sentBodies.push(JSON.parse(options.body));
  return original(url, options);
};
"""


def test_ask_keeps_the_conversation_until_a_new_one(served, browser):
    browser.get(served.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: "sources" in d.find_element(By.ID, "status").text)
    browser.execute_script(_RECORD_BODIES)
    assert not browser.find_element(By.ID, "conversation").is_displayed()
    Select(browser.find_element(By.ID, "strategy")).select_by_value("extractive")
    box = browser.find_element(By.ID, "query")
    box.send_keys("How do ROS 2 nodes communicate?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#turns .turn")) == 1)
    first_answer = browser.find_element(By.CSS_SELECTOR, "#turns .turn .turn-answer").text
    box.send_keys("Which QoS policies do they use?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#turns .turn")) == 2)
    bodies = browser.execute_script("return window.sentBodies")
    assert "history" not in bodies[0]
    assert bodies[1]["history"] == [{"role": "user", "content": "How do ROS 2 nodes communicate?"},
                                    {"role": "assistant", "content": first_answer}]
    # An earlier turn's citation still works: it shows that turn's passages and focuses the one cited.
    link = browser.find_element(By.CSS_SELECTOR, "#turns .turn:first-child a.cite")
    number = int(link.get_attribute("data-number"))
    link.click()
    wait.until(lambda d: "focused" in d.find_element(By.ID, f"hit-{number}").get_attribute("class"))
    browser.find_element(By.ID, "new-conversation").click()
    assert not browser.find_element(By.ID, "conversation").is_displayed()
    box.send_keys("What are topics?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#turns .turn")) == 1)
    assert "history" not in browser.execute_script("return window.sentBodies")[-1]
