"""Concurrent explanations and Runs, each reply against the same request made alone (issue 56).

On the embedded default (real weights, with its masked-word head), ``--threads`` threads make ``--rounds`` x
(8 explanations + 8 Runs) requests at once, in a shuffled order; every reply is compared with the same request
made alone: an explanation byte for byte (every score, rho and faithfulness figure), a Run by its tokens and
predictions exactly and its attention within 1e-5 (a Run may share a batch with others of its length, whose rows
differ from a pass of their own in float rounding only: bert/runtime/batching.py). The same run is made with the
gradients as Captum's layer methods compute them (module hooks on the shared embedding layer, as before issue 56)
beside the hook-free way the lab uses now. Also the time of one explanation alone, each way.

    python benchmarks/bench_isolation.py [--threads 16] [--rounds 15] [--write]
"""
from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.interventions import attribution
from bertviz_lab.naming import SPECIAL_TOKENS

WORDS = ["cat", "dog", "bird", "man", "woman", "child", "king", "horse"]
SENTENCES = [f"the {w} sat on the [MASK] {'near the big red door ' * (i % 3)}today" for i, w in enumerate(WORDS)]
HOOK_FREE = attribution.captum_scores


def layer_hooks(lab, analysis, forward, context, steps=attribution.IG_STEPS):
    """Captum's LayerGradientXActivation / LayerIntegratedGradients on bert.embeddings: hooks on the shared model."""
    from captum.attr import LayerGradientXActivation, LayerIntegratedGradients

    tensors = lab.batch_tensors([analysis.encoded()])
    ids, segments, mask = tensors["input_ids"], tensors["token_type_ids"], tensors["attention_mask"]
    baseline = ids.clone()
    baseline[0, torch.tensor([t not in SPECIAL_TOKENS and i != lab.mask_id
                              for t, i in zip(analysis.tokens, analysis.token_ids)])] = lab.pad_id
    layer = lab.model.bert.embeddings
    with torch.enable_grad():
        gxi = LayerGradientXActivation(forward, layer).attribute(ids, additional_forward_args=(segments, mask))
        ig = LayerIntegratedGradients(forward, layer).attribute(
            ids, baselines=baseline, additional_forward_args=(segments, mask), n_steps=steps, internal_batch_size=steps)
    return {"gradient x input": gxi[0].sum(-1).detach().numpy()[list(context)],
            "integrated gradients": ig[0].sum(-1).detach().numpy()[list(context)]}


def explanation(lab, text: str) -> str:
    [first] = attribution.explain(lab, lab.analyze(text))
    return repr(first.to_json())


def same_run(a, b) -> bool:
    return a.tokens == b.tokens and [[p.token for p in m.predictions] for m in a.mlm] == \
        [[p.token for p in m.predictions] for m in b.mlm] and a.attention.shape == b.attention.shape and \
        bool(np.allclose(a.attention, b.attention, rtol=0, atol=1e-5))


def concurrent(lab, threads: int, rounds: int) -> dict:
    alone_explained = {t: explanation(lab, t) for t in SENTENCES}
    alone_run = {t: lab.analyze(t) for t in SENTENCES}
    jobs = [(kind, t) for t in SENTENCES for kind in ("explain", "run")] * rounds
    order = np.random.default_rng(0).permutation(len(jobs))

    def do(job):
        kind, text = job
        try:
            if kind == "explain":
                return kind, explanation(lab, text) == alone_explained[text]
            return kind, same_run(lab.analyze(text), alone_run[text])
        except Exception:  # another request's rows in this one's pass: a failed reply
            return kind, None

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        replies = list(pool.map(do, [jobs[i] for i in order]))
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "n": len(replies)}
    for kind in ("explain", "run"):
        mine = [ok for k, ok in replies if k == kind]
        out[kind] = (sum(ok is True for ok in mine), sum(ok is False for ok in mine), sum(ok is None for ok in mine))
    return out


def alone_seconds(lab, repeat: int = 5) -> float:
    explanation(lab, SENTENCES[1])
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        explanation(lab, SENTENCES[1])
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    lab = load("default", device="cpu")
    print(f"{lab.name}; {args.threads} threads, {args.rounds} rounds x (8 explanations + 8 Runs) at once")
    times = {}
    for name, scores in (("hook-free (now)", HOOK_FREE), ("Captum layer hooks (before)", layer_hooks)):
        attribution.captum_scores = scores
        times[name] = alone_seconds(lab)
        r = concurrent(lab, args.threads, args.rounds)
        (e_ok, e_bad, e_err), (r_ok, r_bad, r_err) = r["explain"], r["run"]
        print(f"{name:<28} {r['n']} replies in {r['seconds']:.0f} s: explanations {e_ok} equal to alone, "
              f"{e_bad} different, {e_err} failed; Runs {r_ok} equal, {r_bad} different, {r_err} failed")
    attribution.captum_scores = HOOK_FREE
    now, before = times["hook-free (now)"], times["Captum layer hooks (before)"]
    print(f"one explanation alone (median of 5): hook-free {now:.2f} s, layer hooks {before:.2f} s "
          f"(ratio {now / before:.2f})")


if __name__ == "__main__":
    run_recorded("isolation", "Concurrent explanations and Runs against the same requests alone (issue 56)",
                 __doc__.split("\n\n    python")[0], main)
