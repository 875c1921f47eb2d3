"""The shipped SST-2 classifier (``sst2``: the embedded MiniLM-L6 with its top layers, pooler and a
two-class head fine-tuned on SST-2's train split by scripts/train_sst2.py), measured twice:

1. accuracy on SST-2's validation split (GLUE's 872 sentences; ``--data DIR`` with ``dev.tsv``), float16
   weights as shipped, with a Wilson interval;
2. Edin et al.'s naopc-sst2 protocol (``bertviz-lab faithfulness --protocol naopc-sst2``, see
   bertviz_lab/interventions/naopc.py) on their 66 short sentences (assets/naopc/sst2_short.csv), every
   ranking with 95 % bootstrap intervals over sentences, raw and normalised by each sentence's exact bounds.

Their published means for bert-base-uncased-SST-2 on the same 66 sentences
(github.com/JoakimEdin/naopc @ 0976aa3, results/aopc_scores_short/sst2_bert-base-uncased-SST-2.csv,
averaged over every sentence) are printed beside ours: same protocol and sentences, a different
(smaller) model, and for gradient x input and IG a different variant (theirs: L2 norm over the
embedding, IG from [MASK]; ours: signed sums, IG from [PAD]), so the comparison is of orders and
magnitudes, not a replication of their model's numbers.

    python benchmarks/naopc_sst2.py --data DIR [--write]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from sections import markdown_table, run_recorded

from bertviz_lab import load
from bertviz_lab.interventions.naopc import naopc, read_labelled
from bertviz_lab.mlm.evaluate import wilson_interval
from bertviz_lab.resources import NAOPC_SHORT_SET
from bertviz_lab.sentiment.data import read_sst2

# theirs -> (our ranking, comprehensiveness, sufficiency): means over the 66 sentences of their CSV
PUBLISHED = {"decompx": ("decompx", 0.339, -0.007), "attention": ("attention (last layer)", 0.165, 0.110),
             "occlusion_1": ("erasure", 0.271, 0.031), "gradient_x_input": ("gradient x input", 0.192, 0.061),
             "integrated_gradient": ("integrated gradients", 0.214, 0.049), "random_baseline": ("random", 0.122, 0.138)}


def validation_accuracy(lab, path: Path) -> str:
    data = read_sst2(path)
    right = 0
    for start in range(0, len(data.sentences), 64):
        batch = [lab.encode(sentence, truncate=True) for sentence in data.sentences[start:start + 64]]
        out, _ = lab.run(lab.batch_tensors(batch), capture=(), compute_mlm=False)
        predicted = out.class_logits.argmax(-1).tolist()  # (batch,)
        right += sum(int(p == label) for p, label in zip(predicted, data.labels[start:start + 64]))
    low, high = wilson_interval(right, len(data.labels))
    return (f"validation accuracy: {right / len(data.labels):.3f} [{low:.3f}, {high:.3f}] "
            f"({right} of {len(data.labels)}; {path.name}, sha256 {data.sha256[:12]})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None, help="folder with GLUE SST-2's dev.tsv")
    args = parser.parse_args()
    start = time.perf_counter()
    lab = load("sst2", device="cpu")
    print(f"model: {lab.checkpoint_info().describe()}\n")
    if args.data is not None:
        print(validation_accuracy(lab, args.data / "dev.tsv") + "\n")
    result = naopc(lab, read_labelled(NAOPC_SHORT_SET))
    out = result.to_json()
    rows = [[r["ranking"], f"{r['comprehensiveness']:.3f} [{r['comprehensiveness_ci_low']:.3f}, "
             f"{r['comprehensiveness_ci_high']:.3f}]", f"{r['sufficiency']:.3f} [{r['sufficiency_ci_low']:.3f}, "
             f"{r['sufficiency_ci_high']:.3f}]", f"{r['naopc_comprehensiveness']:.3f} "
             f"[{r['naopc_comprehensiveness_ci_low']:.3f}, {r['naopc_comprehensiveness_ci_high']:.3f}]",
             f"{r['naopc_sufficiency']:.3f} [{r['naopc_sufficiency_ci_low']:.3f}, {r['naopc_sufficiency_ci_high']:.3f}]"]
            for r in sorted(out["rankings"], key=lambda r: -r["comprehensiveness"])]
    n = out["rankings"][0]["n"]
    print(f"naopc-sst2 on {n} sentences (assets/naopc/sst2_short.csv), {out['above_half']} with P(positive) > 0.5; "
          f"mean bounds: upper {out['upper_bound_mean']:.3f}, lower {out['lower_bound_mean']:.3f}\n")
    print(markdown_table(["ranking", "comprehensiveness [95% CI]", "sufficiency [95% CI]", "NAOPC comp. [95% CI]",
                          "NAOPC suff. [95% CI]"], rows))
    ours = {r["ranking"]: r for r in out["rankings"]}
    print("\nbeside the published bert-base-uncased-SST-2 means (same protocol and sentences, different model):\n")
    print(markdown_table(["their method", "our ranking", "comp. theirs", "comp. ours", "suff. theirs", "suff. ours"],
                         [[theirs, name, comp, ours[name]["comprehensiveness"], suff, ours[name]["sufficiency"]]
                          for theirs, (name, comp, suff) in PUBLISHED.items() if name in ours]))
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    run_recorded("naopc-sst2", "The shipped SST-2 classifier: validation accuracy and Edin et al.'s naopc-sst2 table",
                 __doc__, main)
