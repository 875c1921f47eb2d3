"""The position-scheme twins' one model card (issue 58), written from the exported ``twins.json`` (recipe, configs,
validation curves, legs) and, when present, the held-out ``measures.json`` of ``benchmarks/bench_twins.py``.

Every number in the card is read from those files; the sentences that compare twins are generated from them (a twin's
final validation loss against the no-position twin's; a length's interval against the training length's), never
written by hand.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

SAME_LOSS = 0.05  # nats: final validation losses this close are called "about the same" in the card


def loss_sentence(final: dict[str, float]) -> str:
    """Which twins ended near the no-position twin's validation loss and which clearly below it."""
    if "none" not in final:
        return ""
    base = final["none"]
    near = [s for s, v in final.items() if s != "none" and abs(v - base) <= SAME_LOSS]
    below = sorted((s for s, v in final.items() if v < base - SAME_LOSS), key=final.get)
    parts = []
    if below:
        parts.append("clearly below the no-position twin's " + f"{base:.2f}: " +
                     ", ".join(f"{s} {final[s]:.2f}" for s in below))
    if near:
        parts.append(f"within {SAME_LOSS} nats of it: " + ", ".join(f"{s} {final[s]:.2f}" for s in near))
    return "Final validation loss (nats), " + "; ".join(parts) + "."


def curves_table(history: list[dict], schemes: list[str]) -> str:
    rows = ["| step | " + " | ".join(schemes) + " |", "|---|" + "---|" * len(schemes)]
    for point in history:
        rows.append(f"| {point['step']} | " + " | ".join(f"{point['loss'].get(s, float('nan')):.3f}"
                                                         for s in schemes) + " |")
    return "\n".join(rows)


def measures_table(measures: dict[str, Any]) -> str:
    twins = measures.get("twins", {})
    if not twins:
        return ("The held-out measures are not in this folder yet: `python benchmarks/bench_twins.py --treebank "
                "../shared/data/ud-en-ewt-test.conllu.gz --write-measures --write`.")
    rows = ["| twin | top-1 at 1x | 2x | 4x | shuffle: loss change (nats) | best head, held out (EWT) | UUAS |",
            "|---|---|---|---|---|---|---|"]

    def cell(record: dict) -> str:
        if "problem" in record:
            return record["problem"].split(":")[0]  # "cannot reach position 129"
        return f"{record['value']:.3f} [{record['ci'][0]:.3f}, {record['ci'][1]:.3f}]" if "value" in record else "-"

    for name, m in twins.items():
        syntax = m.get("syntax", {})
        head = (f"{syntax['heldout_head']} {syntax['heldout'][0]:.3f} [{syntax['heldout'][1]:.3f}, "
                f"{syntax['heldout'][2]:.3f}] (floor {syntax['null'][0]:.3f})") if syntax else "-"
        uuas = f"{syntax['uuas'][0]:.3f} [{syntax['uuas'][1]:.3f}, {syntax['uuas'][2]:.3f}]" if syntax else "-"
        rows.append(f"| {name} | {cell(m['top1'].get('1x', {}))} | {cell(m['top1'].get('2x', {}))} | "
                    f"{cell(m['top1'].get('4x', {}))} | {cell(m.get('order', {}))} | {head} | {uuas} |")
    return "\n".join(rows)


