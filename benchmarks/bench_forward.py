"""Forward pass with all attention captured: bertviz-lab vs transformers BertModel (eager,
output_attentions=True), on the packaged MiniLM-L6-H384 weights, same inputs, same run.

    python benchmarks/bench_forward.py
"""
from __future__ import annotations

import subprocess
import sys

import torch
from common import interleaved_medians, peak_rss_increase_mib
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.bert.loading.checkpoints import packaged_default_folder


def main() -> None:
    from transformers import BertModel

    torch.manual_seed(0)
    lab = load(  # load() also keeps freed buffers in the heap (bertviz_lab/allocator.py)
        "default", device="cpu", mlm_head=None)
    hf = BertModel.from_pretrained(str(packaged_default_folder()), attn_implementation="eager").eval()
    model = lab.model
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, model MiniLM-L6-H384 (6x12)")
    print(f"{'tokens':>6} {'ours+capture ms':>16} {'ours no-capture ms':>19} {'hf eager+attn ms':>17} "
          f"{'ours/hf':>8} {'capture/plain':>14}")
    ok = True
    for length in (16, 128, 512):
        ids = torch.randint(1000, 30000, (1, length))
        ids[0, 0], ids[0, -1] = 101, 102

        def ours_capture(ids=ids):
            with torch.inference_mode(), model.hooks(capture=["*hook_pattern"]) as run:
                model(input_ids=ids)
            return run.cache

        def ours_plain(ids=ids):
            with torch.inference_mode():
                return model(input_ids=ids)

        def hf_eager(ids=ids):
            with torch.inference_mode():
                return hf(input_ids=ids, output_attentions=True)

        repeat = 60 if length <= 128 else 15
        t = interleaved_medians({"ours": ours_capture, "plain": ours_plain, "hf": hf_eager}, repeat=repeat)
        ratio, overhead = t["ours"] / t["hf"], t["ours"] / t["plain"]
        ok &= ratio <= 1.0 and overhead <= 1.3
        print(f"{length:>6} {t['ours'] * 1e3:>16.2f} {t['plain'] * 1e3:>19.2f} {t['hf'] * 1e3:>17.2f} "
              f"{ratio:>8.2f} {overhead:>14.2f}")
    ours_mem, hf_mem = (float(subprocess.run([sys.executable, __file__, "--memory", side], capture_output=True,
                                             text=True, check=True).stdout.split()[-1]) for side in ("ours", "hf"))
    print(f"peak memory added at 512 tokens: ours {ours_mem:.1f} MiB, transformers {hf_mem:.1f} MiB")
    print("targets (ours/hf <= 1.0, capture/plain <= 1.3):", "met" if ok else "NOT met")


def _keep(model, ids):
    with torch.inference_mode(), model.hooks(capture=["*hook_pattern"]) as run:
        model(input_ids=ids)
    return len(run.cache)


def _keep_hf(hf, ids):
    with torch.inference_mode():
        return len(hf(input_ids=ids, output_attentions=True).attentions)


def memory(side: str) -> None:
    """Peak RSS added by one 512-token forward with attention, in a fresh process."""
    ids = torch.randint(1000, 30000, (1, 512))
    if side == "ours":
        from bertviz_lab.bert.loading.checkpoints import load_model

        model, _, _ = load_model("default", device="cpu", mlm_head=None)
        print(peak_rss_increase_mib(lambda: _keep(model, ids)))
    else:
        from transformers import BertModel

        hf = BertModel.from_pretrained(str(packaged_default_folder()), attn_implementation="eager").eval()
        print(peak_rss_increase_mib(lambda: _keep_hf(hf, ids)))


def _entry() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--memory":
        memory(sys.argv[2])
    else:
        main()


if __name__ == "__main__":
    run_recorded("forward", "Forward pass with all attention captured, next to transformers", __doc__, _entry)
