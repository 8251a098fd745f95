#!/usr/bin/env python3
"""End-to-end latency benchmark of cua-s1-server, optionally against the Transformers reference.

What it measures, in one run:
  1. startup: starts the server binary (--server, with --model/--adapter/--lock/--port and every
     option this script does not know passed through, e.g. --backend cuda or --threads 2), its
     stdout+stderr written to OUT_DIR/server.log; startup-to-ready = time from the spawn to the
     first GET /health answering 200 {"status":"ready"} (the server answers 503 "starting" until
     the weights are loaded and its own warmup decision succeeded); the server-side times of the
     log events model_loaded / listening / ready are reported too;
  2. latency: for each request body (--inputs, default bench/inputs/gpu-*.json, written by
     tools/make_bench_inputs.py), --warmup requests, then --iterations timed sequential requests
     on one HTTP/1.1 keep-alive connection (http.client, TCP_NODELAY); client wall time from
     sending the request to having read the whole answer; every answer must be 200 and
     contract-shaped (spec/contract.md section 4: key order, option order, probabilities in
     [0,1] summing to 1 within 1e-5, choice = first maximum, confidence = 1 - H/ln n, usage);
     p50 / p95 / min / mean in ms, and whether all answers to the same body were identical;
  3. stage split: GET /metrics before and after the timed requests of each body; the deltas of
     cua_s1_stage_duration_seconds_{sum,count} per stage (decode, prepare, vision, language,
     total) give the server-side mean per request ("not available" when absent);
  4. GPU memory: nvidia-smi polled every --gpu-poll-interval seconds from before the spawn to
     the end: the peak of the server pid in --query-compute-apps; when no row has that pid (empty
     list, or a container whose pids differ) the peak of all compute apps, else the peak of
     --query-gpu=memory.used (minus the idle value before the spawn). No nvidia-smi: reported as
     not available;
  5. optional --reference, after the server is stopped (so memory numbers do not mix): the
     Transformers 5.17 + PEFT reference on the same model files (base loaded with
     Qwen3_5ForConditionalGeneration.from_pretrained(dtype=bfloat16), adapter unmerged with
     PeftModel.from_pretrained, TF32 off), inputs built from the same request bodies by the
     Qwen3VLProcessor path of tools/make_tiny_reference.py (contract 5.2 prompt, Pillow decode),
     one full forward per question (use_cache=False, logits_to_keep=1; cuda synchronised after
     each), --warmup + --reference-iterations timed requests; per request the sum over its
     questions (the reference has no image-feature reuse); torch.cuda.max_memory_allocated
     (weights included) and the nvidia-smi peak of this process; the reference probabilities
     (float32 softmax of the letter logits) are compared with the server's answers (max |dp|,
     choice agreement, prompt tokens equal to usage.input_tokens).

Prints progress lines while running, then a markdown table (case, ours p50/p95, reference p50,
speed-up, vision ms, language ms), startup-to-ready and peak GPU memory; writes the same and
everything measured to OUT_DIR/bench.json. Exit code 0 when everything ran and every answer was
valid, 1 when an answer was invalid or the reference failed, 2 when the server failed (it died,
did not become ready, or could not be reached; its last log lines are printed). The server is
always stopped (SIGTERM, then SIGKILL after 30 s) before the script exits.

Requirements: Python 3.9+ standard library for the server part; torch, transformers 5.17,
peft, torchvision and Pillow for --reference.

Examples (from the repository root):
  # CPU, bundled tiny model (no --model), the two smallest inputs:
  python3 bench/bench_server.py --server build/src/cua-s1-server --threads 2 --iterations 2 \\
      --inputs bench/inputs/gpu-640x480-q1.json bench/inputs/gpu-640x480-q8.json
  # H200: our CUDA backend and the reference on the full-size model:
  python3 bench/bench_server.py --server device-bin/cua-s1-server --model /tmp/full/base \\
      --adapter /tmp/full/multimodal --lock /tmp/full/weights.lock.json --backend cuda \\
      --reference --out-dir bench-out
"""

import argparse
import datetime
import gc
import http.client
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY_BASE = ROOT / "tests/fixtures/tiny/base"
TINY_ADAPTER = ROOT / "tests/fixtures/tiny/multimodal"
SCHEMA = "cua-s1/bench-server/v1"
STAGES = ["decode", "prepare", "vision", "language", "total"]
MIB = 1024 * 1024


def log(*parts):
    print(*parts, flush=True)


