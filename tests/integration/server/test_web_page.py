"""The search page at /, in a real headless Chromium (Debian's chromium + chromium-driver, via Selenium)."""

from __future__ import annotations

import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

selenium = pytest.importorskip("selenium", reason="selenium is not installed: scripts/setup.sh --test installs it")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from server_helpers import API_KEY, running_server  # noqa: E402

from ragloom import Index  # noqa: E402
from ragloom.config import Config  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no Chromium here: install Debian's chromium and chromium-driver (scripts/setup.sh --test does)",
)

#: Set to a path to keep a screenshot of the page with results; WEB_PAGE_ASK_SCREENSHOT, of an
#: answer with a citation clicked; WEB_PAGE_SOURCE_SCREENSHOT, of that passage's source opened in
#: the viewer (docs/web-search.png, docs/web-ask.png and docs/web-source.png are made this way).
SCREENSHOT = os.environ.get("WEB_PAGE_SCREENSHOT")
ASK_SCREENSHOT = os.environ.get("WEB_PAGE_ASK_SCREENSHOT")
SOURCE_SCREENSHOT = os.environ.get("WEB_PAGE_SOURCE_SCREENSHOT")

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
    # The path relative to the ingested folder; the full one on hover.
    assert source.text == "ros2_communication_guide.md"
    assert source.get_attribute("title").startswith(str(served.docs / source.text))
    assert "How nodes communicate" in first.find_element(By.CSS_SELECTOR, ".where").text
    marks = {m.text.lower() for m in first.find_elements(By.CSS_SELECTOR, ".text mark")}
    assert {"nodes", "communicate"} <= marks
    assert "5 passages" in browser.find_element(By.ID, "message").text
    if SCREENSHOT:
        Path(SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(SCREENSHOT)

    # A filter error comes back as the API's code and message, shown on the page.
    box.clear()
    type_long(browser, box, "x" * (served.state.config.server.max_query_chars + 1))
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
        # Rendered and sanitised: <b> is bold, the <img> and its handler are gone.
        text = browser.find_element(By.CSS_SELECTOR, "#results .hit .text")
        assert text.find_element(By.TAG_NAME, "b").text == "bold pangolin" and "<b>" not in text.text
        assert text.find_elements(By.TAG_NAME, "img") == [] and text.find_elements(By.CSS_SELECTOR, "[onerror]") == []
        assert browser.title == "ragloom"
    finally:
        trap.unlink()
        with served.client() as client:
            for source in client.get("/v1/sources").json():
                if source["path"] == str(trap):
                    client.delete(f"/v1/sources/{source['id']}")


#: WEB_PAGE_CODE_SCREENSHOT / WEB_PAGE_MARKDOWN_SCREENSHOT: keep screenshots of a code hit and of a
#: Markdown hit with fenced code (docs/web-code-hit.png and docs/web-markdown-hit.png are made this way).
CODE_SCREENSHOT = os.environ.get("WEB_PAGE_CODE_SCREENSHOT")
MARKDOWN_SCREENSHOT = os.environ.get("WEB_PAGE_MARKDOWN_SCREENSHOT")

PROGRESS_BAR = '''"""A progress bar."""


class ProgressBar(JupyterMixin):
    """Renders a (progress) bar. Used by rich.progress."""

    def __init__(self, total: float = 100.0, completed: float = 0, width: int | None = None) -> None:
        self.total = total
        self.completed = completed
        self.width = width

    def __repr__(self) -> str:
        return f"<Bar {self.completed!r} of {self.total!r}>"

    def update(self, completed: float, total: float | None = None, **kwargs) -> None:
        """Update progress with new values."""
        self.completed = completed
        self.total = total if total is not None else self.total
''' + "".join(f"\n\n    def step_{n}(self) -> float:\n        return self.completed * {n} / self.total\n"
                for n in range(12))

FENCED = """# Progress bars

Make one and show it; `**kwargs` go to the bar, and `width` is an `int | None`.

```python
bar = ProgressBar(total=100, width=None)
bar.update(50, **kwargs)
print(repr(bar))
```
"""


def test_code_hits_are_verbatim_numbered_and_highlighted(served, browser):
    code, notes = served.docs / "progress_bar.py", served.docs / "progress-notes.md"
    code.write_text(PROGRESS_BAR)
    notes.write_text(FENCED)
    try:
        with served.client() as client:
            job = client.post("/v1/ingest", json={"paths": [str(code), str(notes)]}).json()
            assert served.wait_job(client, job["id"])["state"] == "done"
        browser.get(served.url + "/?" + urlencode({"q": "ProgressBar __repr__"}))
        wait = WebDriverWait(browser, 60)
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#results .hit .code-box")))
        first = browser.find_element(By.CSS_SELECTOR, "#results .hit")
        line = 1 + PROGRESS_BAR.splitlines().index("    def __repr__(self) -> str:")
        assert first.find_element(By.CSS_SELECTOR, ".source").text == f"progress_bar.py:{line}"
        assert "ProgressBar.__repr__" in first.find_element(By.CSS_SELECTOR, ".where").text
        # The code as written: no Markdown (no <strong> for __repr__), indentation kept, in <pre><code>.
        shown = first.find_element(By.CSS_SELECTOR, ".code-box pre.code code.hljs")
        assert shown.find_elements(By.TAG_NAME, "strong") == []
        assert '    def __repr__(self) -> str:\n        return f"<Bar {self.completed!r} of {self.total!r}>"' in shown.text
        assert shown.find_elements(By.CSS_SELECTOR, ".hljs-keyword"), "highlight.js coloured nothing"
        numbers = first.find_element(By.CSS_SELECTOR, ".code-box .gutter").text.split()
        assert str(line) in numbers and str(line + 1) in numbers
        if CODE_SCREENSHOT:
            Path(CODE_SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(CODE_SCREENSHOT)

        # A Markdown hit stays Markdown, and its fenced code is code: `**kwargs` and `int | None` as written.
        browser.get(served.url + "/?" + urlencode({"q": "progress bars kwargs width int None"}))
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#results .hit .md pre code")))
        hit = next(h for h in browser.find_elements(By.CSS_SELECTOR, "#results .hit")
                   if h.find_element(By.CSS_SELECTOR, ".source").text == "progress-notes.md")
        block = hit.find_element(By.CSS_SELECTOR, ".md pre code")
        assert "bar.update(50, **kwargs)" in block.text and "hljs" in block.get_attribute("class")
        assert block.find_elements(By.CSS_SELECTOR, "span.hljs-number")  # coloured after Markdown was rendered
        assert [c.text for c in hit.find_elements(By.CSS_SELECTOR, ".md p code")] == ["**kwargs", "width", "int | None"]
        if MARKDOWN_SCREENSHOT:
            browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", hit)
            browser.save_screenshot(MARKDOWN_SCREENSHOT)
        # Code hits rendered after Markdown keep highlight.js's colours (the sanitiser's class rule).
        browser.find_element(By.ID, "query").clear()
        browser.find_element(By.ID, "query").send_keys("ProgressBar.update")
        browser.find_element(By.ID, "go").click()
        wait.until(lambda d: "def update" in d.find_element(By.CSS_SELECTOR, "#results .hit").text)
        assert browser.find_elements(By.CSS_SELECTOR, "#results .hit .code-box .hljs-keyword")
    finally:
        with served.client() as client:
            for source in client.get("/v1/sources").json():
                if source["path"] in (str(code), str(notes)):
                    client.delete(f"/v1/sources/{source['id']}")
        code.unlink()
        notes.unlink()


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

    # Streamed: token text went in first, then the finished answer, rendered, with its citations as links.
    added = browser.execute_script("return window.answerAdded")
    assert added[0].startswith("text:") and len(added[0]) > len("text:")
    rendered = next(i for i, item in enumerate(added) if not item.startswith("text:"))
    assert rendered > 0 and all(item.startswith("text:") for item in added[:rendered])
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
    if SOURCE_SCREENSHOT:
        browser.set_window_size(1200, 900)
        target.find_element(By.CSS_SELECTOR, ".source").click()
        wait.until(expected_conditions.presence_of_element_located((By.ID, "viewer-target")))
        Path(SOURCE_SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(SOURCE_SCREENSHOT)


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
        assert "<b>" not in answer.text and answer.find_elements(By.TAG_NAME, "img") == []
        assert answer.find_elements(By.CSS_SELECTOR, "[onerror]") == []
        assert browser.find_elements(By.CSS_SELECTOR, "#results img") == [] and browser.title == "ragloom"
        box = browser.find_element(By.ID, "query")
        box.clear()
        type_long(browser, box, "x" * (served.state.config.server.max_query_chars + 1))
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
    wait.until(lambda d: d.find_element(By.ID, "answer-meta").text.startswith("extractive"))
    first_answer = browser.find_element(By.ID, "answer-text").text
    # The latest answer is shown once, in the answer box: the conversation holds only earlier turns.
    assert not browser.find_element(By.ID, "conversation").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#turns .turn") == []
    box.send_keys("Which QoS policies do they use?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#turns .turn")) == 1)
    wait.until(lambda d: d.find_element(By.ID, "answer-meta").text.startswith("extractive"))
    earlier = browser.find_element(By.CSS_SELECTOR, "#turns .turn .turn-answer").text
    assert earlier == first_answer and browser.find_element(By.ID, "answer-text").text != first_answer
    assert browser.find_element(By.CSS_SELECTOR, "#turns .turn .turn-question").text == "How do ROS 2 nodes communicate?"
    bodies = browser.execute_script("return window.sentBodies")
    assert "history" not in bodies[0]
    history = bodies[1]["history"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[0]["content"] == "How do ROS 2 nodes communicate?"
    # The answer as written (Markdown); the page shows it rendered.
    assert re.sub(r"\W+", "", history[1]["content"]) == re.sub(r"\W+", "", first_answer)
    # An earlier turn's citation still works: it shows that turn's passages and focuses the one cited.
    link = browser.find_element(By.CSS_SELECTOR, "#turns .turn:first-child a.cite")
    number = int(link.get_attribute("data-number"))
    link.click()
    wait.until(lambda d: "focused" in d.find_element(By.ID, f"hit-{number}").get_attribute("class"))
    browser.find_element(By.ID, "new-conversation").click()
    assert not browser.find_element(By.ID, "conversation").is_displayed()
    assert not browser.find_element(By.ID, "answer").is_displayed()
    box.send_keys("What are topics?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: d.find_element(By.ID, "answer-meta").text.startswith("extractive"))
    assert browser.find_elements(By.CSS_SELECTOR, "#turns .turn") == []
    assert "history" not in browser.execute_script("return window.sentBodies")[-1]


# -- issue 25: markup, sources, the page's own states ------------------------------------------------

@contextmanager
def ingested(served, files: dict[str, str]):
    """The files (relative path -> text) written under the served docs folder and ingested; removed after."""
    paths = []
    for name, text in files.items():
        path = served.docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    try:
        with served.client() as client:
            job = client.post("/v1/ingest", json={"paths": [str(p) for p in paths]}).json()
            assert served.wait_job(client, job["id"])["state"] == "done"
        yield paths
    finally:
        with served.client() as client:
            for source in client.get("/v1/sources").json():
                if source["path"] in {str(p) for p in paths}:
                    client.delete(f"/v1/sources/{source['id']}")
        for path in paths:
            path.unlink()


def type_long(browser, box, text: str) -> None:
    """Put a long text in a field at once (typing 16,000 keys one by one takes minutes), then one key."""
    browser.execute_script("arguments[0].value = arguments[1];", box, text[:-1])
    box.send_keys(text[-1])


def search_for(browser, served, query: str) -> list:
    browser.get(served.url + "/")
    WebDriverWait(browser, 60).until(lambda d: "sources" in d.find_element(By.ID, "status").text)
    browser.find_element(By.ID, "query").send_keys(query)
    browser.find_element(By.ID, "go").click()
    WebDriverWait(browser, 60).until(lambda d: "passages" in d.find_element(By.ID, "message").text)
    return browser.find_elements(By.CSS_SELECTOR, "#results .hit")


MARKDOWN = """# Axolotl Care { #axolotl-care }

## Water temperature {#water-temperature .note}

Keep the **axolotl** tank between `16` and `18` degrees; see [the care sheet](https://example.com/axolotl).
<script>document.title = "pwned"</script>
<img src="https://tracker.example.com/pixel.png" onerror="document.title='pwned'">
![a remote axolotl photo](https://example.com/axolotl.png)
<a href="javascript:document.title='pwned'">axolotl trick</a>
"""


def test_passages_render_markdown_safely_and_titles_drop_attribute_lists(served, browser):
    with ingested(served, {"axolotl.md": MARKDOWN}):
        hits = search_for(browser, served, "axolotl tank water temperature")
        hit = next(h for h in hits if h.find_element(By.CSS_SELECTOR, ".source").text == "axolotl.md")
        where = hit.find_element(By.CSS_SELECTOR, ".where").text
        assert "Axolotl Care › Water temperature" in where and "{" not in where
        text = hit.find_element(By.CSS_SELECTOR, ".text")
        assert text.find_element(By.TAG_NAME, "strong").text.lower() == "axolotl"
        assert [c.text for c in text.find_elements(By.TAG_NAME, "code")] == ["16", "18"]
        assert "**" not in text.text and "`" not in text.text and "{#" not in text.text
        link = text.find_element(By.LINK_TEXT, "the care sheet")
        assert link.get_attribute("href") == "https://example.com/axolotl"
        assert "noopener" in link.get_attribute("rel")
        assert text.find_element(By.LINK_TEXT, "axolotl trick").get_attribute("href") is None
        assert text.find_elements(By.CSS_SELECTOR, "img, script, [onerror]") == []
        assert "a remote axolotl photo" in text.text  # a remote image shows as its description
        assert browser.title == "ragloom"


def test_sources_show_their_path_relative_to_the_ingested_folder_and_open_at_the_passage(served, browser):
    filler = "\n\n".join(f"Paragraph {i} about unrelated gardening chores and seasonal weeding." for i in range(60))
    files = {"guide/index.md": f"# Guide\n\n{filler}\n\n## Wombats\n\nWombat burrows have a single entrance tunnel.\n",
             "reference/index.md": "# Reference\n\nWombat droppings are cube shaped.\n"}
    with ingested(served, files):
        hits = search_for(browser, served, "wombat burrows entrance tunnel")
        shown = [h.find_element(By.CSS_SELECTOR, ".source").text for h in hits]
        assert "guide/index.md" in shown and "reference/index.md" in shown  # two index.md told apart
        hit = hits[shown.index("guide/index.md")]
        passage = hit.find_element(By.CSS_SELECTOR, ".text").text
        hit.find_element(By.CSS_SELECTOR, ".source").click()
        wait = WebDriverWait(browser, 60)
        wait.until(expected_conditions.presence_of_element_located((By.ID, "viewer-target")))
        viewer = browser.find_element(By.ID, "viewer")
        assert viewer.get_attribute("open") is not None
        title, line = browser.find_element(By.ID, "viewer-title").text.rsplit(":", 1)  # path:line
        assert title == "guide/index.md" and "Wombat" in files["guide/index.md"].splitlines()[int(line) - 1]
        # The server's own path is for admin keys only (this page sends none): the section instead.
        assert browser.find_element(By.ID, "viewer-path").text == "Guide > Wombats"
        assert str(served.docs) not in browser.find_element(By.ID, "viewer").text
        target = browser.find_element(By.ID, "viewer-target")
        assert "Wombat burrows have a single entrance tunnel." in target.text
        assert "Wombat burrows" in passage
        # Scrolled to: the highlighted passage is inside the viewer's visible box, far below its top.
        inside = browser.execute_script("""
            const box = document.getElementById("viewer-text").getBoundingClientRect();
            const mark = arguments[0].getBoundingClientRect();
            return [mark.top >= box.top && mark.bottom <= box.bottom, document.getElementById("viewer-text").scrollTop];
        """, target)
        assert inside[0] and inside[1] > 0
        browser.find_element(By.ID, "viewer-close").click()
        assert browser.find_element(By.ID, "viewer").get_attribute("open") is None
        # An admin key (the server's own) is shown where the file lies on the server.
        browser.execute_script("const box = document.getElementById('api-key'); box.value = arguments[0];"
                               "box.dispatchEvent(new Event('change'));", API_KEY)
        wait.until(lambda d: d.execute_script("return callerScope") == "admin")
        hit.find_element(By.CSS_SELECTOR, ".source").click()
        wait.until(lambda d: d.find_element(By.ID, "viewer-path").text == str(served.docs / "guide" / "index.md"))
        browser.find_element(By.ID, "viewer-close").click()
        browser.execute_script("sessionStorage.removeItem('ragloom-key')")


_LOG_ORDER = """
window.order = [];
for (const id of ["results", "answer-text"]) {
  new MutationObserver((records) => {
    if (records.some((r) => r.addedNodes.length)) window.order.push(id);
  }).observe(document.getElementById(id), {childList: true, subtree: true});
}
"""


def test_ask_shows_sources_before_the_answer_and_enter_asks_in_ask_mode(served, browser):
    browser.get(served.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: "sources" in d.find_element(By.ID, "status").text)
    browser.execute_script(_RECORD_BODIES + _LOG_ORDER)
    Select(browser.find_element(By.ID, "strategy")).select_by_value("extractive")
    box = browser.find_element(By.ID, "query")
    box.send_keys("How do ROS 2 nodes communicate?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: d.find_element(By.ID, "answer-meta").text.startswith("extractive"))
    order = browser.execute_script("return window.order")
    assert order[0] == "results" and "answer-text" in order  # the passages came before the answer's first word
    # Enter now asks (the page is in ask mode), it does not search.
    box.send_keys("Which QoS policies do they use?" + Keys.ENTER)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#turns .turn")) == 1)
    assert len(browser.execute_script("return window.sentBodies")) == 2
    assert browser.find_element(By.ID, "ask").get_attribute("aria-pressed") == "true"


def test_the_address_holds_the_query_so_reload_and_shared_links_restore_it(served, browser):
    hits = search_for(browser, served, "tf2 coordinate frames")
    first = hits[0].get_attribute("data-chunk-id")
    query = parse_qs(urlparse(browser.current_url).query)
    assert query["q"] == ["tf2 coordinate frames"] and "do" not in query
    browser.refresh()
    wait = WebDriverWait(browser, 60)
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#results .hit")))
    assert browser.find_element(By.ID, "query").get_attribute("value") == "tf2 coordinate frames"
    assert browser.find_elements(By.CSS_SELECTOR, "#results .hit")[0].get_attribute("data-chunk-id") == first
    # A shared link to a question opens with its answer.
    browser.get(served.url + "/?" + urlencode({"q": "How do ROS 2 nodes communicate?", "do": "ask",
                                                 "strategy": "extractive"}))
    wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#answer-text a.cite")))
    assert browser.find_element(By.ID, "answer-meta").text.startswith("extractive")


def test_hits_show_a_relevance_that_means_the_same_across_queries_and_mark_weak_ones(served, browser):
    related = search_for(browser, served, "How do ROS 2 nodes communicate?")
    assert related[0].find_element(By.CSS_SELECTOR, ".score").text.startswith("cos 0.")
    assert not related[0].find_elements(By.CSS_SELECTOR, ".weak")
    unrelated = search_for(browser, served, "banana bread recipe with walnuts")
    assert all(hit.find_elements(By.CSS_SELECTOR, ".weak") for hit in unrelated)


LONG_URL = "https://example.com/" + "/".join(f"segment{i:03d}" for i in range(40)) + "?numbat=" + "x" * 120


def test_at_390_pixels_a_long_url_does_not_widen_the_page(served, browser):
    browser.set_window_size(390, 900)
    with ingested(served, {"numbat.txt": f"Numbat survey results are published at {LONG_URL} every spring.\n"}):
        hits = search_for(browser, served, "numbat survey results published")
        assert browser.execute_script("return window.innerWidth") <= 400
        assert any("numbat.txt" == h.find_element(By.CSS_SELECTOR, ".source").text for h in hits)
        widths = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], widths
        box = browser.find_element(By.ID, "query")
        box.clear()
        box.send_keys("Where are numbat survey results published?")
        Select(browser.find_element(By.ID, "strategy")).select_by_value("extractive")
        browser.find_element(By.ID, "ask").click()
        WebDriverWait(browser, 60).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#answer-text a.cite")))
        assert "numbat" in browser.find_element(By.ID, "answer-text").text.lower()
        widths = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], widths


def test_without_an_llm_only_extractive_is_offered_and_a_stopped_server_is_explained(tmp_path, browser):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "quoll.md").write_text("# Quolls\n\nQuolls are carnivorous marsupials native to Australia.\n")
    config = Config.from_dict({"index": str(tmp_path / "index"), "server": {"allowed_roots": [str(docs)]},
                               "llm": {"provider": "llamacpp", "model": str(tmp_path / "missing.gguf")}})
    with Index.open(config.index, config) as index:
        index.ingest([docs])
    with running_server(config, tmp_path, docs) as served:
        browser.get(served.url + "/")
        wait = WebDriverWait(browser, 60)
        wait.until(lambda d: d.find_element(By.ID, "strategy-note").is_displayed())
        options = [o.get_attribute("value") for o in Select(browser.find_element(By.ID, "strategy")).options]
        assert options == ["extractive"]
        assert "no LLM" in browser.find_element(By.ID, "strategy-note").text
        browser.find_element(By.ID, "query").send_keys("quolls")
        browser.find_element(By.ID, "go").click()
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#results .hit")))
    # The server is gone: Search and Ask say so, with a way to retry; no "undefined", no empty answer box.
    assert not browser.find_element(By.ID, "offline").is_displayed()
    browser.find_element(By.ID, "go").click()
    wait.until(lambda d: d.find_element(By.ID, "offline").is_displayed())
    assert "not answering" in browser.find_element(By.ID, "offline").text
    assert "undefined" not in browser.find_element(By.TAG_NAME, "body").text
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: d.find_element(By.ID, "offline").is_displayed() and not d.find_element(By.ID, "ask")
               .get_attribute("disabled"))
    assert not browser.find_element(By.ID, "answer").is_displayed()
    assert "undefined" not in browser.find_element(By.TAG_NAME, "body").text
    assert browser.find_element(By.ID, "retry").is_displayed()
