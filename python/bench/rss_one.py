"""One large response in a fresh Python process, for a clean peak RSS:
    python bench/rss_one.py koma_sdk|pure [blob_bytes]
Prints one JSON line: the response's time, the process's CPU, and the peak
RSS growth while it passed (the peak after, minus the RSS just before the
request). The peak is VmHWM, reset just before the request through
/proc/self/clear_refs (ru_maxrss would start at the parent's peak)."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import sys
from pathlib import Path

from common import BLOB_OVERHEAD, FRAME_LIMIT, SIDES, Clock, make_client


def status(field: str) -> int:
    m = re.search(rf"{field}:\s+(\d+) kB", Path("/proc/self/status").read_text())
    assert m, field
    return int(m.group(1)) * 1024


async def main(side: str, blob_bytes: int) -> dict[str, object]:
    c = make_client(side)
    try:
        await c.probe()
        await c.state()
        warm = await c.request("bench_blob", {"bytes": 4096})
        assert len(warm["blob"]) == 4096
        del warm
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")
        before = status("VmRSS")
        clock = Clock()
        r = await c.request("bench_blob", {"bytes": blob_bytes})
        seconds, cpu, loop_cpu = clock.since()
        peak = status("VmHWM")
        ok = isinstance(r, dict) and len(r["blob"]) == blob_bytes
        return {"side": side, "ok": ok, "seconds": seconds, "cpu": cpu, "loop_cpu": loop_cpu, "growth": peak - before}
    except Exception as e:  # noqa: BLE001 - reported as a failed run
        return {"side": side, "ok": False, "error": f"{getattr(e, 'code', type(e).__name__)}: {e}"}
    finally:
        await c.close()


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in SIDES:
        sys.exit(f"usage: python bench/rss_one.py {'|'.join(SIDES)} [blob_bytes]")
    nbytes = int(sys.argv[2]) if len(sys.argv) > 2 else FRAME_LIMIT - BLOB_OVERHEAD - 2
    out = asyncio.run(main(sys.argv[1], nbytes))
    print(json.dumps(out))
    sys.exit(0 if out["ok"] else 1)
