# Operand bytes a second over all SMs, tiles x (BLOCK_M + BLOCK_N) x K x itemsize over the
# measured time less LAUNCH_S (4.5 us), per square H200 matmul table: the most any config
# reached, and the table's best config's.
import pandas as pd, glob, re
from pathlib import Path
for p in sorted(glob.glob('tests/data/replay/h200-matmul*.csv')):
    name=Path(p).name
    if not re.match(r'h200-matmul(-fp16)?(-\d+k?)?\.csv$', name): continue
    t = pd.read_csv(p, comment='#'); ok = t[t.status=='ok'].copy()
    item = 4 if 'fp32' in name else 2
    fp = ok.footprint.iloc[0]; num = re.match(r'[\d.]+', fp).group()
    M = int(round((float(num) * {'MiB': 2**20, 'KiB': 1024, 'GiB': 2**30}[fp[len(num):]] / item) ** 0.5))
    ok['tiles'] = (-(-M // ok.BLOCK_M)) * (-(-M // ok.BLOCK_N))
    ok['rate'] = ok.tiles * (ok.BLOCK_M + ok.BLOCK_N) * M * item / (ok.median_ms / 1e3 - 4.5e-6) / 1e12
    top = ok.loc[ok.rate.idxmax()]; b = ok.loc[ok.median_ms.idxmin()]
    print(f"{name:28s} M={M} most {top.rate:.1f} TB/s ({top.BLOCK_M}x{top.BLOCK_N}x{top.BLOCK_K} s{top.num_stages} "
          f"block {top.block} grid {str(top.grid)[:5]}, {ok.median_ms.min()/top.median_ms:.2f} of the best); "
          f"best config {b.BLOCK_M}x{b.BLOCK_N}: {b.rate:.1f} TB/s")
