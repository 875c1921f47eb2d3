"""Issue 31 in one run, on CPU: structural probes (Hewitt & Manning 2019) on every layer of the published
MiniLM (minilm-original), trained on UD English EWT *train* (stopping on a seeded 10% of it) and reported
on EWT dev beside trees of each layer's best head and best head ensemble and right-branching, with 95%
intervals; how long the distance probes of all layers take to train (target <= 10 min), with the curve;
and, side by side, the released code (github.com/john-hewitt/structural-probes, Apache-2.0:
``TwoWordPSDProbe``, ``L1DistanceLoss``, ``ProbeRegimen``, and ``reporter.prims_matrix_to_edges`` for
UUAS) on the same word vectors, initialisation and batches for one layer: its time and the figures it
reaches next to ours.

    python benchmarks/bench_structure.py [--train data/ud/en_ewt-ud-train.conllu] [--treebank data/ud/en_ewt-ud-dev.conllu]
        [--peer /work/.mirror/john-hewitt+structural-probes/repo] [--out results/structure-ewt] [--write]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.lab import null_model
from bertviz_lab.reports.structure_report import write_structure
from bertviz_lab.syntax import structural_probe as sp
from bertviz_lab.syntax.ensembles import relations_of
from bertviz_lab.syntax.structure import StructureSettings, StructureTreebanks, run_structure, stop_split
from bertviz_lab.syntax.trees import punctuation, tree_distances
from bertviz_lab.treebank import read_conllu

ROOT = Path(__file__).resolve().parent.parent
PEER = Path("/work/.mirror/john-hewitt+structural-probes/repo")


def timed(what: str, fn):
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    print(f"{what}: {seconds:.1f} s")
    return out, seconds


def peer_modules(repo: Path, folder: Path):
    """Their probe, loss and regimen modules as released, and reporter's MST (the rest of reporter.py
    needs matplotlib and seaborn, which draw figures we do not use)."""
    for name in ("probe", "loss", "regimen"):
        text = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:structural-probes/{name}.py"],
                              capture_output=True, text=True, check=True).stdout
        (folder / f"{name}.py").write_text(text)
    reporter = subprocess.run(["git", "-C", str(repo), "show", "HEAD:structural-probes/reporter.py"],
                              capture_output=True, text=True, check=True).stdout
    mst = reporter[reporter.index("class UnionFind"):reporter.index("def get_nopunct_argmin")]
    (folder / "peer_mst.py").write_text("import numpy as np\n\n" + mst)
    sys.path.insert(0, str(folder))
    import loss
    import peer_mst
    import probe
    import regimen
    return probe, loss, regimen, peer_mst


class EpochBatches:
    """Their DataLoader's role: (features, labels padded -1, lengths, observations) per batch, in our
    order for each epoch (a new permutation every time it is iterated, as shuffle=True)."""

    def __init__(self, data: sp.ProbeData, layer: int, seed: int | None) -> None:
        self.data, self.layer, self.rng = sp.Batches(data, "distance"), layer, \
            (np.random.default_rng(seed) if seed is not None else None)

    def __iter__(self):
        order = self.rng.permutation(len(self.data)) if self.rng is not None else np.arange(len(self.data))
        for start in range(0, len(order), sp.BATCH):
            rows = list(order[start:start + sp.BATCH])
            words, (which, where, b, n), gold, lengths = self.data.batch(rows, [self.layer])
            padded = torch.zeros(b, n, words.shape[-1])
            padded[which, where] = words[0]
            yield padded, gold, lengths, [None] * b


def peer_run(repo: Path, train: sp.ProbeData, stop: sp.ProbeData, dev: sp.ProbeData, layer: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        probe_mod, loss_mod, regimen_mod, peer_mst = peer_modules(repo, Path(folder))
        hidden = train.features[0].shape[-1]
        args = {"model": {"hidden_dim": hidden}, "probe": {"maximum_rank": hidden, "params_path": "predictor.params"},
                "probe_training": {"epochs": sp.EPOCHS}, "reporting": {"root": folder}, "device": "cpu"}
        probe = probe_mod.TwoWordPSDProbe(args)
        with torch.no_grad():  # our initialisation of this layer (train_probes draws it first for one layer)
            probe.proj.copy_(torch.empty(hidden, hidden).uniform_(-sp.INIT_RANGE, sp.INIT_RANGE,
                                                                  generator=torch.Generator().manual_seed(seed)))
        reg = regimen_mod.ProbeRegimen(args)
        _, seconds = timed(f"released code, layer {layer}", lambda: reg.train_until_convergence(
            probe, lambda batch: batch, loss_mod.L1DistanceLoss(args), EpochBatches(train, layer, seed),
            EpochBatches(stop, layer, None)))
        probe.load_state_dict(torch.load(Path(folder) / "predictor.params"))
        probe.eval()
        trained = sp.TrainedProbe("distance", layer, probe.proj.detach().numpy(), 0, 0, 0.0)
        predictions = sp.predict(trained, dev)
        correct = total = 0
        for predicted, sentence in zip(predictions, dev.sentences):  # their MST on their punctuation tags
            tags = ["." if p else "NN" for p in punctuation(sentence)]
            gold = peer_mst.prims_matrix_to_edges(tree_distances(sentence.heads), sentence.words, tags)
            pred = peer_mst.prims_matrix_to_edges(predicted, sentence.words, tags)
            correct += len({tuple(sorted(e)) for e in gold} & {tuple(sorted(e)) for e in pred})
            total += len(gold)
        ours_metric = sp.sentence_metrics("distance", predictions, dev.sentences).figures()
        return {"seconds": seconds, "uuas_their_mst": correct / total, "uuas_our_mst": float(ours_metric["uuas"][0]),
                "spearman": float(ours_metric["spearman"][0]), "proj": trained.proj}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=Path, default=ROOT / "data" / "ud" / "en_ewt-ud-train.conllu")
    parser.add_argument("--treebank", type=Path, default=ROOT / "data" / "ud" / "en_ewt-ud-dev.conllu")
    parser.add_argument("--peer", type=Path, default=PEER)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "structure-ewt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-train", type=int, default=None, help="first N train sentences (a quick check)")
    parser.add_argument("--max-sentences", type=int, default=None, help="first N sentences reported on")
    parser.add_argument("--peer-train", type=int, default=3000,
                        help="train sentences for the side-by-side run of one layer (both implementations)")
    args = parser.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")
    lab = load("minilm-original", device="cpu")
    print(f"model {lab.checkpoint_info().describe()}")
    sentences = read_conllu(args.train)[:args.max_train]
    evaluate = read_conllu(args.treebank)[:args.max_sentences]
    train, stop = stop_split(sentences, 0.1, args.seed)
    print(f"train {args.train.name}: {len(train)} sentences to train on, {len(stop)} to stop on; "
          f"reported on {args.treebank.name}: {len(evaluate)} sentences")
    (train_data, stop_data), feature_s = timed("word vectors of every layer (train + stop)", lambda: (
        sp.word_features(lab, train), sp.word_features(lab, stop)))
    layers = range(lab.n_layers + 1)
    probes, distance_s = {}, {}
    probes["model/distance"], distance_s = timed("distance probes, all 7 layers (0 = embeddings)", lambda: sp.train_probes(
        train_data, stop_data, layers, "distance", sp.ProbeTraining(seed=args.seed)))
    print(f"target: distance probes of all layers <= 10 min: {distance_s / 60:.1f} min "
          f"(+ {feature_s / 60:.1f} min of forward passes)")
    for layer, p in probes["model/distance"].items():
        print(f"  layer {layer}: {p.epochs} epochs, best {p.best_epoch}, stopping loss by epoch "
              + " ".join(f"{stop_loss:.3f}" for _, stop_loss in p.curve))
    probes["model/depth"], _ = timed("depth probes, all layers", lambda: sp.train_probes(
        train_data, stop_data, layers, "depth", sp.ProbeTraining(seed=args.seed)))
    null = null_model(lab, args.seed)
    null_train, null_stop = sp.word_features(null, train), sp.word_features(null, stop)
    probes["null/distance"], _ = timed("distance probes on random weights, all layers", lambda: sp.train_probes(
        null_train, null_stop, layers, "distance", sp.ProbeTraining(seed=args.seed)))
    result, _ = timed("scoring probes, attention trees and ensembles on the treebank", lambda: run_structure(
        lab, StructureTreebanks(evaluate, names=(args.train.name, args.treebank.name)), StructureSettings(seed=args.seed),
        trained=probes, relations=relations_of(evaluate, 50)))
    result.train_treebank = args.train.name
    files = write_structure(result, args.out, title=f"Syntax in {lab.checkpoint_info().name}: {args.treebank.name}")
    print(f"wrote {', '.join(sorted(p.name for p in files.values()))} to {args.out}")
    t = result.probe_table
    print("\nprobes on every evaluated sentence (95% intervals):")
    for row in t.itertuples():
        if row.kind == "distance":
            print(f"  {row.model:16s} distance layer {row.layer if row.layer == row.layer else '-'}: UUAS {row.uuas:.3f} "
                  f"[{row.uuas_ci_low:.3f}, {row.uuas_ci_high:.3f}], Spearman {row.spearman:.3f} "
                  f"[{row.spearman_ci_low:.3f}, {row.spearman_ci_high:.3f}]")
        else:
            print(f"  {row.model:16s} depth    layer {row.layer if row.layer == row.layer else '-'}: root "
                  f"{row.root_accuracy:.3f} [{row.root_accuracy_ci_low:.3f}, {row.root_accuracy_ci_high:.3f}], "
                  f"norm Spearman {row.spearman:.3f} [{row.spearman_ci_low:.3f}, {row.spearman_ci_high:.3f}]")
    print(f"\ncomparison on the {result.sentences['report']} held-out sentences (UUAS, 95% intervals):")
    for row in result.comparison.itertuples():
        print(f"  layer {row.layer}: {row.method:34s} {row.uuas:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}] {row.heads}")
    for line in result.conclusions:
        print(f"- {line}")
    e = result.ensembles
    print("\nhead ensembles per relation (held out):")
    for row in e.itertuples():
        print(f"  {row.relation:10s} ensemble {row.ensemble_heads} ({row.ensemble_direction}) {row.ensemble_accuracy:.3f} "
              f"vs head {row.single_head} {row.single_accuracy:.3f}: gain {row.ensemble_gain:+.3f} "
              f"[{row.ensemble_gain_ci_low:+.3f}, {row.ensemble_gain_ci_high:+.3f}] (n={row.ensemble_arcs})")
    if args.peer.exists():
        best = max(probes["model/distance"].values(), key=lambda p: -p.stop_loss).layer
        dev = sp.word_features(lab, evaluate)
        few = sp.ProbeData(train_data.features[:args.peer_train], train_data.sentences[:args.peer_train],
                           train_data.indices[:args.peer_train])
        ours, ours_s = timed(f"ours, layer {best} alone, {len(few.sentences)} train sentences",
                             lambda: sp.train_probes(few, stop_data, [best], "distance", sp.ProbeTraining(seed=args.seed)))
        mine = sp.sentence_metrics("distance", sp.predict(ours[best], dev), dev.sentences).figures()
        peer = peer_run(args.peer, few, stop_data, dev, best, args.seed)
        gap = np.abs(peer["proj"] - ours[best].proj).max()
        print(f"\nside by side at layer {best} (lowest stopping loss), trained on {len(few.sentences)} sentences, "
              f"reported on all of {args.treebank.name}:\n"
              f"  released code: {peer['seconds']:.1f} s, UUAS {peer['uuas_their_mst']:.4f} with their MST "
              f"({peer['uuas_our_mst']:.4f} with ours), Spearman {peer['spearman']:.4f}\n"
              f"  bertviz-lab:   {ours_s:.1f} s, UUAS {mine['uuas'][0]:.4f}, Spearman {mine['spearman'][0]:.4f}\n"
              f"  time, released / ours (one layer): {peer['seconds'] / ours_s:.2f}x; largest difference between "
              f"the two trained B matrices: {gap:.2e}")


if __name__ == "__main__":
    run_recorded("structure", "Structural probes beside attention trees and head ensembles (issue 31)", __doc__, main)
