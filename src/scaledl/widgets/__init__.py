"""Interactive explorers made of core ipywidgets only, so they run in JupyterLab, Colab and any JupyterHub.

An :class:`Explorer` joins a *view*, a plain function of keyword arguments that returns something Jupyter
can show (a matplotlib Figure, a string, HTML), to one control per argument. The view is what tests call;
the widgets only feed it. Each control has a sensible default, and the view's output at those defaults is
displayed as an ordinary cell output, so a reader of the static book (or of a notebook opened without a
kernel) still sees the figure. Moving a control re-renders it in place.

>>> from scaledl.widgets import Explorer, slider
>>> def view(n, scale):
...     return f"{n} x {scale:g} = {n * scale:g}"
>>> ex = Explorer(view, n=slider(3, 1, 10, description="n"), scale=slider(0.5, 0.1, 2.0, 0.1))
>>> ex.render()
'3 x 0.5 = 1.5'
>>> ex.render(n=4)
'4 x 0.5 = 2'
"""

from __future__ import annotations

import math
from typing import Any, Callable

import ipywidgets as W

__all__ = ["Explorer", "slider", "log_slider", "choice", "toggle"]

FALLBACK_TEXT = ("Interactive explorer: run this cell to move its controls. The figure below is drawn at "
                 "their default values.")
_STYLE = {"description_width": "initial"}
_LAYOUT = {"width": "420px"}


def _check_range(value, lo, hi, what: str):
    if not (lo <= value <= hi):
        raise ValueError(f"{what}: default value {value!r} is outside its range [{lo!r}, {hi!r}]")


def slider(value, min, max, step=None, *, description: str = "", readout_format: str | None = None):
    """An IntSlider when value, min and max are all ints (and step is None or an int), else a FloatSlider."""
    _check_range(value, min, max, f"slider {description!r}")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (value, min, max)) and \
            (step is None or isinstance(step, int)):
        return W.IntSlider(value=value, min=min, max=max, step=step or 1, description=description,
                           continuous_update=False, style=_STYLE, layout=_LAYOUT)
    kwargs = {"readout_format": readout_format} if readout_format else {}
    return W.FloatSlider(value=float(value), min=float(min), max=float(max),
                         step=float(step) if step else (float(max) - float(min)) / 100,
                         description=description, continuous_update=False, style=_STYLE, layout=_LAYOUT,
                         **kwargs)


def log_slider(value, min, max, *, description: str = "", steps_per_decade: int = 10,
               readout_format: str = ".3g"):
    """A slider over orders of magnitude (FloatLogSlider), for quantities spanning decades."""
    if min <= 0:
        raise ValueError(f"log_slider {description!r}: min must be > 0 for a log scale, got {min!r}")
    _check_range(value, min, max, f"log_slider {description!r}")
    return W.FloatLogSlider(value=value, base=10, min=math.log10(min), max=math.log10(max),
                            step=1 / steps_per_decade, description=description, continuous_update=False,
                            readout_format=readout_format, style=_STYLE, layout=_LAYOUT)


def choice(options, value, *, description: str = ""):
    """A dropdown. ``options`` is a list of values or of (label, value) pairs."""
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    if value not in values:
        raise ValueError(f"choice {description!r}: default {value!r} is not among the options {values!r}")
    return W.Dropdown(options=options, value=value, description=description, style=_STYLE, layout=_LAYOUT)


def toggle(value: bool, *, description: str = ""):
    if not isinstance(value, bool):
        raise TypeError(f"toggle {description!r}: default must be a bool, got {value!r}")
    return W.Checkbox(value=value, description=description, style=_STYLE, indent=False)


def _close_if_figure(obj):
    if type(obj).__module__.startswith("matplotlib"):
        import matplotlib.pyplot as plt

        plt.close(obj)


class Explorer:
    """Controls bound to the keyword arguments of a view function.

    Args:
        view: ``view(**values)`` returns what to show: a matplotlib Figure, a str, or any displayable.
        describe: optional, ``describe(**values)`` returns ``{control name: description}`` for the controls whose
            label depends on the others' values (a rate "per DGX-1" that another control turns into a DGX-2's);
            it is applied at once and whenever a value changes.
        **controls: one ipywidget per keyword argument of ``view``; their values are the defaults.
    """

    def __init__(self, view: Callable[..., Any], *, describe: Callable[..., dict] | None = None,
                 **controls: W.ValueWidget):
        if not callable(view):
            raise TypeError(f"view must be callable, got {view!r}")
        if not controls:
            raise ValueError("an Explorer needs at least one control")
        for name, w in controls.items():
            if not isinstance(w, W.ValueWidget):
                raise TypeError(f"control {name!r} must be an ipywidgets value widget, got {type(w).__name__}")
        if describe is not None and not callable(describe):
            raise TypeError(f"describe must be callable or None, got {describe!r}")
        self.view = view
        self.controls = dict(controls)
        self._handle = None
        self._describe = describe
        if describe is not None:
            self._relabel()
            for w in self.controls.values():
                w.observe(self._relabel, names="value")

    def _relabel(self, _change=None):
        labels = self._describe(**self.values())
        unknown = set(labels) - set(self.controls)
        if unknown:
            raise ValueError(f"describe returned unknown control(s) {sorted(unknown)}; the controls are "
                             f"{sorted(self.controls)}")
        for name, text in labels.items():
            self.controls[name].description = text

    def values(self) -> dict[str, Any]:
        return {name: w.value for name, w in self.controls.items()}

    def render(self, **overrides) -> Any:
        """The view at the controls' current values, with ``overrides`` replacing some of them."""
        unknown = set(overrides) - set(self.controls)
        if unknown:
            raise ValueError(f"render() got unknown argument(s) {sorted(unknown)}; the controls are "
                             f"{sorted(self.controls)}")
        return self.view(**{**self.values(), **overrides})

    def _show(self, obj):
        from IPython.display import display

        if isinstance(obj, str):
            from IPython.display import Pretty

            obj = Pretty(obj)
        if self._handle is None:
            self._handle = display(obj, display_id=True)
        else:
            self._handle.update(obj)

    def _on_change(self, _change):
        out = self.render()
        self._show(out)
        _close_if_figure(out)

    def _ipython_display_(self):
        from IPython.display import display

        box = W.VBox(list(self.controls.values()))
        # Shown where the controls cannot be (no kernel, an untrusted notebook, a static page): a sentence,
        # never the widget's repr.
        # The view is spelled out rather than taken from box._repr_mimebundle_(), which ipywidgets 7 (still the
        # one Colab ships) lacks; both 7.7 and 8 use this message, widget protocol version 2.0.
        view = {"version_major": 2, "version_minor": 0, "model_id": box.model_id}
        bundle = {"application/vnd.jupyter.widget-view+json": view, "text/plain": FALLBACK_TEXT}
        display(bundle, raw=True)
        self._handle = None
        self._on_change(None)
        for w in self.controls.values():
            w.observe(self._on_change, names="value")
