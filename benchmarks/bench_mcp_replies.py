"""How large each agent tool's reply is (issue 60): the JSON text an MCP client receives from analyze (compact, and
with attention=true), predict_masked, explain (a masked word on the default model, a class on sst2) and
score_heads, for a 9-token sentence, measured by calling the tools as the server does (AgentTools, answering JSON
text). Before 2026-12-06 analyze always sent the attention array when it had at most 20,000 numbers: its
``attention=true`` row is that older default's size.

No peer serves BERT's attention over MCP, so there is no ratio to print.

    python benchmarks/bench_mcp_replies.py [--write]
"""
from __future__ import annotations

import json

from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.app.agent_tools import AgentTools
from bertviz_lab.app.state import LabCache

TEXT = "The cat sat on the [MASK] ."  # 9 tokens with [CLS] and [SEP]


def main() -> None:
    lab = load("default")
    assert len(lab.encode(TEXT).ids) == 9, lab.encode(TEXT).tokens
    cache = LabCache(["default", "sst2", "minilm-original"], allow_any=False)
    cache.pin(lab, str(lab.device))
    tools = AgentTools(lab, cache)
    calls = [("analyze", {"text": TEXT}), ("analyze", {"text": TEXT, "attention": True}),
             ("predict_masked", {"text": TEXT}), ("explain", {"text": TEXT}),
             ("explain", {"text": "a gripping , beautifully acted film", "model": "sst2"}),
             ("score_heads", {})]
    print(f"sentence: {TEXT!r} (9 tokens) on {lab.checkpoint_info().checkpoint}, unless the call names a model\n")
    print("| tool | arguments | reply (JSON text) |")
    print("|---|---|---|")
    for name, arguments in calls:
        reply = json.dumps(getattr(tools, name)(**arguments), ensure_ascii=False)
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items() if k != "text") or "(defaults)"
        print(f"| {name} | {shown} | {len(reply.encode('utf-8')) / 1024:.1f} KB |")


if __name__ == "__main__":
    run_recorded("mcp-replies", "The agent door's reply sizes (issue 60)", __doc__, main)
