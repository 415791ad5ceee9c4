"""The graph page (hlo-opt --emit=html): its model, that it is self-contained, and how it
behaves in a real headless Chromium (Debian's chromium and chromium-driver, driven by
selenium): it loads without errors, search finds a node, a fusion expands and collapses,
hover and click show a node's details and jump between definitions and uses, and a
10,000-instruction module stays responsive. Screenshots go to tests/artifacts/ (git-ignored)."""
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import hlo
from hlo.passes.pass_manager import run_pipeline
from hlo.passes.pipelines import pipeline_text
from hlo.tools.graph_page import graph_data, graph_page
from hlo_cli.hlo_opt import main as hlo_opt

from generated_modules import layered_module

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus"
ARTIFACTS = ROOT / "tests" / "artifacts"


def optimised_attention():
    module = hlo.parse_module((CORPUS / "causal_attention.hlo").read_text(), "causal_attention.hlo")
    run_pipeline(module, pipeline_text("default"))
    return module


# --------------------------------------------------------------------------- without a browser

def test_model_of_the_page():
    module = optimised_attention()
    data = graph_data(module, "causal_attention.hlo")
    comps = {c["name"]: c for c in data["computations"]}
    insts = data["insts"]
    entry = data["computations"][data["entry"]]
    assert entry["entry"] and entry["name"] == "main.5"
    fusion = next(i for i in insts if i["o"] == "fusion" and i["n"] == "fusion.4")
    fused = data["computations"][fusion["k"][0]]
    assert fused["callers"] == [insts.index(fusion)]
    assert fusion["x"] == "kLoop" and fusion["s"].endswith("{3,2,1,0}") and "calls=" in fusion["t"]
    for i, inst in enumerate(insts):
        assert i in data["computations"][inst["c"]]["i"]
        assert all(0 <= op < len(insts) for op in inst["a"])
    assert comps["region_1.4"]["callers"]          # the reducer knows the reduce that calls it


def test_metadata_and_lines_reach_the_page():
    module = hlo.parse_module(layered_module(200), "gen.hlo")
    data = graph_data(module, "gen.hlo")
    planted = next(i for i in data["insts"] if i["n"] == "planted.exp")
    assert planted["m"].startswith("jit(model)/layer") and planted["f"].startswith("model.py:")
    assert planted["l"] == layered_module(200).splitlines().index(
        next(line for line in layered_module(200).splitlines() if "%planted.exp =" in line)) + 1


