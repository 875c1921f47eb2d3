"""Which Interventions-tab controls belong to the chosen intervention: its own options (read from
its dataclass fields, so a new kind needs no change here), the sweeps of its family, and the
one-line explanation shown under the dropdown. Everything else is hidden, so a person never sets
a control that the chosen intervention ignores."""
from __future__ import annotations

from ..interventions import REGISTRY, option_names

# option name (a field of the intervention) -> the component that sets it
OPTION_CONTROLS = {"heads": "intervention_heads", "shift": "intervention_shift", "seed": "intervention_seed",
                   "sinks": "intervention_sinks", "unit": "intervention_unit", "mode": "intervention_ablation"}
# family -> the sweep buttons that go with it (on this input and over a sentence set)
FAMILY_BUTTONS = {"direction": ("direction_btn", "direction_set_btn"), "heads": ("ablation_btn", "ablation_set_btn"),
                  "positions": ("positions_table_btn",)}
CONTROLLED = tuple(OPTION_CONTROLS.values()) + tuple(b for buttons in FAMILY_BUTTONS.values() for b in buttons)
PICKED_NOTE = ("Its targets are the tokens picked under **Mask tokens** in the left column.")
MASKED_NOTE = ("Tokens picked under **Mask tokens** (and [MASK]s you typed) are masked in both runs, so their "
               "predictions can be compared.")


def visible_controls(kind: str) -> dict[str, bool]:
    """Component name -> shown, for the intervention ``kind``."""
    cls = REGISTRY[kind]
    used = option_names(kind)
    shown = {name: option in used for option, name in OPTION_CONTROLS.items()}
    for family, buttons in FAMILY_BUTTONS.items():
        shown.update({button: cls.family == family for button in buttons})
    return shown


def explanation(kind: str) -> str:
    """The one line under the dropdown: what the intervention does, and what the picked tokens do."""
    cls = REGISTRY[kind]
    return f"{cls.explanation} {PICKED_NOTE if cls.targets_picked_tokens else MASKED_NOTE}"
