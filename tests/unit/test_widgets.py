"""Widgets: the view is a plain function; controls validate their defaults; display updates in place."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets as W  # noqa: E402
import pytest  # noqa: E402

from scaledl.widgets import FALLBACK_TEXT, Explorer, choice, log_slider, slider, toggle  # noqa: E402


def view(n, scale, mode="a", on=True):
    return f"{mode}:{n * scale:g}:{on}"


def test_slider_kinds():
    assert isinstance(slider(3, 1, 10), W.IntSlider)
    assert isinstance(slider(0.5, 0.0, 1.0), W.FloatSlider)
    assert isinstance(log_slider(1e3, 1, 1e6), W.FloatLogSlider)
    assert log_slider(1e3, 1, 1e6).value == pytest.approx(1e3)


@pytest.mark.parametrize("make, message", [
    (lambda: slider(11, 1, 10, description="n"), r"slider 'n': default value 11 is outside its range \[1, 10\]"),
    (lambda: log_slider(1, 0, 10, description="flops"), r"log_slider 'flops': min must be > 0"),
    (lambda: choice(["a", "b"], "c", description="mode"), r"default 'c' is not among the options \['a', 'b'\]"),
    (lambda: toggle(1, description="on"), r"toggle 'on': default must be a bool"),
])
def test_bad_defaults_are_clear_errors(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_render_uses_control_values_and_overrides():
    ex = Explorer(view, n=slider(3, 1, 10), scale=slider(0.5, 0.1, 2.0, 0.1), mode=choice(["a", "b"], "b"),
                  on=toggle(False))
    assert ex.render() == "b:1.5:False"
    assert ex.render(n=4, on=True) == "b:2:True"
    ex.controls["n"].value = 10
    assert ex.render() == "b:5:False"


def test_render_rejects_unknown_arguments():
    ex = Explorer(view, n=slider(3, 1, 10), scale=slider(0.5, 0.1, 2.0, 0.1))
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['bogus'\]"):
        ex.render(bogus=1)


def test_explorer_validates_its_parts():
    with pytest.raises(TypeError, match="view must be callable"):
        Explorer(42, n=slider(1, 0, 2))
    with pytest.raises(ValueError, match="at least one control"):
        Explorer(view)
    with pytest.raises(TypeError, match="control 'n' must be an ipywidgets value widget"):
        Explorer(view, n=5)


def test_display_shows_default_then_updates_in_place(monkeypatch):
    shown = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj))

    def fake_display(obj, display_id=False, raw=False):
        shown.append(("display", obj))
        return Handle() if display_id else None

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    ex = Explorer(view, n=slider(3, 1, 10), scale=slider(0.5, 0.1, 2.0, 0.1))
    ex._ipython_display_()
    controls = shown[0][1]  # the VBox's mime bundle, with a sentence as its plain-text fallback
    assert controls["text/plain"] == FALLBACK_TEXT and "VBox" not in controls["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in controls
    assert "a:1.5:True" in repr(shown[1][1].data)
    ex.controls["n"].value = 4
    assert shown[-1][0] == "update" and "a:2:True" in repr(shown[-1][1].data)


def test_figures_are_closed_after_display(monkeypatch):
    import IPython.display
    import matplotlib.pyplot as plt

    monkeypatch.setattr(IPython.display, "display", lambda obj, display_id=False, raw=False: type("H", (), {
        "update": lambda self, o: None})())

    def fig_view(n):
        fig, ax = plt.subplots()
        ax.plot(range(n))
        return fig

    before = len(plt.get_fignums())
    Explorer(fig_view, n=slider(3, 1, 10))._ipython_display_()
    assert len(plt.get_fignums()) == before


def test_describe_relabels_controls_as_values_change():
    def describe(n, scale, **_):
        return {"scale": f"scale for n = {n}"}

    ex = Explorer(view, describe=describe, n=slider(3, 1, 10, description="n"),
                  scale=slider(0.5, 0.1, 2.0, 0.1, description="scale"))
    assert ex.controls["scale"].description == "scale for n = 3"  # applied at once, before any display
    ex.controls["n"].value = 7
    assert ex.controls["scale"].description == "scale for n = 7" and ex.controls["n"].description == "n"
    with pytest.raises(ValueError, match=r"describe returned unknown control\(s\) \['rate'\]"):
        Explorer(view, describe=lambda **_: {"rate": "x"}, n=slider(3, 1, 10), scale=slider(0.5, 0.1, 2.0, 0.1))
    with pytest.raises(TypeError, match="describe must be callable or None, got 'n'"):
        Explorer(view, describe="n", n=slider(3, 1, 10))