def test_the_page_is_self_contained(tmp_path):
    out = tmp_path / "graph.html"
    result = CliRunner().invoke(hlo_opt, [str(CORPUS / "causal_attention.hlo"), "--pipeline", "default",
                                          "--emit=html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    urls = set(re.findall(r"https?://[^\s\"')]+", page))
    assert urls <= {"http://www.w3.org/2000/svg", "https://github.com/dagrejs/dagre,"}, urls
    assert "Copyright (c) 2012-2014 Chris Pettitt" in page          # the vendored library's licence
    data = json.loads(re.search(r'<script type="application/json" id="hlo-data">(.*?)</script>', page, re.S).group(1))
    assert data["module"] == "jit_f"


def test_script_text_cannot_close_the_data_element():
    module = hlo.parse_module('HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), '
                              'metadata={op_name="</script><script>alert(1)</script>"}\n}\n', "m")
    page = graph_page(module)
    assert page.count("</script>") == 3


def test_emit_dot_says_when_graphviz_is_needed(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    result = CliRunner().invoke(hlo_opt, [str(ROOT / "samples" / "axpy.hlo"), "--emit=dot"])
    assert result.exit_code == 0
    assert result.stdout.startswith("digraph")
    assert "needs Graphviz" in result.stderr and "--emit=html" in result.stderr


# --------------------------------------------------------------------------- in Chromium

def _browser_paths():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return chromium, driver


@pytest.fixture(scope="module")
def browser():
    chromium, driver = _browser_paths()
    if not chromium or not driver:
        pytest.skip("chromium and chromedriver are not installed (Debian packages chromium and chromium-driver; "
                    ".ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="hlo-graph-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                "--window-size=1400,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(driver), options=options)
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _open(browser, path: Path, timeout: float = 30.0) -> float:
    start = time.monotonic()
    browser.get(path.as_uri())
    while time.monotonic() - start < timeout:
        if browser.execute_script("return !!(window.hloGraph && window.hloGraph.ready)"):
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"the page was not ready within {timeout} s: {browser.get_log('browser')}")


def _no_errors(browser):
    assert browser.execute_script("return window.hloGraph.errors") == []
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


def _screenshot(browser, tmp_path, name):
    ARTIFACTS.mkdir(exist_ok=True)
    for folder in (tmp_path, ARTIFACTS):
        assert browser.save_screenshot(str(folder / name))


def _wait(browser, script, timeout=10.0):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        value = browser.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {script}")


def test_page_in_chromium(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.action_chains import ActionChains
    page = tmp_path / "attention.html"
    page.write_text(graph_page(optimised_attention(), "causal_attention.hlo"))
    _open(browser, page)
    _no_errors(browser)
    state = browser.execute_script("return window.hloGraph.state()")
    assert state["comp"] == "main.5" and state["drawnNodes"] >= 10

    # search by name, opcode and op_name
    box = browser.find_element(By.ID, "search")
    box.send_keys("reduce_sum")
    results = _wait(browser, "return [...document.querySelectorAll('#results .result')].map(r => r.textContent)")
    assert any(r.startswith("%reduce_sum.7") for r in results)
    browser.find_element(By.CSS_SELECTOR, "#results .result").click()
    selected = _wait(browser, "return document.querySelector('#canvas .node.selected')")
    assert selected.get_attribute("data-name").startswith("reduce_sum")
    assert "reduce_sum" in browser.find_element(By.ID, "details").text
    box.clear()
    box.send_keys("dot")
    assert any("— dot" in r for r in _wait(browser, "return [...document.querySelectorAll('#results .result')]"
                                                    ".map(r => r.textContent)"))

    # a fused instruction found by search opens its fusion in place
    box.clear()
    box.send_keys("ge.3")
    browser.find_element(By.CSS_SELECTOR, "#results .result").click()
    _wait(browser, "return document.querySelector('#canvas .node.selected[data-name=\"ge.3\"]')")
    assert browser.find_elements(By.CSS_SELECTOR, '.cluster[data-key]')
    browser.find_element(By.ID, "collapse-all").click()
    _wait(browser, "return !document.querySelector('#canvas .cluster')")

    # expanding a fusion shows its fused computation, collapsing hides it again
    names = lambda: set(browser.execute_script(  # noqa: E731
        "return [...document.querySelectorAll('#canvas .node')].map(n => n.dataset.name)"))
    assert "exp.1" not in names()
    toggle = browser.find_element(By.CSS_SELECTOR, '.node[data-name="fusion.4"] .toggle')
    toggle.click()
    _wait(browser, "return document.querySelector('#canvas .cluster')")
    assert {"exp.1", "select_n.6", "param_1.4"} <= names()
    _screenshot(browser, tmp_path, "graph_page_expanded.png")
    browser.find_element(By.CSS_SELECTOR, '.node.k-head[data-name="fusion.4"] .toggle').click()
    _wait(browser, "return !document.querySelector('#canvas .cluster')")
    assert "exp.1" not in names() and "fusion.4" in names()

    # hover shows shape, layout and attributes; click shows operands and users as links
    node = browser.find_element(By.CSS_SELECTOR, '.node[data-name="reduce_sum.7"]')
    ActionChains(browser).move_to_element(node).perform()
    tooltip = _wait(browser, "const t = document.getElementById('tooltip'); return !t.hidden && t.textContent")
    assert "f32[2,4,16]{2,1,0}" in tooltip and "dimensions={3}" in tooltip and "to_apply=%region_1.4" in tooltip
    node.click()
    details = browser.find_element(By.ID, "details")
    assert "operands" in details.text and "users" in details.text
    details.find_element(By.LINK_TEXT, "%fusion.4").click()          # to the definition of an operand
    _wait(browser, "return document.querySelector('#canvas .node.selected[data-name=\"fusion.4\"]')")
    browser.find_element(By.ID, "details").find_element(By.LINK_TEXT, "%reduce_sum.7").click()   # and back to a use
    _wait(browser, "return document.querySelector('#canvas .node.selected[data-name=\"reduce_sum.7\"]')")
    _no_errors(browser)
    _screenshot(browser, tmp_path, "graph_page.png")


def test_ten_thousand_instructions_in_chromium(browser, tmp_path):
    module = hlo.parse_module(layered_module(10000, seed=1), "big.hlo")
    total = sum(len(c.instructions) for c in module.computations)
    assert total >= 10000
    page = tmp_path / "big.html"
    page.write_text(graph_page(module, "big.hlo"))
    seconds = _open(browser, page)
    assert seconds < 20
    _no_errors(browser)
    state = browser.execute_script("return window.hloGraph.state()")
    assert state["blocks"] > 50 and state["laidOut"] <= 4 and state["drawnNodes"] < 1000
    # jump to the last instruction: only the blocks around it are laid out and drawn
    start = time.monotonic()
    assert browser.execute_script("return window.hloGraph.reveal('out.200')")
    _wait(browser, "return document.querySelector('#canvas .node.selected[data-name=\"out.200\"]')")
    assert time.monotonic() - start < 10
    state = browser.execute_script("return window.hloGraph.state()")
    assert state["laidOut"] <= 10 and state["drawnNodes"] < 1500
    # search over every instruction is immediate
    assert len(browser.execute_script("return window.hloGraph.search('tanh')")) > 100
    # a stub (a value from another block) jumps to its definition
    stub = browser.execute_script("return document.querySelector('#canvas .node.stub').dataset.name")
    browser.execute_script("document.querySelector('#canvas .node.stub').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    _wait(browser, f"return document.querySelector('#canvas .node.selected[data-name=\"{stub}\"]')")
    _no_errors(browser)
    _screenshot(browser, tmp_path, "graph_page_10k.png")


@pytest.mark.parametrize("name", sorted(p.stem for p in CORPUS.glob("*.hlo")))
def test_every_corpus_computation_draws_fully_expanded(browser, tmp_path, name):
    """Every computation of every corpus module (optimised, so with fusions), with every
    caller expanded in place, lays out and draws without a script error."""
    module = hlo.parse_module((CORPUS / f"{name}.hlo").read_text(), name)
    run_pipeline(module, pipeline_text("default"))
    page = tmp_path / f"{name}.html"
    page.write_text(graph_page(module, name))
    _open(browser, page)
    for comp in browser.execute_script("return window.hloGraph.computations()"):
        assert browser.execute_script("return window.hloGraph.open(arguments[0])", comp)
        browser.execute_script("return window.hloGraph.expandAll()")
        state = browser.execute_script("return window.hloGraph.state()")
        assert state["comp"] == comp and state["drawnNodes"] > 0
    _no_errors(browser)
