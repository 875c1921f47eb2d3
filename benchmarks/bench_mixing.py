"""Context mixing and attribution cost on the embedded default (MiniLM-L6 with its MLM head), CPU,
32 tokens with one [MASK], in one run (issue 33):

1. each source's per-layer matrices from one captured forward pass (what ``--source`` and the views
   compute), next to the captured forward itself (target: each <= 2x the forward);
2. value zeroing, batched per layer (ours) next to the released algorithm's loop, one layer pass
   per zeroed token (hmohebbi/ValueZeroing, run on transformers' own modules; target: ours <= 3 s);
3. integrated gradients (Captum, 32 steps; target <= 3 s) and the whole "why this word?"
   attribution (``explain``: erasure, gradient x input, integrated gradients, DecompX and every
   source's agreement with erasure; target <= 5 s).

DecompX carries one part per input token through every FFN, so its work is n times the FFN's (n
tokens; the released code's einsums do the same work): the <= 2x figure cannot hold for it at any
length, and its ratio grows with n. Medians of interleaved runs; the equality of every source with its independent reference (<= 1e-4)
is asserted by the tests (tests/test_contributions.py, test_decompx.py, test_mixing.py, test_norms.py).

    python benchmarks/bench_mixing.py [--write]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
from common import interleaved_medians, median_seconds
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.bert.loading.checkpoints import packaged_default_folder
from bertviz_lab.bert.sources.captured import MIXING_CAPTURES, Captured
from bertviz_lab.bert.sources.source_registry import SOURCES
from bertviz_lab.interventions.attribution import explain, gradient_methods

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_mixing import released_loop  # noqa: E402  (the released value-zeroing loop, as the tests run it)

TOKENS = 32


def text_of(lab, tokens: int) -> str:
    words = ("the old man who lived next to the station walked his small dog to the [MASK] every single morning "
             "before he went to work in the big city near the river where his brother had a shop").split()
    return next(" ".join(words[:k]) for k in range(3, len(words) + 1) if len(lab.encode(" ".join(words[:k])).ids) >= tokens)


def main() -> None:
    lab = load("default", device="cpu")
    text = text_of(lab, TOKENS)
    analysis = lab.analyze(text)
    tensors = lab.batch_tensors([analysis.encoded()])
    n = len(analysis.tokens)

    def forward():
        return lab.run(tensors, capture=MIXING_CAPTURES, compute_mlm=False)[1]

    cache = forward()
    timed = {"captured forward": forward}
    for source in SOURCES:
        timed[source] = lambda source=source: SOURCES[source].layer_matrices(Captured(lab.model, cache, 0, n))
    times = interleaved_medians(timed, repeat=10, warmup=2)
    base = times["captured forward"]
    print(f"model {lab.name}, {n} tokens, torch threads {torch.get_num_threads()}\n")
    print("| what | time | x captured forward | target |\n|---|---:|---:|---|")
    print(f"| captured forward (every hook the sources read) | {base * 1e3:.1f} ms | 1.00 | |")
    for source in SOURCES:
        target = "<= 3 s" if source == "value-zeroing" else "<= 2x"
        print(f"| {source} (all layers, from the capture) | {times[source] * 1e3:.1f} ms | {times[source] / base:.2f} "
              f"| {target} |")
    from transformers import BertModel

    hf = BertModel.from_pretrained(str(packaged_default_folder()), attn_implementation="eager").eval()

    class Wrapped:  # the released loop reads hf.bert and hf.bert.encoder.layer
        bert = hf

    ids = torch.tensor([analysis.token_ids])
    loop = median_seconds(lambda: released_loop(Wrapped, ids), repeat=3, warmup=1)
    print(f"| value zeroing, the released loop (one layer pass per zeroed token, transformers) | {loop * 1e3:.0f} ms "
          f"| {loop / base:.2f} | ours {loop / times['value-zeroing']:.1f}x faster |")
    position = analysis.mlm[0].position
    target = lab.tokenizer.token_to_id(analysis.mlm[0].predictions[0].token)
    context = [i for i, t in enumerate(analysis.tokens) if t not in ("[CLS]", "[SEP]") and i != position]
    ig = median_seconds(lambda: gradient_methods(lab, analysis, position, target, context, steps=32), repeat=3,
                        warmup=1)
    whole = median_seconds(lambda: explain(lab, analysis), repeat=3, warmup=1)
    print(f"| gradient x input + integrated gradients (Captum, 32 steps) | {ig * 1e3:.0f} ms | {ig / base:.1f} "
          f"| IG <= 3 s |")
    print(f"| the whole `--explain` (erasure, gradients, DecompX, every source's agreement) | {whole * 1e3:.0f} ms "
          f"| {whole / base:.1f} | <= 5 s |")


if __name__ == "__main__":
    run_recorded("mixing", "Context mixing and attribution: cost at 32 tokens", __doc__, main)
