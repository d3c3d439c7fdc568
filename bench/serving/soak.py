"""A long day on the server: ``medcite serve`` under a steady mixed load, then killed and restarted.

1. Starts the real ``medcite serve`` on 127.0.0.1 (production mode, a key per client, the queue
   sized to the clients so the load is served rather than refused) and asks every answered
   request of the mix once with one client: the reference answers.
2. ``--clients`` clients send the mix (``soak_load.py``) for ``--minutes``; the server's RSS, open
   file descriptors and threads are read every ``--sample-seconds``.
3. ``--kill``: a streamed closed-book answer is cut by SIGKILL after its first piece; the index is
   verified against its manifest's checksums, every sqlite cache must pass ``quick_check`` and none
   may be moved aside as corrupt; the restarted server must give the reference answers again.

Checks (``soak_stats.py``): the RSS slope after ``--warmup-minutes`` under 1 MB/min (the upper end
of its 95% interval), no window's p95 over twice the first's, no 5xx, every status as expected,
every answer identical to the reference. Writes ``--out`` (JSON) and ``--plot`` (PNG); exits 1
when a check fails. docs/reliability.md ("Soak") has the command and the results.

    medcite bench soak --clients 16 --minutes 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import closing
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import plots
from bench.common import machine_info
from bench.serving.api_latency import free_port, start_server
from bench.serving.soak_load import (
    CHAT,
    DEFAULT_MIX,
    EXPECTED,
    Load,
    LoadPlan,
    Mix,
    parse_events,
    reference_answers,
    run_load,
)
from bench.serving.soak_stats import rss_slope, soak_checks, summarize_windows
from core.errors import MedciteError
from core.paths import Paths
from indexes.manifest import read_manifest, verify_files

REFERENCE_KEY = "soak-reference-0123456789abcdef"
RESULTS = Path("docs/results/bench")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients, each with its own key")
    parser.add_argument("--minutes", type=float, default=30, help="length of the load")
    parser.add_argument("--window-minutes", type=float, default=5, help="minutes per latency / status window")
    parser.add_argument("--sample-seconds", type=float, default=10, help="between readings of the server")
    parser.add_argument(
        "--warmup-minutes",
        type=float,
        help="left out of the RSS slope fit (default: the first window, at most half the run)",
    )
    parser.add_argument("--request-timeout", type=float, default=300, help="seconds per request, in all")
    parser.add_argument("--max-requests", type=int, default=5000, help="most requests per client")
    parser.add_argument(
        "--kill",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="SIGKILL and restart after the load",
    )
    parser.add_argument("--profile", default="default", help="the profile served")
    parser.add_argument("--index", help="serve this index instead of the profile's (MEDCITE_INDEX)")
    parser.add_argument("--data-dir", type=Path, help="default: MEDCITE_DATA_DIR or data/")
    parser.add_argument("--port", type=int, default=0, help="default: a free one")
    parser.add_argument("--mix", type=Path, help="question mix as JSON (default: soak_load.DEFAULT_MIX)")
    parser.add_argument("--seed", type=int, default=0, help="of the clients' random choices")
    parser.add_argument("--server-log", type=Path, help="append the server's log here (no bodies in it)")
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.json")
    parser.add_argument("--plot", type=Path, default=RESULTS / "soak.png")
    return parser


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(argv)
    if (
        min(args.clients, args.max_requests) < 1
        or min(args.minutes, args.window_minutes, args.sample_seconds) <= 0
    ):
        p.error(
            "--clients, --max-requests, --minutes, --window-minutes and --sample-seconds must be positive"
        )
    if args.warmup_minutes is None:
        args.warmup_minutes = min(args.window_minutes, args.minutes / 2)
    if not 0 <= args.warmup_minutes < args.minutes:
        p.error(f"--warmup-minutes must be at least 0 and under --minutes ({args.minutes})")
    if not 0 < args.request_timeout <= 1800:
        p.error("--request-timeout must be in (0, 1800] s (the server's queue waits twice as long)")
    return args


class SoakServer:
    """``medcite serve`` as a child process on one port, started again after a kill."""

    def __init__(self, args: argparse.Namespace, keys: Sequence[str], paths: Paths) -> None:
        self.profile, self.log = args.profile, args.server_log
        self.port = args.port or free_port()
        self.env = {
            "MEDCITE_ENV": "production",
            "MEDCITE_API_KEYS": ",".join([*keys, REFERENCE_KEY]),
            "MEDCITE_DATA_DIR": str(paths.data_dir),
            # every client may wait for the pipeline at once; a 503 past the wait is a failure
            "MEDCITE_QUEUE_LIMIT": str(len(keys) + 2),
            "MEDCITE_QUEUE_TIMEOUT_S": str(2 * args.request_timeout),
        } | ({"MEDCITE_INDEX": args.index} if args.index else {})
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None, "the server is not started"
        return self.process.pid

    def start(self) -> float:
        """Start and wait until ``/ready``; the seconds that took."""
        started = time.monotonic()
        self.process = start_server(self.profile, self.port, self.env, self.log)
        return round(time.monotonic() - started, 1)

    def ready(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}/ready", timeout=30).json())

    def serving(self) -> str:
        """The index build folder the server answers from."""
        return str(self.ready()["profiles"][self.profile]["serving"])

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def verify_index(folder: Path) -> str:
    """``ok``, or why the index folder does not match its manifest (sizes and sha256)."""
    try:
        verify_files(folder, read_manifest(folder), checksums=True)
    except MedciteError as exc:
        return str(exc)
    return "ok"


def cache_report(cache_dir: Path) -> dict[str, Any]:
    """Every sqlite cache's ``quick_check``, the files moved aside as corrupt, temporary files left."""
    checked = {}
    for path in sorted(cache_dir.rglob("*.sqlite")):
        try:
            with closing(sqlite3.connect(path, timeout=5)) as db:
                checked[str(path.relative_to(cache_dir))] = db.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.Error as exc:
            checked[str(path.relative_to(cache_dir))] = f"{type(exc).__name__}: {exc}"
    return {
        "sqlite": checked,
        "moved_aside": sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*.corrupt-*")),
        "temporary": sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*.tmp")),
    }


