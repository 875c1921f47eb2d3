"""Where the position-scheme twins start, chosen by measurement (issue 58): a short pilot of the three starts the
issue names, on the twins' own recipe, then the rule below applied to the numbers.

The starts (``TwinRecipe.init``): ``scratch`` (BERT's initialisation, the same for every twin), ``minilm`` (the
embedded encoder's weights but its position table; it fits only its own size, 384 wide, 6 layers of 12 heads) and
``distill`` (BERT's initialisation trained on half the gold word's cross-entropy and half the KL divergence from the
``default`` masked-word head's distribution). Each start trains the learned, rotary and no-position twins for
``--steps`` steps (the recipe's data, masks, seed, optimiser and schedule, over the pilot's steps), in resumable legs
of at most ``--leg-minutes``; rerun the same command until it prints the table. A start whose seven twins cannot
ship within the budget is ruled out by its size and not trained.

Measured on held-out running text (the held-out documents of the shipped corpus, never trained on), packed and
masked as the twins are trained: masked-word loss per block with a 95 % bootstrap interval over blocks, each start's
difference from ``scratch`` paired by block, and "uses word order": the no-position twin's loss minus the learned
and the rotary twin's (paired by block; above 0 means the twin gained from its positions). And the shipped size of
seven twins at each start's size (float16, shared words not counted), against the issue's 60 MB.

The rule, written before the pilot ran: among the starts whose seven twins fit in 60 MB, take the one with the
lowest mean held-out loss over the three twins; a start whose advantage comes with a twin that does not gain from
its positions (gain interval including 0) where scratch's does is not neutral to the scheme and is not taken.

    python benchmarks/pilot_twin_init.py --out runs/twin-init --leg-minutes 40 [--steps 200] [--blocks 200]
        [--write] [--write-result assets/twins/init_pilot.json]
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from bench_twins import held_out_documents
from sections import markdown_table, run_recorded

from bertviz_lab.bert import BertLab
from bertviz_lab.interventions.sets import mean_interval
from bertviz_lab.mlm.objective import IGNORE
from bertviz_lab.mlm.twins import (
    INITS,
    MINILM_SIZE,
    WORDS,
    Leg,
    TwinRecipe,
    masked_batch,
    packed_blocks,
    shared_words,
    train_twins,
    twin_config,
)

SCHEMES = ("learned", "rotary", "none")
BUDGET_MB = 60.0
RULE = ("among the starts whose seven twins fit in 60 MB, take the one with the lowest mean held-out loss over the "
        "three twins; a start under which a twin gains nothing from its positions (its order-gain interval includes "
        "0) where it does from scratch is not neutral to the scheme and is not taken.")


def recipe_of(init: str, steps: int) -> TwinRecipe:
    base = replace(TwinRecipe(), steps=steps, eval_every=50, schemes=SCHEMES, init=init)
    return replace(base, **MINILM_SIZE) if init == "minilm" else base


def shipped_mb(recipe: TwinRecipe, words: torch.Tensor) -> float:
    """Seven twins' own weights in float16 at this recipe's size (every scheme, the shared words left out)."""
    from bertviz_lab.mlm.twins import SCHEMES as ALL

    count = sum(sum(v.numel() for k, v in BertLab(twin_config(s, recipe, words)).state_dict().items() if k != WORDS)
                for s in ALL)
    return 2 * count / 1e6


def block_losses(model: BertLab, blocks: torch.Tensor, recipe: TwinRecipe, mask_id: int, vocab: int) -> np.ndarray:
    """(blocks,) mean masked-word cross-entropy of each held-out block, the masks seeded apart from training's."""
    inputs, labels, mask = masked_batch(blocks, list(range(len(blocks))), recipe, -2, mask_id, vocab)
    out = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(blocks), 16):
            rows = slice(start, start + 16)
            chosen = labels[rows] != IGNORE
            logits = model(inputs[rows], attention_mask=mask[rows], mlm_positions=chosen).mlm_logits.float()
            loss = torch.nn.functional.cross_entropy(logits, labels[rows][chosen], reduction="none")
            owner = chosen.nonzero()[:, 0]  # which block of this slice each masked position is in
            sums = torch.zeros(chosen.shape[0]).index_add_(0, owner, loss)
            out.append((sums / chosen.sum(1).clamp(min=1)).numpy())
    return np.concatenate(out)


def trained(out: Path, recipe: TwinRecipe, words: torch.Tensor) -> dict[str, BertLab]:
    saved = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=False)
    twins = {}
    for scheme in recipe.schemes:
        model = BertLab(twin_config(scheme, recipe, words))
        model.load_state_dict({**saved["models"][scheme], WORDS: words}, strict=True)
        twins[scheme] = model
    return twins


