#!/bin/bash
# Regenerates user_mode_runs.csv by running SCALE-Sim v2 itself (README.md beside this file).
# Usage: run_scalesim.sh <scale-sim-v2 work tree at the commit in README.md> <output csv>
# Needs python3 with numpy, pandas and tqdm (Debian: python3-numpy python3-pandas python3-tqdm).
set -euo pipefail
src=$(cd "$1" && pwd); out=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "case,dataflow,rows,cols,ifmap_kb,filter_kb,ofmap_kb,bandwidth,kind,m_or_h,n_or_w,k_or_r,s,c,filters,stride,total_cycles,stall_cycles" > "$out"
# case, rows, cols, ifmap kB, filter kB, ofmap kB, bandwidth, kind, layer fields
while IFS=, read -r name rows cols ikb fkb okb bw kind a b c d e f g; do
  for df in os ws is; do
    cfg=$work/$name-$df.cfg
    cat > "$cfg" <<CFG
[general]
run_name = $name-$df

[architecture_presets]
ArrayHeight:    $rows
ArrayWidth:     $cols
IfmapSramSzkB:   $ikb
FilterSramSzkB:  $fkb
OfmapSramSzkB:   $okb
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : $bw
Dataflow : $df
MemoryBanks:   1

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: $bw
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: $bw
FilterSRAMBankNum: 1
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: USER
CFG
    topo=$work/$name.csv
    if [ "$kind" = gemm ]; then
      printf 'Layer Name, M, N, K,\n%s, %s, %s, %s,\n' "$name" "$a" "$b" "$c" > "$topo"
      (cd "$src" && PYTHONPATH=. python3 scalesim/scale.py -c "$cfg" -t "$topo" -i gemm -p "$work/runs" >/dev/null)
    else
      printf 'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n%s, %s, %s, %s, %s, %s, %s, %s,\n' \
        "$name" "$a" "$b" "$c" "$d" "$e" "$f" "$g" > "$topo"
      (cd "$src" && PYTHONPATH=. python3 scalesim/scale.py -c "$cfg" -t "$topo" -i conv -p "$work/runs" >/dev/null)
    fi
    result=$(sed -n 2p "$work/runs/$name-$df/COMPUTE_REPORT.csv" | awk -F', *' '{print $2 "," $3}')
    echo "$name,$df,$rows,$cols,$ikb,$fkb,$okb,$bw,$kind,$a,$b,$c,$d,$e,$f,$g,$result" >> "$out"
  done
done <<'CASES'
gemm_partial_folds,8,16,1,1,1,4,gemm,100,20,30,,,,
gemm_uneven_srams,16,16,2,1,1,8,gemm,64,200,50,,,,
gemm_tall,8,8,1,1,1,2,gemm,300,12,40,,,,
conv3x3,16,16,2,2,2,8,conv,16,16,3,3,8,16,1
conv3x3_stride2_edge,8,8,1,1,1,2,conv,16,16,3,3,4,8,2
conv1x1,8,8,1,1,1,4,conv,10,10,1,1,16,24,1
CASES