def initialisation_text(recipe: dict[str, Any], pilot: dict[str, Any] | None) -> str:
    """Where the twins started and why, from the pilot of the three starts (``benchmarks/pilot_twin_init.py``,
    its ``init_pilot.json``) when the folder has one: its table and its rule's choice, generated from the numbers."""
    start = recipe.get("init", "scratch")
    names = {"scratch": "from scratch (BERT's initialisation)", "minilm": "from the embedded encoder's weights",
             "distill": "from scratch, distilled from the `default` masked-word head"}
    if not pilot:
        return (f"{names[start].capitalize()}, the same start for every twin. The other starts the issue names were "
                "not measured for this run.")
    rows = ["| start | size | 7 twins (MB) | mean held-out loss | minus scratch (paired) | order gain, learned | "
            "order gain, rotary |", "|---|---|---|---|---|---|---|"]

    def cell(effect: dict | None) -> str:
        return "-" if not effect else f"{effect['mean']:.3f} [{effect['ci_low']:.3f}, {effect['ci_high']:.3f}]"

    for init, r in pilot["starts"].items():
        size = r["size"]
        measured = [cell(r["mean_loss"]), cell(r["minus_scratch"]), cell(r["order_gain"]["learned"]),
                    cell(r["order_gain"]["rotary"])] if "mean_loss" in r else ["not trained: too large", "-", "-", "-"]
        rows.append(f"| {init} | {size['hidden']} wide, {size['layers']} layers | {r['shipped_mb']} | " +
                    " | ".join(measured) + " |")
    same = pilot["chosen"] == start
    return (f"Chosen by a pilot (`benchmarks/pilot_twin_init.py`, BENCHMARKS `twin-init`): each start the issue names "
            f"trained the {', '.join(pilot['schemes'])} twins for {pilot['steps']} steps of this recipe, measured on "
            f"{pilot['blocks']} held-out blocks (masked-word loss in nats, 95 % intervals over blocks; \"order "
            "gain\" is the no-position twin's loss minus that twin's, above 0 when it uses its positions):\n\n" +
            "\n".join(rows) + f"\n\nThe rule, fixed before the pilot ran: {pilot['rule']}\n\nIts choice: "
            f"**{pilot['chosen']}**. {pilot['why']} " +
            (f"These twins started {names[start]}, as chosen." if same else
             f"These twins started {names[start]}: they were trained before the pilot, so a retrain from "
             f"{pilot['chosen']} (`train-twins --init {pilot['chosen']}`) is the next run, and until then the "
             "numbers below are those of the plain start."))


