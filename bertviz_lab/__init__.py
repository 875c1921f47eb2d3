"""bertviz-lab: look inside BERT — attention of every layer and head, masked-word predictions,
interventions on bidirectional context and positional encoding, and syntax scoring of heads."""
from .bert import BertConfig, BertLab, CheckpointError, DeviceError, available_devices, resolve_device
from .lab import Analysis, InputError, InputTooLong, Lab, load

__version__ = "0.1.0"
__all__ = ["Analysis", "BertConfig", "BertLab", "CheckpointError", "DeviceError", "InputError",
           "InputTooLong", "Lab", "available_devices", "figure", "head_similarity", "head_view", "load", "model_view",
           "qk_space", "resolve_device", "show", "structural_probe"]


def __getattr__(name: str):
    """``figure``, ``head_view``, ``model_view``, ``show``, ``qk_space`` and ``head_similarity`` (the notebook layer) load on first use,
    so scripts and Ray workers that never draw do not import them."""
    if name in ("figure", "head_view", "model_view", "show", "qk_space", "head_similarity", "structural_probe"):
        from . import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'bertviz_lab' has no attribute {name!r}")
