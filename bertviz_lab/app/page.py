"""What every tab's controller shares, passed to each when the page is built (composition, not a mixin tree):
the page's components, the model cache, the model the server started with, the server's limits and its two
file folders (exports people download, analysis codes the page fetches)."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ..lab import Lab
from .state import LabCache, Limits, Session
from .temp_folders import TempFolder

Updates = dict[Any, Any]  # what a handler returns: {component: new value} for just the components it changes


@dataclass
class Page:
    ui: SimpleNamespace
    cache: LabCache
    startup: Lab
    limits: Limits
    exports: TempFolder = field(init=False)
    payloads: TempFolder = field(init=False)

    def __post_init__(self) -> None:
        limits = self.limits
        self.exports = TempFolder("bertviz-lab-exports-", limits.export_age, max_bytes=limits.export_bytes,
                                  per_owner=limits.files_per_session)
        self.payloads = TempFolder("bertviz-lab-payloads-", limits.payload_age, limits.payloads,
                                   max_bytes=limits.payload_bytes, per_owner=limits.files_per_session)

    def lab_of(self, session: Session) -> Lab:
        """The model this session works with (loaded once per server, shared read-only)."""
        return self.cache.get(session.model, session.device)

    def remember_recipe(self, session: Session, result: str, action: str, inputs: dict, options: dict) -> None:
        """The recipe of a result just shown (its own settings, as the command line names them), for "Copy as
        recipe"; the latest result first in the list."""
        from ..tasks.recipes import made_with

        recipe = made_with(action, self.lab_of(session).checkpoint_info(), inputs, options).to_json()
        session.recipes.pop(result, None)
        session.recipes[result] = recipe

    def hidden_titles(self, *names: str) -> Updates:
        """Result titles emptied (the page's CSS hides an empty title: its result is gone)."""
        return {getattr(self.ui, name): "" for name in names}
