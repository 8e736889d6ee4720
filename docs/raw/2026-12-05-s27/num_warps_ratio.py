import pandas as pd, glob, statistics
from pathlib import Path
rows=[]
for p in sorted(glob.glob('/work/wt-mm/tests/data/replay/h200-matmul*.csv')):
    t = pd.read_csv(p, comment='#'); ok = t[t.status=='ok']
    if 'block' not in ok: continue
    others=[c for c in ok.columns if c not in ('status','median_ms','samples_ms','block')]
    pv = ok.pivot_table(index=others, columns='block', values='median_ms', aggfunc='first').dropna()
    if 256 not in pv or 128 not in pv: continue
    pv = pv.reset_index(); pv['r']=pv[256]/pv[128]
    g = pv.groupby(['BLOCK_M','BLOCK_N'])['r'].median()
    print(Path(p).name, ' '.join(f"{a}x{b}:{v:.2f}" for (a,b),v in g.items()))
