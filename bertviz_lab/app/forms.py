"""Controls whose values travel together, as one typed value per group (``Form``), and the adapter
between them and Gradio.

An event sends one value per input component, in the order of its ``inputs`` (``events.EVENTS``):
that order is the public API ``gradio_client`` callers use. A handler instead takes a few forms
(``ViewControls``, ``InterventionChoice``...) and the loose values. ``event_function`` builds,
from the handler and the event's inputs, the function Gradio calls: it takes the flat values
(its signature names them after the input components, so API keyword names say which control
they set) and gathers each form from the components named after its fields.
"""
from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

import gradio as gr


@dataclass(frozen=True)
class Form:
    """A group of controls; field ``f`` is read from the component named ``PREFIX + f``."""

    PREFIX: ClassVar[str] = ""

    @classmethod
    def components(cls) -> dict[str, str]:
        """Field name -> the ``ui`` component that sets it."""
        return {f.name: cls.PREFIX + f.name for f in fields(cls)}

    @classmethod
    def of(cls, values: Mapping[str, Any]):
        """The form from an event's values by component name; a component the event does not send
        keeps the field's default."""
        return cls(**{name: values[component] for name, component in cls.components().items() if component in values})


@dataclass(frozen=True)
class RunInput(Form):
    """What a Run analyses: sentence A, the optional sentence B and how many predictions to list."""

    text: str = ""
    pair: str = ""
    top_k: float = 5


@dataclass(frozen=True)
class ViewControls(Form):
    """The controls every view follows (1-based layer and head, as the sliders show them)."""

    layer: float = 1
    head: float = 1
    hide: bool = False
    word: bool = False
    pair_filter: str = "all"
    scale: str = "fixed"  # "fixed" 0-1 or "per-head" colour scale for attention maps


@dataclass(frozen=True)
class InterventionChoice(Form):
    """The chosen intervention and its options (``intervention_controls`` shows only those it reads)."""

    PREFIX: ClassVar[str] = "intervention_"
    kind: str = "left-only"
    heads: str = "1-1"
    shift: float = 0
    seed: float = 0
    sinks: str = "symmetric"
    unit: str = "words"
    ablation: str = "zero"


@dataclass(frozen=True)
class TreebankChoice(Form):
    """Which treebank the Syntax tab scores, and whose weights."""

    PREFIX: ClassVar[str] = "syntax_"
    treebank: str = "sample"  # "sample" or "upload"
    upload: str | None = None
    use_loaded: bool = False  # the loaded model's weights instead of the published ones


def form_of(hint: Any) -> type[Form] | None:
    """The Form class of a parameter annotated ``SomeForm`` or ``SomeForm | None``, else None."""
    for candidate in (hint, *typing.get_args(hint)):
        if isinstance(candidate, type) and issubclass(candidate, Form):
            return candidate
    return None


def without_none(hint: Any) -> Any:
    """``X`` for ``X | None`` (Python 3.10's get_type_hints adds it for a None default; Gradio reads the class)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if len(args) == 1 and type(None) in typing.get_args(hint) else hint


def injected(parameter: inspect.Parameter, hint: Any) -> bool:
    """A parameter Gradio fills itself: progress (by its default), the request or the event data (by type)."""
    return isinstance(parameter.default, gr.Progress) or without_none(hint) in (gr.Request, gr.EventData)


@dataclass(frozen=True)
class Slot:
    """Where one input value of an event goes: a field of a form, or a plain parameter of the handler."""

    component: str  # the ``ui`` component sending it
    name: str  # its name in the API: the field's or the handler parameter's
    parameter: str  # the handler parameter it fills (a form, or the value itself)
    default: Any = inspect.Parameter.empty


def slots_of(inputs: tuple[str, ...], parameters: list[inspect.Parameter], forms: dict[str, type[Form]],
             plain: list[str]) -> list[Slot]:
    """One slot per input, in the event's order: inputs named after a form's fields fill that form, the
    others fill ``plain`` parameters in order (an error if there are more of them than parameters)."""
    fields_of = {component: (parameter, field) for parameter, form in forms.items()
                 for field in fields(form) for component in [form.PREFIX + field.name]}
    defaults = {p.name: p.default for p in parameters}
    loose = iter(plain)
    slots = []
    for component in inputs:
        if component in fields_of:
            parameter, field = fields_of[component]
            default = inspect.Parameter.empty if field.default is MISSING else field.default
            slots.append(Slot(component, field.name, parameter, default))
            continue
        parameter = next(loose, None)
        if parameter is None:
            raise TypeError(f"the handler has no parameter left for the input {component!r}")
        slots.append(Slot(component, parameter, parameter, defaults[parameter]))
    names = [slot.name for slot in slots]
    return [slot if names.count(slot.name) == 1 else Slot(slot.component, slot.component, slot.parameter, slot.default)
            for slot in slots]


def api_parameters(slots: list[Slot]) -> list[inspect.Parameter]:
    """One positional parameter per input, with its default only where every later input has one
    (Python's rule; Gradio then lets API callers leave those out)."""
    kept, out = True, []
    for slot in reversed(slots):
        kept = kept and slot.default is not inspect.Parameter.empty
        out.append(inspect.Parameter(slot.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                     default=slot.default if kept else inspect.Parameter.empty))
    return out[::-1]


def event_function(handler: Callable, inputs: tuple[str, ...]) -> Callable:
    """``handler`` as an event with these ``inputs`` calls it: one positional value per input, in the
    event's order (the API's). Parameters annotated with a ``Form`` get the form built from the inputs
    named after its fields; the other inputs go, in order, to the handler's other parameters. The API
    names each value after the field or parameter it fills. A handler without forms is returned as it is."""
    hints = typing.get_type_hints(handler)
    parameters = list(inspect.signature(handler).parameters.values())
    forms = {p.name: form for p in parameters if (form := form_of(hints.get(p.name))) is not None}
    if not forms:
        return handler
    special = [p for p in parameters if injected(p, hints.get(p.name))]
    slots = slots_of(inputs, parameters, forms, [p.name for p in parameters if p.name not in forms and p not in special])

    def call(*args: Any, **kwargs: Any) -> Any:
        values = signature.bind(*args, **kwargs).arguments  # API name -> value, as sent
        sent = [slot for slot in slots if slot.name in values]
        by_component = {slot.component: values[slot.name] for slot in sent}
        named = {parameter: form.of(by_component) for parameter, form in forms.items()}
        named |= {slot.parameter: values[slot.name] for slot in sent if slot.parameter not in forms}
        named |= {p.name: values[p.name] for p in special if p.name in values}
        return handler(**named)

    signature = inspect.Signature(api_parameters(slots)
                                  + [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in special])
    call.__signature__ = signature  # what Gradio reads: the API's parameters, one per input
    call.__annotations__ = {p.name: without_none(hints[p.name]) for p in special if p.name in hints}
    call.__name__, call.__qualname__, call.__doc__ = handler.__name__, handler.__qualname__, handler.__doc__
    return call
