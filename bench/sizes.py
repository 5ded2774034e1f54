#!/usr/bin/env python3
"""Files over 1,000 lines of code before their test module, and functions over 150 lines, in src/ (a brace count, exact to a line or two).

    python3 bench/sizes.py [ROOT]
"""
import re, sys
from pathlib import Path
FILE_LIMIT, FN_LIMIT = 1000, 150
root = Path(sys.argv[1] if len(sys.argv) > 1 else ".") / "src"
files, fns = [], []
fn_re = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')
for p in sorted(root.rglob("*.rs")):
    lines = p.read_text().split("\n")
    code = len(lines)
    for i, l in enumerate(lines):
        if re.match(r'^#\[cfg\(test\)\]', l):
            code = i; break
    files.append((code, str(p)))
    i = 0
    while i < code:
        m = fn_re.match(lines[i])
        if m:
            depth, started, j = 0, False, i
            while j < code:
                s = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j])
                s = re.sub(r"'(\\.|[^'\\])'", "''", s)
                s = s.split("//")[0]
                for ch in s:
                    if ch == '{': depth += 1; started = True
                    elif ch == '}': depth -= 1
                if started and depth == 0: break
                if not started and s.rstrip().endswith(';'): break
                j += 1
            if started:
                fns.append((j - i + 1, f"{p}:{i+1}", m.group(6)))
        i += 1
files.sort(reverse=True); fns.sort(reverse=True)
print("files over", FILE_LIMIT, "lines (code before the test module):")
for n, p in files:
    if n > FILE_LIMIT: print(f"  {n:6} {p}")
print("largest file:", files[0])
print("functions over", FN_LIMIT, "lines:")
for n, p, name in fns:
    if n > FN_LIMIT: print(f"  {n:6} {name} {p}")
print("longest function:", fns[0])