def cell(effect) -> str:
    return f"{effect.mean:.3f} [{effect.ci_low:.3f}, {effect.ci_high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/twin-init"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--leg-minutes", type=float, default=40.0)
    parser.add_argument("--blocks", type=int, default=200)
    parser.add_argument("--inits", default=",".join(INITS))
    parser.add_argument("--write-result", type=Path, default=None, metavar="JSON")
    args = parser.parse_args()
    inits = [i for i in args.inits.split(",") if i]
    words, tokenizer = shared = shared_words()
    started = time.time()
    fits = {init: shipped_mb(recipe_of(init, args.steps), words) <= BUDGET_MB for init in inits}
    for init in [i for i in inits if fits[i]]:  # a start that cannot ship is ruled out by its size, untrained
        recipe = recipe_of(init, args.steps)
        folder = args.out / init
        done = folder / "checkpoint.pt"
        if done.is_file() and torch.load(done, map_location="cpu", weights_only=False)["run"]["step"] >= args.steps:
            continue
        left = args.leg_minutes - (time.time() - started) / 60
        if left <= 1:
            print(f"leg over; rerun the same command to go on ({init} next)")
            return
        run = train_twins(folder, recipe, shared, Leg(resume=True, minutes=left, command=f"pilot {init}"),
                          say=lambda line, init=init: print(f"[{init}] {line}", flush=True))
        if run.step < args.steps:
            print(f"leg over at {init} step {run.step}; rerun the same command to go on")
            return
    blocks = packed_blocks(tokenizer, held_out_documents(), 128)[:args.blocks]
    mask_id, vocab = tokenizer.token_to_id("[MASK]"), words.shape[0]
    losses = {init: {s: block_losses(m, blocks, recipe_of(init, args.steps), mask_id, vocab)
                     for s, m in trained(args.out / init, recipe_of(init, args.steps), words).items()}
              for init in inits if fits[init]}
    result = {"steps": args.steps, "schemes": list(SCHEMES), "blocks": len(blocks), "rule": RULE, "starts": {}}
    rows = []
    for init in inits:
        recipe = recipe_of(init, args.steps)
        size = shipped_mb(recipe, words)
        if init not in losses:
            result["starts"][init] = {"size": {k: getattr(recipe, k) for k in MINILM_SIZE},
                                      "shipped_mb": round(size, 1), "fits": False}
            rows.append([init, f"{recipe.hidden}x{recipe.layers}", f"{size:.1f}"] + ["not trained: too large"] +
                        ["-"] * (len(SCHEMES) + 3))
            continue
        mean = mean_interval(np.mean([losses[init][s] for s in SCHEMES], axis=0))
        versus = mean_interval(np.mean([losses[init][s] - losses["scratch"][s] for s in SCHEMES], axis=0)) \
            if init != "scratch" and "scratch" in losses else None
        gains = {s: mean_interval(losses[init]["none"] - losses[init][s]) for s in ("learned", "rotary")}
        result["starts"][init] = {
            "size": {k: getattr(recipe, k) for k in MINILM_SIZE}, "shipped_mb": round(size, 1),
            "fits": size <= BUDGET_MB, "loss": {s: mean_interval(losses[init][s]).to_json() for s in SCHEMES},
            "mean_loss": mean.to_json(), "minus_scratch": versus.to_json() if versus else None,
            "order_gain": {s: g.to_json() for s, g in gains.items()}}
        rows.append([init, f"{recipe.hidden}x{recipe.layers}", f"{size:.1f}"] +
                    [cell(mean_interval(losses[init][s])) for s in SCHEMES] +
                    [cell(mean), cell(versus) if versus else "-"] + [cell(gains[s]) for s in ("learned", "rotary")])
    print(markdown_table(["start", "width x layers", "7 twins (MB)"] + [f"loss {s}" for s in SCHEMES] +
                         ["mean loss", "minus scratch (paired)", "order gain learned", "order gain rotary"], rows))
    chosen, why = choose(result["starts"])
    result["chosen"], result["why"] = chosen, why
    print(f"\n{len(blocks)} held-out blocks of 128 WordPieces after {args.steps} steps; 95 % bootstrap intervals "
          f"over blocks.\nChosen: {chosen}. {why}")
    if args.write_result:
        args.write_result.write_text(json.dumps(result, indent=1))


def choose(starts: dict) -> tuple[str, str]:
    """The rule in the module's docstring, applied; the reason is generated from the numbers."""
    reasons = []
    fitting = {}
    for init, record in starts.items():
        if not record["fits"]:
            reasons.append(f"{init} does not fit: seven twins at its size take {record['shipped_mb']} MB "
                           f"(budget {BUDGET_MB:.0f} MB)")
            continue
        lost = [s for s, g in record["order_gain"].items() if g["ci_low"] <= 0 < starts["scratch"]["order_gain"][s]
                ["ci_low"]] if "scratch" in starts else []
        if lost:
            reasons.append(f"{init} is not neutral: its {', '.join(lost)} twin gains nothing from its positions "
                           "where scratch's does")
            continue
        fitting[init] = record["mean_loss"]["mean"]
    if not fitting:
        return "scratch", "; ".join(reasons) + "; no start passes, so the plain one is kept"
    best = min(fitting, key=fitting.get)
    reasons.append(f"{best} has the lowest mean held-out loss of those that pass ({fitting[best]:.3f} nats" +
                   "".join(f"; {k} {v:.3f}" for k, v in fitting.items() if k != best) + ")")
    return best, "; ".join(reasons) + "."


if __name__ == "__main__":
    run_recorded("twin-init", "Where the twins start: the pilot of the three starts (issue 58)", __doc__, main)
