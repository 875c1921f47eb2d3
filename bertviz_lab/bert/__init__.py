"""The encoder and everything needed to run it: the model (one file), hook points and the
per-run hook context, checkpoint finding and strict loading, devices and dtypes."""
from .encoder.hooks import Edit
from .encoder.model import BertConfig, BertForwardOutput, BertLab, layer_hook
from .loading.checkpoints import (
                          DEFAULT_CHECKPOINT,
                          ORIGINAL_CHECKPOINT,
                          CheckpointError,
                          LoadedCheckpoint,
                          load_model,
)
from .runtime.budget import Budget, BudgetExceeded, spending
from .runtime.devices import DeviceError, available_devices, resolve_device, resolve_dtype

__all__ = ["DEFAULT_CHECKPOINT", "ORIGINAL_CHECKPOINT",
           "BertConfig", "Budget", "BudgetExceeded", "BertForwardOutput", "BertLab", "CheckpointError",
           "DeviceError", "Edit", "LoadedCheckpoint", "available_devices", "layer_hook", "load_model",
           "resolve_device", "resolve_dtype", "spending"]
