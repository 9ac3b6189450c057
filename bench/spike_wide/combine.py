"""Median over several runs of spike_wide's table: `python3 combine.py run1.txt run2.txt ...`.

Prints one markdown table: per row the median ns/element over the runs, its range, GB/s (8
bytes an element) and the ratio weft JIT time / this (from the medians).
"""
import re
import statistics
import sys
from collections import OrderedDict

rows = OrderedDict()
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"\| (l2|ELU) \(rounds \d+\) \| 2\^(\d+) \| (.+?) \| ([\d.]+) \|", line)
        if m:
            rows.setdefault((m[1], int(m[2]), m[3]), []).append(float(m[4]))
print(f"| body | n | variant | ns/elem (median of {len(sys.argv) - 1} runs) | range | GB/s | vs weft JIT |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
weft = {}
for (body, p, name), v in rows.items():
    med = statistics.median(v)
    if name.startswith("weft JIT"):
        weft[(body, p)] = med
    print(f"| {body} | 2^{p} | {name} | {med:.3f} | {min(v):.3f}–{max(v):.3f} | "
          f"{8 / med:.1f} | {weft[(body, p)] / med:.2f}x |")
