"""`graphmode compare --html FILE`: one self-contained page (nothing fetched), with the
tables, the runtime chart, both graphs, the IR before and after, and the generated source
whose IR and user-line citations are links that land on an existing line. The page is
also opened in a real headless browser (Chromium) when one is installed."""
from __future__ import annotations

import html.parser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from graphmode import cli, draw, html_report

ROOT = Path(__file__).resolve().parents[2]
W2 = ROOT / "examples" / "workloads" / "w2_gelu.py"


class _Page(html.parser.HTMLParser):
    """ids, local links, external references and the text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.external: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        for key in ("src", "href", "xlink:href"):
            value = a.get(key) or ""
            if value and not value.startswith("#") and not value.startswith("data:"):
                self.external.append(f"{tag} {key}={value}")
        if tag in ("script", "link", "iframe", "img"):
            self.external.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("html") / "w2.html"
    code = cli.main(["compare", str(W2), "--sizes", "1e3,2e3", "--repeat", "1", "--html", str(out)])
    assert code == 0
    return out, out.read_text(encoding="utf-8")


def test_the_page_is_self_contained_and_every_link_lands(page):
    path, text = page
    parsed = _Page()
    parsed.feed(text)
    assert not parsed.external, parsed.external  # inline CSS and SVG only: it can be mailed
    local = [h[1:] for h in parsed.links if h.startswith("#")]
    assert local and all(target in parsed.ids for target in local), sorted(set(local) - parsed.ids)[:5]
    words = " ".join(parsed.text)
    for heading in ("Results", "Runtime against size", "What the compiler did", "IR before and after",
                    "Generated source", "Your code"):
        assert heading in words
    assert 'id="times"' in text and 'id="compile"' in text and text.count("<tr>") >= 6
    assert '<svg class="chart"' in text and text.count("<polyline") == 2  # eager and compiled
    assert "== summary ==" in text and "fused kernel" in text  # explain()'s opening


def test_a_page_without_the_compilers_view_still_links_only_to_what_it_has():
    from graphmode.report import SizeResult
    from static.compare import CompareReport, Timing

    report = CompareReport(name="w", backend="numpy", device="cpu", mode="forward", eager=Timing([2e-3]),
                           compiled=Timing([1e-3]), compile_cold_s=0.1, compile_warm_s=0.01, nodes_before=3,
                           nodes_after=1, fused_kernels=1, peak_bytes=None, max_rel_error=0.0, tolerance=1e-3,
                           input_elements=8)
    text = html_report.page({"workload": "w", "repeat": 1}, [SizeResult("8", 8, report)], None)
    parsed = _Page()
    parsed.feed(text)
    assert all(h[1:] in parsed.ids for h in parsed.links if h.startswith("#"))
    assert "could not be collected" in text and "2.00x" in text


def test_generated_source_lines_link_to_the_ir_and_to_the_users_line(page):
    _, text = page
    ir_links = re.findall(r'<a href="#(ir-(?:forward|backward)-L\d+)">L\d+</a>', text)
    assert ir_links, "no generated line links to its IR line"
    user_links = re.findall(r'<a href="#(user-L(\d+))">w2_gelu\.py:\d+</a>', text)
    assert user_links, "no generated line links to the user's line"
    source = W2.read_text(encoding="utf-8").splitlines()
    for _, line in user_links:  # each cited line is the loss's code
        assert "eager.tanh" in source[int(line) - 1] or "sum" in source[int(line) - 1]
    # the IR line a link names is the line the generated comment quotes
    m = re.search(r'<a href="#(ir-forward-L(\d+))">L\d+</a>: ([^<(]+)', text)
    assert m is not None
    target = re.search(rf'id="{m.group(1)}"><span class="n">\d+</span>([^<]*)</span>', text)
    assert target is not None and target.group(1).strip().startswith(m.group(3).strip()[:20])


def test_graphs_are_svg_with_graphviz_or_a_clear_note_without(page, monkeypatch):
    _, text = page
    if draw.find_dot() is not None:
        assert text.count('<div class="graph"><svg') == 2
    else:
        assert "Graphviz's dot is not installed" in text
    monkeypatch.setattr(draw, "find_dot", lambda: None)
    fallback = html_report.graph_svg("digraph g { a -> b }", "compiled graph")
    assert "not installed" in fallback and "a -&gt; b" in fallback and "<svg" not in fallback


def test_html_path_is_checked_before_measuring(capsys, tmp_path):
    code = cli.main(["compare", str(W2), "--sizes", "1e3", "--html", str(tmp_path / "no" / "r.html")])
    err = capsys.readouterr().err
    assert code == cli.USAGE_ERROR and "does not exist" in err
    code = cli.main(["compare", str(W2), "--sizes", "1e3", "--html", str(tmp_path / "r.txt")])
    assert code == cli.USAGE_ERROR and ".html" in capsys.readouterr().err


def _browser() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
                 if (found := shutil.which(name))), None)


@pytest.mark.skipif(_browser() is None, reason="no headless Chromium (apt-get install chromium)")
def test_a_real_browser_renders_the_page(page, tmp_path):
    path, _ = page
    browser = _browser()
    assert browser is not None
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120,
                         check=False)
    assert dom.returncode == 0, dom.stderr[-500:]
    assert "Runtime against size" in dom.stdout and "<polyline" in dom.stdout
    shot = tmp_path / "page.png"
    subprocess.run([*flags, "--window-size=1280,2400", f"--screenshot={shot}", path.as_uri()], capture_output=True,
                   timeout=120, check=False)
    assert shot.is_file() and shot.stat().st_size > 20_000  # a blank page compresses to a few kB
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