def kill_mid_stream(server: SoakServer, mix: Mix, timeout_s: float) -> dict[str, Any]:
    """Stream the mix's kill question (closed book) and SIGKILL the server at its first piece."""
    body = {"messages": [{"role": "user", "content": mix.kill}], "closed_book": True, "stream": True}
    body["max_tokens"] = mix.max_tokens
    pieces, done, error, status = 0, False, None, 0
    headers = {"Authorization": f"Bearer {REFERENCE_KEY}"}
    try:
        with httpx.stream(
            "POST", server.url + CHAT, json=body, headers=headers, timeout=timeout_s
        ) as response:
            status = response.status_code
            for line in response.iter_lines():
                done = done or line == "data: [DONE]"
                if line.startswith("data: {") and parse_events([line])["text"]:
                    pieces += 1
                    if pieces == 1:
                        os.kill(server.pid, signal.SIGKILL)
    except httpx.HTTPError as exc:
        error = type(exc).__name__  # expected: the connection ends without the stream's end
    if server.process and server.process.poll() is None:  # the stream ended before a piece: kill now
        server.process.kill()
    code = server.process.wait(timeout=30) if server.process else None
    return {
        "ok": status == 200 and pieces >= 1 and not done and code == -signal.SIGKILL,
        "status": status,
        "pieces_read": pieces,
        "done_seen": done,
        "client_error": error,
        "exit_code": code,
    }


def kill_phase(
    server: SoakServer, mix: Mix, refs: dict[str, Any], paths: Paths, timeout_s: float
) -> dict[str, dict[str, Any]]:
    """SIGKILL mid-stream, then the index, the caches and the answers of the restarted server."""
    build = server.serving()
    before = cache_report(paths.cache_dir)
    cut = kill_mid_stream(server, mix, timeout_s)
    index = verify_index(paths.indexes_dir / build)
    restart_s = server.start()
    after = cache_report(paths.cache_dir)
    serving = server.serving()
    again = asyncio.run(reference_answers(server.url, REFERENCE_KEY, mix, timeout_s))
    differ = [key for key, ref in refs.items() if again.get(key, {}).get("answer") != ref["answer"]]
    moved = sorted(set(after["moved_aside"]) - set(before["moved_aside"]))
    sqlite_ok = all(verdict == "ok" for verdict in after["sqlite"].values())
    return {
        "kill_mid_stream": cut,
        "kill_index_intact": {"ok": index == "ok", "build": build, "verify": index},
        "kill_caches_open": {"ok": sqlite_ok and not moved, "sqlite": after["sqlite"], "moved_aside": moved},
        "kill_restarted_same_build": {"ok": serving == build, "ready_s": restart_s, "serving": serving},
        "kill_answers_equal": {
            "ok": bool(refs) and not differ,
            "compared": len(refs),
            "differ": [json.loads(key)["messages"][-1]["content"] for key in differ],
            "temporary_files_left": sorted(set(after["temporary"]) - set(before["temporary"])),
        },
    }


