"""Pick and validate the device and dtype, so a bad choice fails early with a plain message."""
from __future__ import annotations

import torch

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16,
          "fp16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


class DeviceError(ValueError):
    """The requested device or dtype is not usable on this machine."""


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def available_devices() -> list[str]:
    """Devices present here, in the order `auto` prefers them."""
    found = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    if mps_available():
        found.append("mps")
    found.append("cpu")
    return found


def resolve_device(spec: str | torch.device | None = "auto") -> torch.device:
    """`auto` -> CUDA, then MPS, then CPU; explicit names are checked, not trusted."""
    spec = "auto" if spec is None else str(spec).strip().lower()
    if spec == "auto":
        return torch.device(available_devices()[0])
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise DeviceError(f"unknown device {spec!r}; use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cpu":
        return device
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"device {spec!r} requested but CUDA is not available on this machine "
                              f"(available: {', '.join(available_devices())})")
        index = device.index or 0
        if index >= torch.cuda.device_count():
            raise DeviceError(f"device {spec!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist")
        return torch.device("cuda", index)
    if device.type == "mps":
        if not mps_available():
            raise DeviceError(f"device 'mps' requested but MPS is not available "
                              f"(available: {', '.join(available_devices())})")
        return device
    raise DeviceError(f"unsupported device {spec!r}; use auto, cpu, cuda, cuda:N or mps")


def resolve_dtype(spec: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """fp32 by default; half precisions only where the hardware does them well."""
    if spec is None:
        return torch.float32
    if isinstance(spec, torch.dtype):
        dtype = spec
    else:
        try:
            dtype = DTYPES[str(spec).lower()]
        except KeyError:
            raise DeviceError(f"unknown dtype {spec!r}; use one of float32, float16, bfloat16") from None
    if dtype != torch.float32 and device.type == "cpu":
        raise DeviceError(f"{dtype} is only supported on GPU devices; use float32 on the CPU")
    return dtype
