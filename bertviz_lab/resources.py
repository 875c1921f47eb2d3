"""Where the shipped files are: ``bertviz_lab/assets`` inside an installed wheel (the build maps
the repository's top-level ``assets/`` there), the top-level ``assets/`` in a source checkout."""
from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def assets_dir() -> Path:
    for candidate in (_PACKAGE / "assets", _PACKAGE.parent / "assets"):
        if (candidate / "sample_treebank.conllu").is_file():
            return candidate
    raise FileNotFoundError("bertviz-lab's assets are missing: reinstall the package (pip install .)")


def user_cache_dir() -> Path:
    """bertviz-lab's own cache (files rebuilt from installed packages, never shipped): $BERTVIZ_LAB_CACHE,
    else $XDG_CACHE_HOME/bertviz-lab, else ~/.cache/bertviz-lab. Not created here."""
    if os.environ.get("BERTVIZ_LAB_CACHE"):
        return Path(os.environ["BERTVIZ_LAB_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "bertviz-lab"


ASSETS = assets_dir()
SAMPLE_TREEBANK = ASSETS / "sample_treebank.conllu"
DEFAULT_MLM_HEAD = ASSETS / "minilm-mlm"
SST2_CLASSIFIER = ASSETS / "minilm-sst2"  # the sentiment classifier trained by scripts/train_sst2.py
NAOPC_SHORT_SET = ASSETS / "naopc" / "sst2_short.csv"  # Edin et al.'s 66 short SST-2 sentences (evaluation only)
SHIPPED_PROBES = ASSETS / "probes"  # structural probes trained by bertviz-lab, one file per weights
STATIC = _PACKAGE / "app" / "static"
