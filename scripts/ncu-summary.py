#!/usr/bin/env python3
"""Sums `ncu --csv --page raw --metrics gpu__time_duration.sum` rows by kernel name.

Usage: ncu-summary.py NCU.csv [TOP]   prints the TOP (default 25) kernels by total GPU time.
"""
import csv
import sys
from collections import defaultdict


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # skip ncu's own log lines
    rows = list(csv.DictReader(lines))
    metric = next(k for k in rows[0] if "gpu__time_duration" in k)
    totals, counts = defaultdict(float), defaultdict(int)
    for row in rows:
        try:
            value = float(row[metric].replace(",", ""))
        except ValueError:
            continue  # the units row
        name = row.get("Kernel Name", "?")[:90]
        totals[name] += value
        counts[name] += 1
    unit = rows[0][metric] if rows else ""
    grand = sum(totals.values())
    print(f"total {grand:,.0f} {unit} over {sum(counts.values())} kernels")
    for name, value in sorted(totals.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{value / grand * 100:5.1f}%  {value:12,.0f}  x{counts[name]:<5} {name}")


if __name__ == "__main__":
    main()
