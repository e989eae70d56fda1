"""What every benchmark records about where it ran: the machine, its load, peak memory."""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path
from typing import Any


def machine_info() -> dict[str, Any]:
    """Cores available to this process, CPU model, RAM (GB), GPU name (None without CUDA)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import psutil

        ram = psutil.virtual_memory().total / 2**30
    except ImportError:  # pragma: no cover
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cores": cores,
        "cpu": cpu,
        "ram_gb": round(ram, 1),
        "gpu": _gpu_name(),
        "python": platform.python_version(),
    }


def _gpu_name() -> str | None:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def peak_rss_gb() -> float:
    """Peak resident memory in GB: this process plus its largest finished child process."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round((own + kids) / 2**20, 3)  # ru_maxrss is KiB on Linux