def twin_card(record: dict[str, Any], measures: dict[str, Any], sizes: dict[str, int],
              pilot: dict[str, Any] | None = None) -> str:
    recipe, history = record["recipe"], record["history"]
    schemes = list(recipe["schemes"])
    final = {s: history[-1]["loss"][s] for s in schemes if s in history[-1]["loss"]}
    legs = "\n".join(f"- leg {leg['leg']}: " + (f"steps {leg['from_step']}–{leg['to_step']} in {leg['minutes']} min "
                                                 f"(`{leg['command']}`)" if "from_step" in leg else
                                                 f"{', '.join(leg.get('merged', []))} merged from {leg.get('from')}")
                     for leg in record["legs"])
    total = sum(sizes.values())
    return f"""# Position-scheme twins (issue 58)

Seven small BERT encoders that differ only in how they tell positions apart, trained here together so that a
difference between two of them can be put down to the position scheme: learned absolute (BERT), fixed sinusoidal
(Vaswani et al. 2017, the seeds' formula), relative bias buckets (T5/MPNet), disentangled content/position attention
(DeBERTa, c2p + p2c), rotary (RoFormer/ModernBERT), ALiBi in its bidirectional form (Press et al. 2022, as
MosaicBERT), and no positions at all. Load one as `twin-<scheme>` (`--model twin-rotary`,
`bertviz_lab.load("twin-rotary")`, the page's model list); the page's **Positions** tab sets two to four side by side.

## What they share and what is their own
- **Shared, frozen, not shipped with them:** the embedded MiniLM's WordPiece tokenizer and word embeddings
  (30,522 x {record['configs'][schemes[0]]['embedding_size']}); the masked-word decoder is tied to them, as in BERT.
- **The same for every twin:** the size ({recipe['layers']} post-norm layers, hidden {recipe['hidden']}, {recipe['heads']}
  heads, feed-forward {recipe['ffn']}), the text, the batches, the masked positions and their 80/10/10 replacements,
  the seed ({recipe['seed']}), the steps ({recipe['steps']}), the optimiser (AdamW, lr {recipe['lr']}, warm-up
  {recipe['warmup']:.0%}, linear decay, weight decay {recipe['weight_decay']}), bfloat16 autocast
  ({'on' if recipe['bf16'] else 'off'}), and the starting point: every weight the twins have in common is copied from
  one initialisation (BERT's, seed {recipe['seed']}), so they start equal in everything but their positions.
- **Their own:** the position scheme's weights (a learned table of {recipe['length']} rows; relative buckets; the
  disentangled table; sinusoids, rotary angles and ALiBi slopes have none) and everything trained after the start.

## Initialisation
{initialisation_text(recipe, pilot)}

## Training
Text: running text only, the corpus's `train_docs.jsonl` (UD English EWT, GUM and LinES train splits and the Brown
Corpus, {recipe['length']}-WordPiece blocks that run across sentence ends within a document), never the held-out
documents. Validation: {recipe['validation_blocks']} fixed masked blocks of held-out documents, every
{recipe['eval_every']} steps. Legs (resumable, at most 45 minutes each, on 2 CPU cores):
{legs}

Validation loss (masked-word cross-entropy, nats) per twin:

{curves_table(history, schemes)}

{loss_sentence(final)} At this budget ({recipe['steps']} steps of {recipe['batch']} blocks, about
{recipe['steps'] * recipe['batch'] * recipe['length'] / 1e6:.1f} M WordPieces) a twin whose final loss is near the
no-position twin's has not yet learned to use word order: compare the twins as encoders trained equally and briefly,
not as converged models. The same command retrains any twin larger and longer on a GPU:
`bertviz-lab train-twins --out runs/twins-base --hidden 768 --layers 12 --heads 12 --ffn 3072 --device cuda --export
runs/twins-base/export` (then `BERTVIZ_LAB_TWINS=runs/twins-base/export`).

## Held-out measures (`benchmarks/bench_twins.py`; 95 % intervals)

{measures_table(measures)}

Top-1 is masked-word accuracy on held-out running text packed as in training, at 1x, 2x and 4x the training length
(a learned table of {recipe['length']} rows cannot reach a longer input and says so); the shuffle column is the change
in masked-word loss when the unmasked words of each block are shuffled; the syntax columns score every head against
UD English EWT's test split (evaluation only) as Clark et al. (2019) do, the best head chosen on one half of the
sentences and reported on the other, beside the best head of random-weight copies, and the attention tree's UUAS.

## Size and licences
{len(sizes)} files, {total / 1e6:.1f} MB together (float16 weights without the shared words), plus `twins.json`.
Code: MIT. The shared words and tokenizer: all-MiniLM-L6-v2 (Apache 2.0). The training text keeps its sources'
licences (`assets/minilm-mlm/LICENSE-*`): UD English EWT CC BY-SA 4.0; UD English GUM and LinES CC BY-NC-SA 4.0;
the Brown Corpus for non-commercial use. Because some of the text is for non-commercial use only, treat these weights
as for non-commercial (teaching and research) use.
"""


def write_twin_card(folder: Path) -> Path:
    """``MODEL_CARD.md`` of a twins folder, from its ``twins.json``, ``measures.json`` and ``init_pilot.json``."""
    import json

    record = json.loads((folder / "twins.json").read_text(encoding="utf-8"))
    measures_file = folder / "measures.json"
    measures = json.loads(measures_file.read_text(encoding="utf-8")) if measures_file.is_file() else {}
    pilot_file = folder / "init_pilot.json"
    pilot = json.loads(pilot_file.read_text(encoding="utf-8")) if pilot_file.is_file() else None
    sizes = {p.name: p.stat().st_size for p in sorted(folder.glob("twin-*.safetensors"))}
    out = folder / "MODEL_CARD.md"
    out.write_text(twin_card(record, measures, sizes, pilot), encoding="utf-8")
    return out