def memory_summary(samples: Sequence[dict[str, float]], warmup_min: float) -> dict[str, Any]:
    """First, last and largest reading of each measure; the RSS line fitted after the warm-up."""
    if not samples:
        return {}
    fit = rss_slope(samples, warmup_min)
    out: dict[str, Any] = {
        name: {"first": samples[0][name], "last": samples[-1][name], "max": max(s[name] for s in samples)}
        for name in ("rss_mb", "rss_anon_mb", "fds", "threads")
        if all(name in s for s in samples)
    }
    if fit is not None:
        out["fit"] = {
            "slope_mb_per_min": round(fit.slope, 4),
            "ci95": [round(fit.low, 4), round(fit.high, 4)],
            "intercept_mb": round(fit.intercept, 2),
            "samples": fit.n,
        }
    return out


def run_soak(args: argparse.Namespace, mix: Mix) -> dict[str, Any]:
    """Start the server, take the references, run the load and the kill; the result, checked."""
    paths = Paths.from_env()
    paths = paths.model_copy(update={"data_dir": args.data_dir}) if args.data_dir else paths
    keys = [f"soak-client-{n:03d}-0123456789abcdef" for n in range(args.clients)]
    plan = LoadPlan(
        args.clients,
        args.minutes * 60,
        args.sample_seconds,
        args.request_timeout,
        args.max_requests,
        args.seed,
    )
    server = SoakServer(args, keys, paths)
    try:
        startup_s = server.start()
        refs = asyncio.run(reference_answers(server.url, REFERENCE_KEY, mix, args.request_timeout))
        load = asyncio.run(run_load(server.url, server.pid, keys, mix, refs, plan))
        exit_code = server.process.poll() if server.process else None
        checks: dict[str, dict[str, Any]] = {
            "references_answered": {
                "ok": all(r["status"] == 200 for r in refs.values()),
                "outcomes": {json.loads(k)["messages"][-1]["content"]: r["outcome"] for k, r in refs.items()},
                "seconds": [r["s"] for r in refs.values()],
            },
            "server_alive_after_load": {"ok": exit_code is None, "exit_code": exit_code},
        }
        if exit_code is None:
            queue = server.ready()["queue"]
            checks["queue_empty_after"] = {"ok": queue["waiting"] == queue["running"] == 0, "queue": queue}
            if args.kill:
                checks |= kill_phase(server, mix, refs, paths, args.request_timeout)
    finally:
        server.stop()
    server_info = {
        "profile": args.profile,
        "index": args.index,
        "startup_s": startup_s,
        "env": {k: v for k, v in server.env.items() if k != "MEDCITE_API_KEYS"} | {"keys": len(keys) + 1},
    }
    return {"server": server_info, **checked(args, load, checks)}


def checked(args: argparse.Namespace, load: Load, checks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The load's windows, memory and requests, and every check (the load's first)."""
    windows = summarize_windows(load.requests, args.window_minutes * 60, args.minutes * 60)
    checks = (
        soak_checks(load.requests, EXPECTED, windows, rss_slope(load.samples, args.warmup_minutes)) | checks
    )
    rows = [
        [r.kind, round(r.start_s, 2), round(r.latency_s, 3), r.status, r.outcome, r.mismatch]
        for r in load.requests
    ]
    return {
        "load": {
            "wall_s": load.wall_s,
            "requests": len(load.requests),
            "by_kind": dict(Counter(r.kind for r in load.requests)),
            "status_counts": dict(Counter(str(r.status) for r in load.requests)),
            "mismatch_examples": load.mismatches,
        },
        "windows": windows,
        "memory": memory_summary(load.samples, args.warmup_minutes),
        "samples": load.samples,
        "requests": {
            "columns": ["kind", "start_s", "latency_s", "status", "outcome", "mismatch"],
            "rows": rows,
        },
        "checks": checks,
        "ok": all(c["ok"] for c in checks.values()),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    mix = Mix.load(args.mix) if args.mix else DEFAULT_MIX
    line = list(sys.argv[1:] if argv is None else argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    result = run_soak(args, mix)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    full = {
        "benchmark": "soak",
        "command": shlex.join(["medcite", "bench", "soak", *line]),
        "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": machine_info(),
        "settings": settings,
        "mix": asdict(mix),
        **result,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(full, indent=1, ensure_ascii=False) + "\n")
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    plots.soak(full, args.plot)
    for name, check in full["checks"].items():
        print(f"{'ok  ' if check['ok'] else 'FAIL'} {name}")
    print(f"{full['load']['requests']} requests; results in {args.out}, plot in {args.plot}")
    return 0 if full["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
