"""The server's allocator settings (bert/runtime/allocator.py), in a process of their own: they change the whole process."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt/malloc_trim")

FRAGMENTED = textwrap.dedent("""
    import sys
    import torch
    from bertviz_lab.bert.runtime.allocator import keep_freed_memory, release_freed_memory, trim_periodically

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024

    assert keep_freed_memory()
    chunks = [torch.ones(256, 1024) for _ in range(800)]  # 1 MiB each, under the mmap threshold: heap memory
    del chunks[::2]  # 400 MiB freed between live chunks: no threshold hands it back
    before = rss_mb()
    if sys.argv[1] == "now":
        assert release_freed_memory()
    else:
        stop = trim_periodically(every=0.05)
        while rss_mb() > before - 300:  # a condition, not a time: the thread's trim lands
            stop.wait(0.05)
        stop.set()
    print(before, rss_mb())
""")


@pytest.mark.parametrize("how", ["now", "periodically"])
def test_freed_memory_between_live_chunks_goes_back_to_the_os(how):
    out = subprocess.run([sys.executable, "-c", FRAGMENTED, how], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-800:]
    before, after = map(int, out.stdout.split())
    assert before - after >= 300, (before, after)  # ~400 MiB of interior free chunks released
