"""Ship the distance probes of a structural-probe run for the app (assets/probes/<sha256[:12]>.safetensors).

Usage: python scripts/ship_probes.py RUN/probes.safetensors [--layers 1-6] [--control]

Keeps the model's distance probes of the given layers (float16, as saved) and the run's metadata
(the weights' SHA-256, the train treebank, each probe's curve), so the file stays within the 2 MB the
issue allows: 6 layers x 384 x 384 x 2 bytes = 1.77 MB for MiniLM-L6. With --control, the control task's
distance probes instead (Hewitt & Liang 2019, trained the same way on the same word vectors), as
<sha256[:12]>-control.safetensors beside them: the app and the CLI then print selectivity beside the shipped
probes' scores.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import load_file, save_file

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "probes"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(argv[0])
    low, high = (int(v) for v in (argv[argv.index("--layers") + 1] if "--layers" in argv else "1-6").split("-"))
    kind = "control" if "--control" in argv else "model"
    keep = {f"{kind}/distance/layer{layer}" for layer in range(low, high + 1)}
    with safe_open(str(source), "pt") as handle:
        meta = dict(handle.metadata() or {})
    tensors = {k: v for k, v in load_file(str(source)).items() if k in keep}
    meta["probes"] = json.dumps({k: v for k, v in json.loads(meta.get("probes", "{}")).items() if k in keep})
    ASSETS.mkdir(parents=True, exist_ok=True)
    out = ASSETS / f"{meta['model_sha256'][:12]}{'-control' if kind == 'control' else ''}.safetensors"
    save_file(tensors, str(out), metadata=meta)
    print(f"{out}: {len(tensors)} probes, {out.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
