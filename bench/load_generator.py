#!/usr/bin/env python3
"""Closed-loop load generator for cua-s1-server: N concurrent clients send request bodies for a
fixed count or duration and report throughput, latency percentiles and every status seen.

Each client is a thread with its own HTTP/1.1 keep-alive connection (http.client, TCP_NODELAY),
sending the next request as soon as the previous answer has been read (closed loop: the offered
load adapts to the server, so at capacity the queue limits, not the client, decide). A request
that gets no answer (connection reset, timeout) is counted as "lost" and its client reconnects.
The run fails (exit 1) when anything other than 200 and 503 comes back, a request is lost, a 503
lacks Retry-After, or a 200 body differs from the first 200 body of the same input beyond the
numbers it carries: answers are deterministic per pass composition, and a request packed with
others may differ from itself alone in its probabilities, by at most --tolerance (the largest
difference seen is reported).

Usage:
  bench/load_generator.py [--url http://127.0.0.1:8000] [--concurrency 64] [--requests 2000 |
      --duration 30] [--timeout 60] [--json OUT.json] BODY.json [BODY.json ...]
  (no BODY: tests/fixtures/prepare/requests/std-small.json, which the bundled tiny model answers)

Start the server separately, e.g. `build/src/cua-s1-server --backend cpu --max-queued-requests 4`.
Standard library only.
"""

import argparse
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse
from pathlib import Path

DEFAULT_BODY = Path(__file__).resolve().parent.parent / "tests/fixtures/prepare/requests/std-small.json"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bodies", nargs="*", type=Path, default=[DEFAULT_BODY])
    p.add_argument("--url", default="http://127.0.0.1:8000", help="server base URL")
    p.add_argument("--concurrency", type=int, default=64, help="concurrent clients (64)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--requests", type=int, default=2000, help="requests in all (2000)")
    group.add_argument("--duration", type=float, help="seconds to run instead of --requests")
    p.add_argument("--timeout", type=float, default=60, help="seconds to wait for one answer (60)")
    p.add_argument("--json", type=Path, help="also write the report as JSON here")
    p.add_argument("--tolerance", type=float, default=0.02,
                   help="largest difference allowed between the numbers (probabilities) of two "
                        "answers to the same input (0.02)")
    args = p.parse_args()
    if args.concurrency < 1:
        p.error("--concurrency must be at least 1")
    return args


class Tally:
    """Results shared by the clients (under one lock)."""

    def __init__(self, tolerance):
        self.tolerance = tolerance
        self.lock = threading.Lock()
        self.latencies = {}  # status -> [seconds]
        self.lost = 0
        self.problems = []
        self.first_ok_body = {}  # input index -> body
        self.first_ok_json = {}  # input index -> parsed body
        self.largest_difference = 0.0  # between numbers of 200 bodies of the same input

    def record(self, index, status, seconds, body, retry_after):
        with self.lock:
            self.latencies.setdefault(status, []).append(seconds)
            if status == 200:
                expected = self.first_ok_body.setdefault(index, body)
                if body != expected:
                    first = self.first_ok_json.setdefault(index, json.loads(expected))
                    difference = numbers_apart(first, json.loads(body))
                    if difference is None or difference > self.tolerance:
                        self.problems.append(
                            f"input {index}: a 200 body differs from the first one"
                            + ("" if difference is None else f" by {difference:.3g}"))
                    else:
                        self.largest_difference = max(self.largest_difference, difference)
            elif status == 503:
                if retry_after is None:
                    self.problems.append("a 503 without Retry-After")
            else:
                self.problems.append(f"status {status}: {body[:200]!r}")

    def record_lost(self, error):
        with self.lock:
            self.lost += 1
            if len(self.problems) < 50:
                self.problems.append(f"lost request: {error!r}")


def numbers_apart(a, b):
    """The largest difference between the numbers of two JSON values of the same shape (equal
    everything else), or None where their shapes or other values differ."""
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or a is None:
        return 0.0 if a == b else None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        parts = [numbers_apart(x, y) for x, y in zip(a, b)]
    elif isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        parts = [numbers_apart(a[k], b[k]) for k in a]
    else:
        return None
    return None if None in parts else max(parts, default=0.0)


def client(url, bodies, tally, take_ticket, timeout):
    connection = None
    while True:
        index = take_ticket()
        if index is None:
            break
        body = bodies[index % len(bodies)]
        started = time.perf_counter()
        try:
            if connection is None:
                connection = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=timeout)
                connection.connect()
                connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.request("POST", "/v1/systemone", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = response.read()
            tally.record(index % len(bodies), response.status, time.perf_counter() - started,
                         answer, response.getheader("Retry-After"))
            if response.getheader("Connection", "").lower() == "close":
                connection.close()
                connection = None
        except (OSError, http.client.HTTPException) as error:
            tally.record_lost(error)
            if connection is not None:
                connection.close()
            connection = None
    if connection is not None:
        connection.close()


def percentile(sorted_values, fraction):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def main():
    args = parse_args()
    url = urllib.parse.urlsplit(args.url)
    bodies = [path.read_bytes() for path in args.bodies]
    tally = Tally(args.tolerance)
    counter_lock = threading.Lock()
    issued = [0]
    stop_at = time.perf_counter() + args.duration if args.duration else None

    def take_ticket():
        with counter_lock:
            if stop_at is None and issued[0] >= args.requests:
                return None
            if stop_at is not None and time.perf_counter() >= stop_at:
                return None
            issued[0] += 1
            return issued[0] - 1

    print(f"load: {args.concurrency} clients, "
          f"{f'{args.duration} s' if args.duration else f'{args.requests} requests'}, "
          f"{len(bodies)} bodies, {args.url}", file=sys.stderr)
    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(url, bodies, tally, take_ticket, args.timeout))
               for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started

    report = {"concurrency": args.concurrency, "requests": issued[0], "seconds": round(elapsed, 3),
              "throughput_per_s": round(issued[0] / elapsed, 2), "lost": tally.lost, "statuses": {}}
    print(f"{issued[0]} requests in {elapsed:.2f} s: {issued[0] / elapsed:.1f} requests/s, "
          f"{tally.lost} lost")
    print("| status | count | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
    for status in sorted(tally.latencies):
        values = sorted(tally.latencies[status])
        row = {"count": len(values), "p50_ms": round(percentile(values, 0.5) * 1e3, 2),
               "p99_ms": round(percentile(values, 0.99) * 1e3, 2), "max_ms": round(values[-1] * 1e3, 2)}
        report["statuses"][str(status)] = row
        print(f"| {status} | {row['count']} | {row['p50_ms']} | {row['p99_ms']} | {row['max_ms']} |")
    report["largest_difference"] = tally.largest_difference
    print(f"largest difference between answers to the same input: {tally.largest_difference:.3g}")
    report["problems"] = tally.problems
    for problem in tally.problems[:20]:
        print("problem:", problem, file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 1 if tally.problems or tally.lost else 0


if __name__ == "__main__":
    sys.exit(main())
