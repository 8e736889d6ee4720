"""Where the fitted slope first falls below a threshold before a run's goal, per table, from
a ``trust_stats.py`` log.

    python fires.py trust-stats-all.log [0.5 0.3 ...]
"""
import collections, re, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) seed (\d+) goal (\S+) \| ?(.*)", line)
    if not m:
        continue
    t, s, g, cells = m.groups()
    g = None if g == "None" else int(g)
    cs = []
    for c in cells.split():
        k, v = c.split(":"); b, raw, r = map(float, v.split("/")); cs.append((int(k), b))
    rows[t].append((int(s), g, cs))
for th in map(float, sys.argv[2:] or ["0.5", "0.3"]):
    print(f"== fitted slope below {th} before the goal (trials measured when it fires)")
    for t, runs in rows.items():
        before = [f for f, g in ((next((k for k, b in cs if b < th), None), g)
                                 for s, g, cs in runs) if f is not None and (g is None or f < g)]
        if before:
            print(f"  {t:45s} {len(before)}/{len(runs)} seeds: {sorted(before)}")
