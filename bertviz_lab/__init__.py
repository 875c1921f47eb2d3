"""bertviz-lab: look inside BERT — attention of every layer and head, masked-word predictions,
and probes of bidirectional context, positional encoding and syntax."""
from .analysis import Analysis, InputError, InputTooLong, Lab, load
from .checkpoints import CheckpointError
from .devices import DeviceError, available_devices, resolve_device
from .model import BertConfig, BertLab

__version__ = "0.1.0"
__all__ = ["Analysis", "BertConfig", "BertLab", "CheckpointError", "DeviceError", "InputError",
           "InputTooLong", "Lab", "available_devices", "load", "resolve_device"]
