"""What the training logs record about the machine: its CPU model, core count and instruction-set flags."""
from __future__ import annotations

import os


def cpuinfo(key: str) -> str:
    """The first `key` line of /proc/cpuinfo ('' where there is none, or no such file)."""
    try:
        with open('/proc/cpuinfo') as f:
            return next((ln.split(':', 1)[1].strip() for ln in f if ln.startswith(key)), '')
    except OSError:
        return ''


def cpu_has(flag: str) -> bool:
    """Whether the CPU lists `flag` (amx_bf16, avx512_bf16, ...)."""
    return flag in cpuinfo('flags').split()


def machine_name() -> str:
    """CPU model and core count, for the model card."""
    return f'{os.cpu_count()}-core {cpuinfo("model name") or "CPU"}'
