import sys, math
sys.path.insert(0, '/work/wt-mm'); sys.path.insert(0, '/work/wt-mm/benchmarks')
from model_accuracy import launches
from table_sets import TABLES, table_path
from sweeper.kernels._guess import programs_per_sm
from sweeper.kernels.matmul import meta_of
import sweeper.kernels._guess as G
from sweeper.core import Config

def rows_of(name):
    kernel, launched = launches(table_path(name), TABLES[name])
    out = []
    for config, facts, seconds, speed in launched:
        g = kernel.model(config, facts)
        m = meta_of(config)
        out.append(dict(c=config, m=m, s=seconds, speed=speed, g=g, sms=facts.sms))
    return out

def desc(r):
    m, c = r['m'], r['c']
    M = int(round((c.problem.footprint/c.problem.itemsize)**0.5)) if False else None
    fits = programs_per_sm(c, m['BLOCK_M'], m['BLOCK_N'], m['BLOCK_K'], m['num_stages'])
    return f"{m['BLOCK_M']}x{m['BLOCK_N']}x{m['BLOCK_K']} s{m['num_stages']} w{c.block//32} grid{c.grid} fit{fits}"

def show(name, top=12):
    rows = rows_of(name)
    best = max(r['speed'] for r in rows)
    tbest = min(r['s'] for r in rows)
    by = sorted(rows, key=lambda r: -r['g'])
    for i, r in enumerate(by, 1): r['rank'] = i
    gtop = by[0]['g']
    print(f"== {name}: {len(rows)} rows, best {tbest*1e6:.2f} us")
    print(" within 2%:")
    for r in sorted(rows, key=lambda r: -r['speed']):
        if r['speed'] >= 0.98*best:
            print(f"  rank {r['rank']:3d} meas {r['speed']/best:.3f} t={r['s']*1e6:6.2f}us model {1e6/r['g']:6.2f}us rel {r['g']/gtop:.3f}  {desc(r)}")
    print(" model top:")
    for r in by[:top]:
        print(f"  rank {r['rank']:3d} meas {r['speed']/best:.3f} t={r['s']*1e6:6.2f}us model {1e6/r['g']:6.2f}us rel {r['g']/gtop:.3f}  {desc(r)}")
    return rows

if __name__ == '__main__':
    for n in sys.argv[1:]:
        show(n, 15)
