# Rewrites every whole plan/check/diagnose transcript in README.md and in
# docs/*.md with what the release binary prints now (tests/cli/docs.rs checks
# them byte for byte).
#   cargo build --release && python3 benches/readme_transcripts.py
import glob
import os
import subprocess

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
binary = os.path.join(root, 'target/release/headroom')


def regenerate(path):
    lines = open(path).read().split('\n')
    out = []
    i = 0
    changed = 0
    while i < len(lines):
        l = lines[i]
        out.append(l)
        if l.startswith('```') and i + 1 < len(lines) and lines[i + 1].startswith('$ headroom '):
            j = i + 1
            while not lines[j].startswith('```'):
                j += 1
            block = lines[i + 1:j]
            args = block[0][len('$ headroom '):].split()
            whole = all(not b.startswith('$ ') and not b.lstrip().startswith('...') for b in block[1:])
            if args[0] in ('plan', 'check', 'diagnose') and whole and len(block) >= 2:
                r = subprocess.run([binary] + args, cwd=root, capture_output=True, text=True)
                new = [block[0]] + (r.stdout + r.stderr).rstrip().split('\n')
                if new != block:
                    changed += 1
                out.extend(new)
                out.append(lines[j])
                i = j + 1
                continue
        i += 1
    open(path, 'w').write('\n'.join(out))
    return changed


pages = [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
for page in pages:
    n = regenerate(page)
    if n:
        print(os.path.relpath(page, root), 'changed', n)