def percentile(values, q):
    """numpy's default (linear interpolation) percentile, q in [0, 100]."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(ms):
    return {"n": len(ms), "p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95),
            "min_ms": min(ms) if ms else None, "max_ms": max(ms) if ms else None,
            "mean_ms": sum(ms) / len(ms) if ms else None}


def fmt(value, digits=1):
    return "n/a" if value is None else f"{value:.{digits}f}"


class ServerFailure(Exception):
    """The server died, never became ready, or stopped answering."""


# ---- GPU memory ------------------------------------------------------------------------------

class GpuMemoryPoller(threading.Thread):
    """Polls nvidia-smi; keeps the peak for one pid, for all compute apps, and the device total."""

    def __init__(self, interval):
        super().__init__(daemon=True)
        self.interval = interval
        self.exe = shutil.which("nvidia-smi")
        self.pid = None
        self.note = None if self.exe else "nvidia-smi not found"
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.samples = 0
        self.pids_seen = set()
        self.process_peak = None      # MiB, rows with our pid
        self.apps_peak = None         # MiB, sum over all compute-app rows
        self.total_peak = None        # MiB, max over GPUs of memory.used
        self.total_baseline = self.query_total() if self.exe else None

    def _smi(self, *args):
        try:
            proc = subprocess.run([self.exe, *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as error:
            self.note = f"nvidia-smi failed: {error}"
            return None
        if proc.returncode != 0:
            self.note = f"nvidia-smi exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}"
            return None
        return [line.strip() for line in proc.stdout.splitlines() if line.strip()]

    def query_total(self):
        lines = self._smi("--query-gpu=memory.used", "--format=csv,noheader,nounits")
        values = []
        for line in lines or []:
            try:
                values.append(float(line))
            except ValueError:
                pass
        return max(values) if values else None

    def sample(self):
        rows = self._smi("--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
        total = self.query_total()
        with self.lock:
            self.samples += 1
            apps = 0.0
            mine = None
            for row in rows or []:
                parts = [p.strip() for p in row.split(",")]
                if len(parts) < 2:
                    continue
                try:
                    pid, used = int(parts[0]), float(parts[1])
                except ValueError:
                    continue  # "[N/A]" and the like
                self.pids_seen.add(pid)
                apps += used
                if pid == self.pid:
                    mine = (mine or 0.0) + used
            if rows:
                self.apps_peak = max(self.apps_peak or 0.0, apps)
            if mine is not None:
                self.process_peak = max(self.process_peak or 0.0, mine)
            if total is not None:
                self.total_peak = max(self.total_peak or 0.0, total)

    def run(self):
        if not self.exe:
            return
        while not self.stop_event.is_set():
            self.sample()
            self.stop_event.wait(self.interval)

    def watch(self, pid):
        with self.lock:
            self.pid = pid

    def finish(self):
        if self.exe and self.is_alive():
            self.stop_event.set()
            self.join(timeout=15)
        if self.exe:
            self.sample()  # one last sample at the end

    def result(self):
        with self.lock:
            res = {"available": self.exe is not None, "pid": self.pid, "samples": self.samples,
                   "process_peak_mib": self.process_peak, "all_apps_peak_mib": self.apps_peak,
                   "device_used_peak_mib": self.total_peak,
                   "device_used_baseline_mib": self.total_baseline,
                   "pids_seen": sorted(self.pids_seen)[:32], "note": self.note}
        if self.process_peak is not None:
            res["peak_mib"], res["source"] = self.process_peak, "nvidia-smi compute-apps, this pid"
        elif self.apps_peak is not None:
            res["peak_mib"], res["source"] = self.apps_peak, \
                "nvidia-smi compute-apps, all processes (this pid not listed)"
        elif self.total_peak is not None:
            base = self.total_baseline or 0.0
            res["peak_mib"] = self.total_peak - base
            res["source"] = (f"nvidia-smi memory.used peak {self.total_peak:.0f} MiB minus idle "
                             f"{base:.0f} MiB (no per-process rows)")
        else:
            res["peak_mib"], res["source"] = None, self.note or "no nvidia-smi sample"
        return res


def gpu_info():
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [line.strip() for line in out.splitlines() if line.strip()] or None


# ---- the server process ----------------------------------------------------------------------

def parse_ts(text):
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
    except (TypeError, ValueError):
        return None


class Server:
    def __init__(self, args, extra, out_dir):
        self.cmd = [str(args.server), "--host", args.host, "--port", str(args.port)]
        for flag, value in (("--model", args.model), ("--adapter", args.adapter),
                            ("--lock", args.lock)):
            if value is not None:
                self.cmd += [flag, str(value)]
        self.cmd += extra
        self.host = args.host
        self.port = args.port or None
        self.log_path = out_dir / "server.log"
        self.proc = None
        self.log_file = None
        self.spawned = None
        self.exit_code = None

    def start(self):
        log("server: starting:", " ".join(self.cmd))
        log(f"server: log -> {self.log_path}")
        self.log_file = open(self.log_path, "wb")
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_lines(self):
        try:
            return self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []

    def events(self):
        out = []
        for line in self.log_lines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def tail(self, n=40):
        return self.log_lines()[-n:]

    def check_alive(self, what):
        if not self.alive():
            self.exit_code = self.proc.returncode if self.proc else None
            raise ServerFailure(f"the server exited with code {self.exit_code} {what}")

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        last_status = None
        while time.monotonic() < deadline:
            self.check_alive("before it became ready")
            if self.port is None:
                for event in self.events():
                    if event.get("event") == "listening" and event.get("port"):
                        self.port = int(event["port"])
                        log(f"server: listening on {self.host}:{self.port} after "
                            f"{time.perf_counter() - self.spawned:.2f} s")
            if self.port is not None:
                try:
                    conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
                    conn.request("GET", "/health")
                    resp = conn.getresponse()
                    body = resp.read()
                    conn.close()
                    status = resp.status
                    if status != last_status:
                        log(f"server: /health {status} {body[:120].decode(errors='replace')} at "
                            f"{time.perf_counter() - self.spawned:.2f} s")
                        last_status = status
                    if status == 200:
                        health = json.loads(body)
                        if health.get("status") == "ready":
                            return time.perf_counter() - self.spawned, health
                except (OSError, http.client.HTTPException, ValueError):
                    pass
            time.sleep(0.05)
        raise ServerFailure(f"the server was not ready after {timeout} s")

    def server_side_startup(self):
        """Seconds from the log event "starting" to the other startup events."""
        times = {}
        for event in self.events():
            name = event.get("event")
            if name in ("starting", "model_loaded", "listening", "ready") and name not in times:
                times[name] = parse_ts(event.get("ts"))
        start = times.get("starting")
        if start is None:
            return None
        return {f"{k}_s": round(v - start, 3) for k, v in times.items()
                if k != "starting" and v is not None}

    def stop(self):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log("server: no exit 30 s after SIGTERM; SIGKILL")
                self.proc.kill()
                self.proc.wait(timeout=30)
            except ProcessLookupError:
                pass
        self.exit_code = self.proc.returncode
        if self.log_file:
            self.log_file.close()
            self.log_file = None
        return self.exit_code


class Client:
    """One keep-alive HTTP/1.1 connection; reconnects (and counts it) when the server closes."""

    def __init__(self, server, timeout):
        self.server = server
        self.timeout = timeout
        self.conn = None
        self.connects = 0

    def _connect(self):
        self.conn = http.client.HTTPConnection(self.server.host, self.server.port,
                                               timeout=self.timeout)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connects += 1

    def request(self, method, path, body=None):
        """(status, body bytes, elapsed seconds incl. sending and reading everything)."""
        for attempt in (1, 2):
            if self.conn is None:
                self._connect()
            headers = {"Content-Type": "application/json"} if body is not None else {}
            try:
                start = time.perf_counter()
                self.conn.request(method, path, body=body, headers=headers)
                resp = self.conn.getresponse()
                data = resp.read()
                elapsed = time.perf_counter() - start
            except (OSError, http.client.HTTPException) as error:
                self.close()
                self.server.check_alive(f"during {method} {path}")
                if attempt == 2:
                    raise ServerFailure(f"{method} {path} failed twice: {error!r}")
                continue
            if resp.will_close:
                self.close()
            return resp.status, data, elapsed
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


# ---- answers and metrics ---------------------------------------------------------------------

def check_answer(request, status, data):
    """Problems of one answer against the request (contract section 4); [] when valid."""
    if status != 200:
        return [f"status {status}: {data[:300].decode(errors='replace')}"]
    try:
        answer = json.loads(data)
    except ValueError as error:
        return [f"answer is not JSON: {error}"]
    problems = []
    if not isinstance(answer, dict) or list(answer) != ["model", "answers", "usage"]:
        return [f"top-level keys {list(answer) if isinstance(answer, dict) else type(answer)}"]
    if not isinstance(answer["model"], str) or not answer["model"]:
        problems.append("model is not a non-empty string")
    questions = request["questions"]
    answers = answer["answers"]
    if not isinstance(answers, dict) or list(answers) != list(questions):
        return problems + ["answers are not the questions in request order"]
    for name, question in questions.items():
        a = answers[name]
        tag = f"answers[{name!r}]"
        if not isinstance(a, dict) or list(a) != ["type", "choice", "probabilities", "confidence"]:
            problems.append(f"{tag}: keys {list(a) if isinstance(a, dict) else a}")
            continue
        if a["type"] != "choice":
            problems.append(f"{tag}: type {a['type']!r}")
        probs = a["probabilities"]
        keys = list(question["criteria"])
        if not isinstance(probs, dict) or list(probs) != keys:
            problems.append(f"{tag}: probabilities not in criteria order")
            continue
        values = list(probs.values())
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   and 0.0 <= v <= 1.0 for v in values):
            problems.append(f"{tag}: a probability is not a number in [0, 1]")
            continue
        if abs(sum(values) - 1.0) > 1e-5:
            problems.append(f"{tag}: probabilities sum to {sum(values)!r}")
        best = max(range(len(values)), key=lambda i: (values[i], -i))
        if a["choice"] != keys[best]:
            problems.append(f"{tag}: choice {a['choice']!r}, first maximum {keys[best]!r}")
        if len(values) == 1:
            want = 1.0
        else:
            entropy = -sum(p * math.log(p) for p in values if p > 0)
            want = min(1.0, max(0.0, 1.0 - entropy / math.log(len(values))))
        conf = a["confidence"]
        if not isinstance(conf, (int, float)) or isinstance(conf, bool) or \
                not 0.0 <= conf <= 1.0 or abs(conf - want) > 1e-6:
            problems.append(f"{tag}: confidence {conf!r}, 1 - H/ln n = {want!r}")
    usage = answer["usage"]
    if not isinstance(usage, dict) or list(usage) != ["input_tokens", "output_tokens"]:
        problems.append(f"usage keys {list(usage) if isinstance(usage, dict) else usage}")
    else:
        tokens = usage["input_tokens"]
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
            problems.append(f"usage.input_tokens {tokens!r}")
        if usage["output_tokens"] != 0:
            problems.append(f"usage.output_tokens {usage['output_tokens']!r}")
    return problems


STAGE_LINE = re.compile(
    r'^cua_s1_stage_duration_seconds_(sum|count)\{stage="([a-z_]+)"\}\s+(\S+)\s*$')


def parse_stage_metrics(text):
    """{stage: {"sum": s, "count": n}} from the Prometheus text; None if there is none."""
    stages = {}
    for line in text.splitlines():
        m = STAGE_LINE.match(line)
        if m:
            try:
                stages.setdefault(m.group(2), {})[m.group(1)] = float(m.group(3))
            except ValueError:
                pass
    stages = {k: v for k, v in stages.items() if "sum" in v and "count" in v}
    return stages or None


def stage_means(before, after):
    """Mean ms per observation of each stage between two snapshots; None if unavailable."""
    if before is None or after is None:
        return None
    out = {}
    for stage, a in after.items():
        b = before.get(stage, {"sum": 0.0, "count": 0.0})
        count = a["count"] - b["count"]
        if count > 0:
            out[stage] = {"mean_ms": (a["sum"] - b["sum"]) / count * 1e3, "count": int(count)}
    return out or None


def fetch_metrics(client):
    status, data, _ = client.request("GET", "/metrics")
    if status != 200:
        return None, f"GET /metrics answered {status}"
    text = data.decode(errors="replace")
    return text, None


# ---- cases -----------------------------------------------------------------------------------

def case_name(path):
    return Path(path).stem.removeprefix("gpu-")


def default_inputs():
    files = sorted((ROOT / "bench/inputs").glob("gpu-*.json"))

    def key(path):
        m = re.search(r"(\d+)x(\d+)-q(\d+)", path.name)
        return (int(m.group(1)) * int(m.group(2)), int(m.group(3))) if m else (1 << 62, 0)
    return sorted(files, key=key)


def load_cases(paths):
    cases = []
    for path in paths:
        raw = Path(path).read_bytes()
        request = json.loads(raw)
        cases.append({"name": case_name(path), "path": Path(path), "raw": raw,
                      "request": request, "questions": len(request["questions"]),
                      "options": [len(q["criteria"]) for q in request["questions"].values()]})
    return cases


def bench_case(client, case, args, problems):
    name, raw, request = case["name"], case["raw"], case["request"]
    res = {"case": name, "file": str(case["path"]), "body_bytes": len(raw),
           "questions": case["questions"], "options": case["options"]}
    first = None
    for i in range(args.warmup):
        status, data, elapsed = client.request("POST", "/v1/systemone", raw)
        errs = check_answer(request, status, data)
        if errs:
            problems.extend(f"{name} warmup {i}: {e}" for e in errs)
            client.server.check_alive("after an invalid answer")
        if i == 0:
            first = elapsed * 1e3
    res["first_request_ms"] = first
    log(f"  {name}: {args.warmup} warmup requests done"
        + (f" (first {first:.1f} ms)" if first is not None else ""))
    before_text, _ = fetch_metrics(client)
    before = parse_stage_metrics(before_text) if before_text else None
    times, invalid, answers, last_valid = [], 0, set(), None
    progress_every = max(1, args.iterations // 3)
    for i in range(args.iterations):
        status, data, elapsed = client.request("POST", "/v1/systemone", raw)
        times.append(elapsed * 1e3)
        errs = check_answer(request, status, data)
        if errs:
            invalid += 1
            problems.extend(f"{name} iteration {i}: {e}" for e in errs[:3])
            client.server.check_alive("after an invalid answer")
        else:
            answers.add(data)
            last_valid = data
        if (i + 1) % progress_every == 0 or i + 1 == args.iterations:
            log(f"  {name}: {i + 1}/{args.iterations} timed, last {times[-1]:.1f} ms, "
                f"p50 so far {percentile(times, 50):.1f} ms")
    after_text, _ = fetch_metrics(client)
    after = parse_stage_metrics(after_text) if after_text else None
    res.update(summary(times))
    res["latencies_ms"] = [round(t, 3) for t in times]
    res["invalid_answers"] = invalid
    res["distinct_answers"] = len(answers)
    res["stages"] = stage_means(before, after)
    if last_valid is not None:
        last = json.loads(last_valid)
        res["input_tokens"] = last["usage"]["input_tokens"]
        res["answer"] = last
    return res


def run_server_phase(args, extra, out_dir, cases, report, problems):
    poller = GpuMemoryPoller(args.gpu_poll_interval)
    server = Server(args, extra, out_dir)
    report["server"] = {"command": server.cmd, "log": str(server.log_path)}
    client = None
    failed = True
    try:
        if poller.note:
            log(f"gpu memory: {poller.note}; not measured")
        poller.start()
        pid = server.start()
        poller.watch(pid)
        ready_s, health = server.wait_ready(args.startup_timeout)
        report["server"].update(startup_to_ready_s=round(ready_s, 3), health=health,
                                port=server.port)
        log(f"server: ready after {ready_s:.2f} s: {json.dumps(health)}")
        client = Client(server, args.request_timeout)
        text, err = fetch_metrics(client)
        report["server"]["stage_metrics_available"] = bool(text and parse_stage_metrics(text))
        if err:
            log(f"metrics: {err}")
        for case in cases:
            log(f"case {case['name']}: {case['questions']} question(s), options {case['options']}, "
                f"{len(case['raw'])} bytes")
            res = bench_case(client, case, args, problems)
            report["cases"].append(res)
            st = res["stages"] or {}
            log(f"  {case['name']}: p50 {fmt(res['p50_ms'])} ms, p95 {fmt(res['p95_ms'])} ms, "
                f"min {fmt(res['min_ms'])} ms; vision {fmt(st.get('vision', {}).get('mean_ms'))} "
                f"ms, language {fmt(st.get('language', {}).get('mean_ms'))} ms (server means)")
            case["answer"] = res.get("answer")
        text, _ = fetch_metrics(client)
        if text:
            (out_dir / "metrics.txt").write_text(text)
        report["server"]["connections_opened"] = client.connects
        failed = False
    finally:
        if client:
            client.close()
        alive_at_end = server.alive()
        code = server.stop()
        poller.finish()
        report["server"]["exit_code"] = code
        report["server"]["exited_by_itself"] = not alive_at_end
        report["server"]["server_side_startup"] = server.server_side_startup()
        report["server"]["gpu_memory"] = poller.result()
        if failed or not alive_at_end or code not in (0, None):
            log(f"server: exit code {code}; last log lines ({server.log_path}):")
            for line in server.tail(40):
                log("  | " + line)
        else:
            log(f"server: stopped (exit code {code})")


# ---- the Transformers reference --------------------------------------------------------------

def reference_inputs_builder(base_dir):
    """(build(path) -> list of question dicts {name, inputs, letter_ids}, how)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import make_tiny_reference as mtr  # noqa: E402
        processor, letters = mtr.load_processor(Path(base_dir))

        def build(path):
            case = mtr.prepare_case(Path(path), processor, letters)
            return [{"name": q["name"], "inputs": q["inputs"], "letter_ids": q["letter_ids"]}
                    for q in case["questions"]]
        return build, "tools/make_tiny_reference.py load_processor + prepare_case"
    except Exception as error:  # the helper moved or changed: the same path, written out
        log(f"reference: tools/make_tiny_reference.py not usable ({error!r}); using the "
            "built-in copy of its processor path")
    import base64
    import io
    from PIL import Image
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor
    import make_prepare_fixtures as prep  # noqa: E402  (prompt_for: contract 5.1/5.2)

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    processor = Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor.from_pretrained(base_dir),
                                 tokenizer=tokenizer, video_processor=Qwen3VLVideoProcessor())
    letters = []
    for i in range(26):
        ids = tokenizer.encode(chr(65 + i), add_special_tokens=False)
        assert len(ids) == 1, (chr(65 + i), ids)
        letters.append(ids[0])

    def build(path):
        body = json.loads(Path(path).read_text())
        raw = base64.b64decode(body["state"]["image"].split(",", 1)[1], validate=True)
        with Image.open(io.BytesIO(raw)) as source:
            source.load()
            rgb = source.convert("RGB")
        out = []
        for name, question in body["questions"].items():
            inputs = processor(text=[prep.prompt_for(question)], images=[rgb], return_tensors="pt")
            out.append({"name": name, "inputs": inputs,
                        "letter_ids": letters[:len(question["criteria"])]})
        return out
    return build, "built-in copy (Qwen3VLProcessor + make_prepare_fixtures.prompt_for)"


