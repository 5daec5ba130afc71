#!/usr/bin/env python3
# Tables of docs/benchmarks.md's "Client round trip against the floor":
# reads the output files of separate runs of
#   interop.test -test.run '^$' -test.bench CallRoundTrip -test.benchtime 1000x
# and prints, per cell, each client's median [min..max] over the runs, and
# andon's ratio to the floor and to the faster of go-sdk and mcp-go, taken
# within each run, then median [min..max]. Usage: benchmarks-ratios.py r1.txt r2.txt ...
import sys, re, statistics as st
def parse(path):
    d = {}
    for line in open(path):
        if not line.startswith('Benchmark'): continue
        f = line.split()
        name = re.sub(r'-\d+$', '', f[0])
        m = {'ns/op': float(f[2])}
        for i in range(4, len(f)-1, 2):
            try: m[f[i+1]] = float(f[i])
            except: pass
        d[name] = m
    return d
runs = [parse(p) for p in sys.argv[1:]]
cells = []
for g in ['http-stateless/2026-07-28','http-stateful/2025-11-25','http-sse/2024-11-05','http-sse/2025-11-25']:
    cells.append((g.replace('http-','').replace('/',' '), lambda k,g=g: 'BenchmarkHTTPCallRoundTrip/%s/%s' % (g,k)))
for r in ['2026-07-28','2025-11-25']:
    cells.insert(0 if r=='2026-07-28' else 1, ('stdio '+r, lambda k,r=r: 'BenchmarkCallRoundTrip/%s/stdio/%s/callers=1' % (k,r)))
clients = [('andon','andon'),('gosdk','go-sdk'),('mcpgo','mcp-go'),('floor','floor')]
def agg(xs, fmt='%.0f'):
    if not xs: return '–'
    return (fmt % st.median(xs)) + ' [' + (fmt % min(xs)) + '..' + (fmt % max(xs)) + ']'
print('| transport, revision | client | µs/op | p50 µs | client CPU µs/op | B/op | allocs/op |')
print('|---|---|---|---|---|---|---|')
for title, key in cells:
    first = True
    for k, label in clients:
        vals = [d.get(key(k)) for d in runs]
        vals = [v for v in vals if v]
        if not vals: continue
        row = [agg([v['ns/op']/1000 for v in vals]), agg([v['p50-µs'] for v in vals]), agg([v['client-cpu-µs/op'] for v in vals]),
               '%.0f' % st.median([v['B/op'] for v in vals]), '%.0f' % st.median([v['allocs/op'] for v in vals])]
        print('| %s | %s | %s |' % (title if first else '', label, ' | '.join(row)))
        first = False
    for ref, lab in [('floor','**andon / floor**'), ('peer','**andon / faster peer**')]:
        rs = {m: [] for m in ['ns/op','p50-µs','client-cpu-µs/op']}
        for d in runs:
            a = d.get(key('andon'))
            if not a: continue
            for m in rs:
                if ref == 'floor':
                    f = d.get(key('floor'))
                    if f: rs[m].append(a[m]/f[m])
                else:
                    ps = [d[key(p)][m] for p in ['gosdk','mcpgo'] if d.get(key(p))]
                    rs[m].append(a[m]/min(ps))
        print('| | %s | %s | %s | %s | | |' % (lab, agg(rs['ns/op'],'%.2f'), agg(rs['p50-µs'],'%.2f'), agg(rs['client-cpu-µs/op'],'%.2f')))
