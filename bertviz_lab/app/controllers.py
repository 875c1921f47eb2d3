"""The page's controllers, one per tab or concern, built by composition: each gets the shared ``Page`` and the
other controllers it asks (the Run controller asks the views what to draw; the set controller asks the
intervention controller for the chosen intervention). ``events.EVENTS`` names a handler "controller.method"."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from ..lab import Lab
from .events import mark_on_request
from .inspect_controller import InspectController
from .intervention_controller import InterventionController
from .page import Page
from .qk_controller import QkController
from .run_controller import RunController
from .search_controller import SearchController
from .set_controller import SetController
from .state import LabCache, Limits
from .syntax_controller import SyntaxController
from .view_controller import ViewController


@dataclass(frozen=True)
class Controllers:
    page: Page
    views: ViewController
    run: RunController
    inspect: InspectController
    interventions: InterventionController
    sets: SetController
    syntax: SyntaxController
    search: SearchController
    qk: QkController


def build_controllers(ui: SimpleNamespace, cache: LabCache, startup: Lab, limits: Limits) -> Controllers:
    """Every controller of the page on its components, the model cache, the startup model and the limits."""
    page = Page(ui, cache, startup, limits)
    views = ViewController(page)
    interventions = InterventionController(page)
    controllers = Controllers(page, views, RunController(page, views), InspectController(page), interventions,
                              SetController(page, interventions), SyntaxController(page), SearchController(page),
                              QkController(page))
    mark_on_request(controllers)  # a handler that fills a view drawn on request says so on its session
    return controllers