def run_reference(args, cases, report):
    # Local directories only: never wait on the Hub (the benchmark machine has no network).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    import transformers
    import peft
    from peft import PeftModel
    from transformers import Qwen3_5ForConditionalGeneration

    device = args.reference_device
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--reference-device cuda: CUDA is not available")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.manual_seed(0)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.reference_dtype]
    base_dir = Path(args.model) if args.model else TINY_BASE
    adapter_dir = Path(args.adapter) if args.adapter else (
        TINY_ADAPTER if not args.model else
        base_dir.resolve().parent / "cua-s1-4b-0.2" / "multimodal")
    ref = {"device": device, "dtype": args.reference_dtype, "base": str(base_dir),
           "adapter": str(adapter_dir), "torch": torch.__version__,
           "transformers": transformers.__version__, "peft": peft.__version__,
           "device_name": torch.cuda.get_device_name(0) if device == "cuda" else platform.machine(),
           "torch_threads": torch.get_num_threads(), "cases": []}
    report["reference"] = ref
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    poller = GpuMemoryPoller(args.gpu_poll_interval) if device == "cuda" else None
    if poller:
        poller.watch(os.getpid())
        poller.start()
    try:
        build, how = reference_inputs_builder(base_dir)
        ref["inputs_from"] = how
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        base = Qwen3_5ForConditionalGeneration.from_pretrained(base_dir, dtype=dtype)
        model = PeftModel.from_pretrained(base, adapter_dir).eval()
        model.to(device)
        sync()
        ref["load_s"] = round(time.perf_counter() - start, 3)
        lora = [p.dtype for n, p in model.named_parameters() if "lora_" in n]
        ref["lora_tensors"] = len(lora)
        ref["lora_dtypes"] = sorted({str(d) for d in lora})
        ref["attn_implementation"] = str(model.get_base_model().config._attn_implementation)
        if device == "cuda":
            ref["weights_allocated_gib"] = torch.cuda.memory_allocated() / 2**30
        log(f"reference: {base_dir} + {adapter_dir} loaded on {device} ({args.reference_dtype}, "
            f"{len(lora)} LoRA tensors {ref['lora_dtypes']}, attention "
            f"{ref['attn_implementation']}) in {ref['load_s']:.1f} s; inputs from {how}")

        for case in cases:
            questions = build(case["path"])
            keep = ("input_ids", "attention_mask", "pixel_values", "image_grid_thw",
                    "mm_token_type_ids")
            device_inputs = [{k: v.to(device) for k, v in q["inputs"].items() if k in keep}
                             for q in questions]
            tokens = [int(q["inputs"]["input_ids"].shape[-1]) for q in questions]

            def forward_all(per_question=None):
                outs = []
                for inputs in device_inputs:
                    t = time.perf_counter()
                    outs.append(model(**inputs, use_cache=False, logits_to_keep=1))
                    sync()
                    if per_question is not None:
                        per_question.append((time.perf_counter() - t) * 1e3)
                return outs

            with torch.inference_mode():
                for _ in range(args.warmup):
                    forward_all()
                times, per_q = [], [[] for _ in questions]
                for i in range(args.reference_iterations):
                    pq = []
                    t = time.perf_counter()
                    outs = forward_all(pq)
                    times.append((time.perf_counter() - t) * 1e3)
                    for j, v in enumerate(pq):
                        per_q[j].append(v)
                probs = []
                for q, out in zip(questions, outs):
                    logits = out.logits[0, -1, q["letter_ids"]].to(torch.float32)
                    probs.append(torch.softmax(logits, dim=-1).cpu().tolist())
            res = {"case": case["name"], "tokens": tokens, "input_tokens": sum(tokens)}
            res.update(summary(times))
            res["latencies_ms"] = [round(t, 3) for t in times]
            res["per_question_p50_ms"] = [percentile(v, 50) for v in per_q]
            res["probabilities"] = probs
            answer = case.get("answer")
            if answer:
                diffs, agree = [], 0
                for q, p in zip(questions, probs):
                    ours = answer["answers"][q["name"]]
                    values = list(ours["probabilities"].values())
                    diffs.append(max(abs(a - b) for a, b in zip(values, p)))
                    keys = list(ours["probabilities"])
                    agree += keys[max(range(len(p)), key=lambda i: (p[i], -i))] == ours["choice"]
                res["vs_ours"] = {"max_abs_dp": max(diffs), "choices_agree": agree,
                                  "questions": len(questions),
                                  "tokens_equal": sum(tokens) == answer["usage"]["input_tokens"]}
            ref["cases"].append(res)
            extra = ""
            if "vs_ours" in res:
                v = res["vs_ours"]
                extra = (f"; vs ours max |dp| {v['max_abs_dp']:.3g}, choices agree "
                         f"{v['choices_agree']}/{v['questions']}, tokens equal {v['tokens_equal']}")
            log(f"  reference {case['name']}: {len(questions)} forward(s), tokens {tokens}, "
                f"p50 {fmt(res['p50_ms'])} ms, min {fmt(res['min_ms'])} ms{extra}")
            del device_inputs, outs
        if device == "cuda":
            ref["max_memory_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
            ref["max_memory_reserved_gib"] = torch.cuda.max_memory_reserved() / 2**30
        del model, base
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    finally:
        if poller:
            poller.finish()
            ref["gpu_memory"] = poller.result()


# ---- report ----------------------------------------------------------------------------------

def table(report):
    ref_cases = {c["case"]: c for c in (report.get("reference") or {}).get("cases", [])}
    ours_cases = {c["case"]: c for c in report["cases"]}
    names = list(ours_cases) + [n for n in ref_cases if n not in ours_cases]
    lines = ["| case | questions | tokens | ours p50 ms | ours p95 ms | ours min ms | "
             "reference p50 ms | speed-up | vision ms | language ms | language ms/question |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for name in names:
        o, r = ours_cases.get(name, {}), ref_cases.get(name, {})
        st = o.get("stages") or {}
        vision = st.get("vision", {}).get("mean_ms")
        language = st.get("language", {}).get("mean_ms")
        nq = o.get("questions") or len(r.get("tokens", [])) or None
        speed = (r["p50_ms"] / o["p50_ms"]) if r.get("p50_ms") and o.get("p50_ms") else None
        tokens = o.get("input_tokens") or r.get("input_tokens")
        row = {"case": name, "questions": nq, "tokens": tokens, "ours_p50_ms": o.get("p50_ms"),
               "ours_p95_ms": o.get("p95_ms"), "ours_min_ms": o.get("min_ms"),
               "reference_p50_ms": r.get("p50_ms"), "speed_up": speed, "vision_ms": vision,
               "language_ms": language,
               "language_ms_per_question": language / nq if language is not None and nq else None}
        rows.append(row)
        na = "not available" if o and not o.get("stages") else "n/a"
        lines.append(
            f"| {name} | {nq or 'n/a'} | {tokens or 'n/a'} | {fmt(row['ours_p50_ms'])} | "
            f"{fmt(row['ours_p95_ms'])} | {fmt(row['ours_min_ms'])} | "
            f"{fmt(row['reference_p50_ms'])} | "
            f"{'n/a' if speed is None else f'{speed:.2f}x'} | "
            f"{na if vision is None else fmt(vision, 2)} | "
            f"{na if language is None else fmt(language, 2)} | "
            f"{na if row['language_ms_per_question'] is None else fmt(row['language_ms_per_question'], 2)} |")
    return lines, rows


def footer(report):
    lines = []
    if report.get("failure"):
        lines.append(f"- FAILED: {report['failure']}")
    server = report.get("server") or {}
    if server:
        s = server.get("startup_to_ready_s")
        side = server.get("server_side_startup") or {}
        lines.append(f"- startup to ready: {fmt(s, 2)} s (client: spawn to GET /health 200 ready)"
                     + (f"; server log: " + ", ".join(f"{k[:-2]} {v:.2f} s"
                                                     for k, v in side.items())
                        + " after \"starting\"" if side else ""))
        mem = server.get("gpu_memory") or {}
        peak = mem.get("peak_mib")
        lines.append(f"- peak GPU memory, our server: "
                     + (f"{peak:.0f} MiB ({peak / 1024:.2f} GiB), {mem.get('source')}"
                        if peak is not None else f"not available ({mem.get('source')})"))
        if not server.get("stage_metrics_available", True):
            lines.append("- vision/language split: not available (no "
                         "cua_s1_stage_duration_seconds in /metrics)")
        else:
            lines.append("- vision / language ms: server-side means per request from "
                         "/metrics (cua_s1_stage_duration_seconds sum/count deltas over the timed "
                         "requests); language = all questions of the request")
    ref = report.get("reference")
    if ref:
        if ref.get("error"):
            lines.append(f"- reference: FAILED: {ref['error']}")
        else:
            alloc = ref.get("max_memory_allocated_gib")
            mem = (ref.get("gpu_memory") or {})
            lines.append(
                f"- reference: Transformers {ref.get('transformers')} + PEFT {ref.get('peft')}, "
                f"torch {ref.get('torch')}, {ref.get('device')} {ref.get('dtype')}, LoRA unmerged, "
                f"one forward per question (logits_to_keep=1); load {fmt(ref.get('load_s'), 1)} s"
                + (f"; torch.cuda.max_memory_allocated {alloc:.2f} GiB" if alloc is not None else "")
                + (f"; nvidia-smi peak {mem['peak_mib']:.0f} MiB ({mem.get('source')})"
                   if mem.get("peak_mib") is not None else ""))
    return lines


def git_commit():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"],
                               capture_output=True, text=True, timeout=30)
        if out.returncode == 0:
            return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None


def main():
    argv = sys.argv[1:]
    passthrough = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], allow_abbrev=False,
        epilog="Options not listed here (e.g. --backend cuda, --threads N, --device N) and "
               "everything after -- are passed to the server.")
    parser.add_argument("--server", type=Path, help="the cua-s1-server binary")
    parser.add_argument("--model", help="base model directory (default: the server's bundled "
                                        "tiny model, tests/fixtures/tiny)")
    parser.add_argument("--adapter", help="adapter directory (default: the server's default)")
    parser.add_argument("--lock", help="weights lock file (default: the server's default)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0,
                        help="server port (default 0: any free port, read from its log)")
    parser.add_argument("--inputs", nargs="+", type=Path,
                        help="request bodies (default: bench/inputs/gpu-*.json, by size)")
    parser.add_argument("--iterations", type=int, default=30, help="timed requests per body")
    parser.add_argument("--warmup", type=int, default=3, help="untimed requests per body first")
    parser.add_argument("--out-dir", type=Path, default=Path("bench-out"),
                        help="where server.log, metrics.txt and bench.json go (bench-out)")
    parser.add_argument("--startup-timeout", type=float, default=900)
    parser.add_argument("--request-timeout", type=float, default=600)
    parser.add_argument("--gpu-poll-interval", type=float, default=0.5)
    parser.add_argument("--skip-server", action="store_true",
                        help="do not start the server (only --reference)")
    parser.add_argument("--reference", action="store_true",
                        help="also time the Transformers + PEFT reference, after the server")
    parser.add_argument("--reference-device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--reference-dtype", default="bf16", choices=["bf16", "fp32"])
    parser.add_argument("--reference-iterations", type=int,
                        help="timed reference requests per body (default: --iterations)")
    args, unknown = parser.parse_known_args(argv)
    extra = unknown + passthrough
    if args.reference_iterations is None:
        args.reference_iterations = args.iterations
    if args.iterations < 1 or args.warmup < 0 or args.reference_iterations < 1:
        parser.error("--iterations/--reference-iterations must be >= 1, --warmup >= 0")
    if not args.skip_server:
        if args.server is None:
            parser.error("--server is required (or --skip-server with --reference)")
        if not args.server.exists():
            parser.error(f"--server {args.server}: no such file")
    elif not args.reference:
        parser.error("--skip-server without --reference measures nothing")
    paths = args.inputs or default_inputs()
    if not paths:
        parser.error("no inputs: run tools/make_bench_inputs.py bench/inputs or pass --inputs")
    args.out_dir.mkdir(parents=True, exist_ok=True)

    def terminate(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, terminate)

    cases = load_cases(paths)
    report = {"schema": SCHEMA, "started": datetime.datetime.now().isoformat(timespec="seconds"),
              "host": platform.node(), "python": platform.python_version(),
              "commit": git_commit(), "gpu": gpu_info(), "argv": sys.argv,
              "settings": {"iterations": args.iterations, "warmup": args.warmup,
                           "reference_iterations": args.reference_iterations,
                           "server_args": extra},
              "cases": [], "problems": []}
    log(f"bench: {len(cases)} input(s): {', '.join(c['name'] for c in cases)}; "
        f"{args.warmup} warmup + {args.iterations} timed each; out {args.out_dir}")
    problems = report["problems"]
    code = 0
    try:
        if not args.skip_server:
            try:
                run_server_phase(args, extra, args.out_dir, cases, report, problems)
            except ServerFailure as error:
                log(f"FAILED: {error}")
                report["failure"] = str(error)
                code = 2
        if code == 0 and args.reference:
            log(f"reference: starting ({args.reference_device}, {args.reference_dtype})")
            try:
                run_reference(args, cases, report)
            except Exception as error:  # report it, keep our numbers
                import traceback
                traceback.print_exc()
                report.setdefault("reference", {})["error"] = repr(error)
                code = 1
    except KeyboardInterrupt:
        report["failure"] = "interrupted"
        code = 130
    except SystemExit as stop:
        report["failure"] = f"terminated ({stop.code})"
        code = stop.code if isinstance(stop.code, int) else 1
    if problems:
        log(f"{len(problems)} invalid answer(s); first ones:")
        for line in problems[:10]:
            log("  " + line)
        code = code or 1
    lines, rows = table(report)
    report["table"] = rows
    notes = footer(report)
    report["markdown"] = "\n".join(lines + [""] + notes)
    report["exit_code"] = code
    out = args.out_dir / "bench.json"
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    log("")
    log("\n".join(lines))
    log("")
    log("\n".join(notes))
    log(f"\nwrote {out}; exit code {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
