"""Norm-based attention and flow, measured; and Kobayashi et al.'s headline finding reproduced.

1. Cost: ``analyze`` with softmax attention vs with per-head norms (and norm-residual) computed
   in the same forward pass, embedded model, CPU, 128 tokens (target: norm <= 1.5x).
2. Attention flow for 6 layers by input length, ours (SciPy max-flow) vs the released code's way
   (networkx, one max-flow per pair) on the same matrices (target: <= 2 s at 32 tokens).
3. Share of each layer's weight on [CLS], [SEP] and punctuation, softmax weights vs norms, mean
   over the sentences of a treebank (sample, or ``--conllu FILE``); writes a figure with
   ``--figure docs/norms.png`` (rendered in Debian Chromium).

    python benchmarks/bench_norms.py [--conllu en_ewt-ud-dev.conllu] [--figure docs/norms.png]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from common import interleaved_medians
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.bert.sources.captured import MIXING_CAPTURES, Captured
from bertviz_lab.bert.sources.flow import attention_flow, residual_augmented
from bertviz_lab.bert.sources.source_registry import get_source
from bertviz_lab.naming import is_punctuation
from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu


def cost(lab) -> None:
    text = " ".join(["word"] * 126)
    times = interleaved_medians({s: (lambda s=s: lab.analyze(text, source=s))
                                 for s in ("attention", "norm", "norm-residual")}, repeat=20)
    base = times["attention"]
    print(f"analyze at 128 tokens: attention {base * 1e3:.1f} ms, norm {times['norm'] * 1e3:.1f} ms "
          f"({times['norm'] / base:.2f}x, target <= 1.5x), norm-residual {times['norm-residual'] * 1e3:.1f} ms "
          f"({times['norm-residual'] / base:.2f}x)")


def networkx_flow(layers: np.ndarray) -> np.ndarray:
    import networkx as nx

    a = residual_augmented(layers)
    n = a.shape[-1]
    graph = nx.DiGraph()
    for layer in range(a.shape[0]):
        for i in range(n):
            for j in range(n):
                graph.add_edge((layer + 1, i), (layer, j), capacity=a[layer, i, j])
    top = a.shape[0]
    return np.array([[nx.maximum_flow_value(graph, (top, i), (0, j)) for j in range(n)] for i in range(n)])


def flow_curve() -> None:
    rng = np.random.default_rng(0)
    for n in (8, 16, 24, 32, 40, 48):
        layers = rng.random((6, n, n))
        start = time.perf_counter()
        attention_flow(layers)
        ours = time.perf_counter() - start
        line = f"flow, 6 layers, {n:>2} tokens: {ours:6.2f} s"
        if n <= 16:
            start = time.perf_counter()
            networkx_flow(layers)
            peer = time.perf_counter() - start
            line += f"   networkx (the released code's way) {peer:6.2f} s, ratio {peer / ours:.0f}x"
        print(line)


def sink_shares(lab, path) -> dict[str, np.ndarray]:
    """(layers, 3) mean share of each layer's weight on [CLS], [SEP], punctuation, per source."""
    sums = {s: 0.0 for s in ("attention", "norm")}
    sentences = read_conllu(path)
    for sentence in sentences:
        enc = lab.encode_words(sentence.words)
        _, cache = lab.run(lab.batch_tensors([enc]), capture=MIXING_CAPTURES, compute_mlm=False)
        groups = [np.array([t == "[CLS]" for t in enc.tokens]), np.array([t == "[SEP]" for t in enc.tokens]),
                  np.array([is_punctuation(t) and t not in ("[CLS]", "[SEP]") for t in enc.tokens])]
        for source in sums:
            w = get_source(source).weights(Captured(lab.model, cache, 0, len(enc.ids))).sum(1)  # (layers, q, k) over heads
            w = w / w.sum(-1, keepdims=True)  # each query's weight as shares
            sums[source] = sums[source] + np.stack([w[..., g].sum(-1).mean(-1) for g in groups], -1)
    return {s: v / len(sentences) for s, v in sums.items()}


def figure(shares: dict[str, np.ndarray], path: str, title: str) -> None:
    import plotly.graph_objects as go
    from playwright.sync_api import sync_playwright

    fig = go.Figure()
    layers = [f"L{i + 1}" for i in range(shares["attention"].shape[0])]
    for k, (name, dash) in enumerate((("[CLS]", "solid"), ("[SEP]", "dash"), ("punctuation", "dot"))):
        for source, colour in (("attention", "#2b6cb0"), ("norm", "#c05621")):
            fig.add_scatter(x=layers, y=shares[source][:, k], name=f"{name}, {source}", mode="lines+markers",
                            line={"color": colour, "dash": dash})
    fig.update_layout(title=title, yaxis_title="share of the layer's weight", width=900, height=450,
                      template="plotly_white")
    html = fig.to_html(include_plotlyjs=True, full_html=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 920, "height": 470})
        page.set_content(html)
        page.wait_for_selector(".main-svg")
        page.screenshot(path=path)
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conllu", default=None)
    parser.add_argument("--figure", default=None)
    args = parser.parse_args()
    lab = load("minilm-original", device="cpu")
    cost(lab)
    flow_curve()
    path = args.conllu or SAMPLE_TREEBANK
    shares = sink_shares(lab, path)
    print(f"share of each layer's weight ({path}): layer | [CLS] attention / norm | [SEP] attention / norm | "
          "punctuation attention / norm")
    for layer in range(shares["attention"].shape[0]):
        a, n = shares["attention"][layer], shares["norm"][layer]
        print(f"| {layer + 1} | {a[0]:.3f} / {n[0]:.3f} | {a[1]:.3f} / {n[1]:.3f} | {a[2]:.3f} / {n[2]:.3f} |")
    if args.figure:
        figure(shares, args.figure, f"Weight on [CLS], [SEP] and punctuation per layer: softmax weights vs norms "
                                    f"(MiniLM, {len(read_conllu(path))} sentences)")
        print("figure:", args.figure)


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("norms", "Norm-based attention and flow, and Kobayashi et al.'s finding", __doc__, _entry)
