"""The runtime chart of `graphmode compare --plot`: sizes that are numbers sit on a log x
axis (1e3 .. 8e6 spread by magnitude, not evenly), shapes on an even one; the title names
the backend that ran."""
from __future__ import annotations

import pytest

from graphmode.report import SizeResult, plot_positions, write_plot
from static.compare import CompareReport, Timing


def test_number_sizes_are_placed_by_magnitude_and_shapes_evenly():
    xs, logx = plot_positions([1000, 10_000, 8_000_000])
    assert logx and xs == [1000.0, 10_000.0, 8_000_000.0]
    xs, logx = plot_positions([(32, 64, 64, 10), (256, 784, 512, 10)])
    assert not logx and xs == [0.0, 1.0]


def _result(label: str, value: int, backend: str = "native") -> SizeResult:
    report = CompareReport(name="w", backend=backend, device="cpu", mode="forward+backward",
                           eager=Timing([value * 1e-8] * 3), compiled=Timing([value * 3e-9] * 3), compile_cold_s=0.1,
                           compile_warm_s=0.01, nodes_before=10, nodes_after=1, fused_kernels=1, peak_bytes=100,
                           max_rel_error=0.0, tolerance=1e-3, input_elements=value)
    return SizeResult(label, value, report)


def test_the_chart_uses_a_log_x_axis_and_names_the_backend(tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seen = {}
    close = plt.close

    def keep(fig):  # look at the figure before write_plot closes it
        seen["fig"] = fig
        close(fig)

    monkeypatch.setattr(plt, "close", keep)
    write_plot(str(tmp_path / "r.png"), "w2", [_result("1e3", 1000), _result("1e5", 100_000), _result("8e6", 8_000_000)])
    runtime, speedup = seen["fig"].axes
    assert runtime.get_xscale() == "log" and speedup.get_xscale() == "log"
    assert "native" in runtime.get_title()
    assert [t.get_text() for t in speedup.get_xticklabels()] == ["1e3", "1e5", "8e6"]
    assert (tmp_path / "r.png").stat().st_size > 1000
