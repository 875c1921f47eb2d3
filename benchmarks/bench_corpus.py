"""Corpus-scale views of issue 29 on CPU, in one run: exBERT-style nearest-neighbour search over an
index of >= 20,000 treebank tokens (target <= 100 ms a query, the query's own forward pass
included), numpy next to FAISS's flat inner-product index (what exBERT's released code uses), and
the query-key space of one head over 200 sentences (target <= 3 s, forward passes included).

exBERT itself runs as a server with a corpus prepared offline (HDF5 + FAISS files per model); its
search step is FAISS ``IndexFlatIP.search``, which is the "faiss" column here.

    python benchmarks/bench_corpus.py [--conllu data/ud/en_ewt-ud-dev.conllu] [--queries 50] [--write]
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.attention.qk_space import joint_embedding
from bertviz_lab.lens import head_vectors
from bertviz_lab.neighbours import build_index, nearest, query_vector
from bertviz_lab.treebank import read_conllu

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conllu", type=Path, default=ROOT / "data" / "ud" / "en_ewt-ud-dev.conllu")
    parser.add_argument("--tokens", type=int, default=20000, help="index at least this many tokens")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    lab = load("minilm-original", device="cpu")
    sentences = read_conllu(args.conllu)
    count, used = 0, []
    for s in sentences:
        used.append(s)
        count += len(lab.encode_words(s.words).ids) - 2
        if count >= args.tokens:
            break
    start = time.perf_counter()
    index = build_index(lab, used)
    built = time.perf_counter() - start
    print(f"model {index.model}")
    print(f"index: {index.vectors.shape[1]:,} tokens of {len(used):,} sentences of {args.conllu.name}, layers 0-"
          f"{index.layers}, built in {built:.1f} s")
    queries = [(" ".join(s.words), 1 + (i % max(1, len(s.words) - 1))) for i, s in enumerate(sentences[-args.queries:])]
    layer = index.layers
    nearest(index, query_vector(lab, queries[0][0], 1, layer), layer, 10, use_faiss=True)  # builds FAISS's index once
    times: dict[str, list[float]] = {"numpy": [], "faiss": [], "forward": []}
    for text, position in queries:
        t0 = time.perf_counter()
        q = query_vector(lab, text, min(position, len(lab.encode(text).ids) - 2), layer)
        times["forward"].append(time.perf_counter() - t0)
        for engine in ("numpy", "faiss"):
            t0 = time.perf_counter()
            nearest(index, q, layer, 10, use_faiss=engine == "faiss")
            times[engine].append(time.perf_counter() - t0)
    forward = statistics.median(times["forward"]) * 1000
    numpy_ms, faiss_ms = (statistics.median(times[e]) * 1000 for e in ("numpy", "faiss"))
    print(f"one query, {args.queries} queries' median: the query's forward pass {forward:.1f} ms; search "
          f"numpy {numpy_ms:.2f} ms, faiss {faiss_ms:.2f} ms (numpy / faiss {numpy_ms / faiss_ms:.2f}x); "
          f"click to neighbours {forward + min(numpy_ms, faiss_ms):.1f} ms (target <= 100 ms)")
    texts = [" ".join(s.words) for s in sentences[:200]]
    start = time.perf_counter()
    queries_, keys, points = head_vectors(lab, texts, 2, 8)
    joint_embedding(queries_, keys, "pca")
    qk = time.perf_counter() - start
    print(f"query-key space of head 3-9 over {len(texts)} sentences ({len(points):,} queries and keys, PCA): "
          f"{qk:.2f} s (target <= 3 s)")


if __name__ == "__main__":
    run_recorded("corpus", "Corpus search (exBERT) and the query-key space over sentence sets", __doc__, main)
