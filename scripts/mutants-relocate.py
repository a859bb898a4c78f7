#!/usr/bin/env python3
"""Re-locates core/mutants-equivalent.txt entries after edits shifted lines
(run from the repository root: ./scripts/mutants-relocate.py):
matches each entry to the current `cargo mutants --list` by file, column and
description, taking the nearest line. Prints what moved, and flags a move
with more than one candidate line for a reading by hand; rewrites the
file."""
import re, subprocess, sys, collections
path = 'core/mutants-equivalent.txt'
lines = open(path).read().splitlines()
entry = re.compile(r'^(\S+?):(\d+):(\d+): (.*?)  # (.*)$')
files = sorted({m.group(1) for l in lines if (m := entry.match(l))})
current = collections.defaultdict(list)
for f in files:
    package = {'transport-embassy/': 'herdless-embassy', 'transport-std/': 'herdless-std'}.get(
        f[:f.find('/') + 1], 'herdless-core')
    out = subprocess.run(['cargo', 'mutants', '-p', package, '--file', f, '--list'],
                         capture_output=True, text=True).stdout
    for l in out.splitlines():
        m = re.match(r'^(\S+?):(\d+):(\d+): (.*)$', l)
        if m:
            current[(m.group(1), int(m.group(3)), m.group(4))].append(int(m.group(2)))
new = []
for l in lines:
    m = entry.match(l)
    if not m:
        new.append(l); continue
    f, line, col, desc, why = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), m.group(5)
    cands = current.get((f, col, desc), [])
    if not cands:
        print('NOT FOUND:', l[:150], file=sys.stderr); new.append(l); continue
    best = min(cands, key=lambda c: abs(c - line))
    if best != line:
        print(f'{f}:{line}:{col} -> {best}: {desc}', file=sys.stderr)
        if len(cands) > 1:
            # The same mutation at the same column on other lines too (two
            # `if !...` in one function): the nearest need not be the one
            # the reason was written for.
            others = ', '.join(str(c) for c in sorted(cands) if c != best)
            print(f'  CHECK: also on line(s) {others}; read the reason against each', file=sys.stderr)
    new.append(f'{f}:{best}:{col}: {desc}  # {why}')
open(path, 'w').write('\n'.join(new) + '\n')
