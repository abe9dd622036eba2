# ratios.gp: the plot of tools/bench.sh: for each test, each tensorfs
# target's median over the raw file's (x raw) and over ext4's (x ext4); 1
# is a tie.
#
#   gnuplot -e "datafile='ratios.dat'; outfile='ratios.png'; ncols=3; subtitle='...'" ratios.gp
#
# ratios.dat (written by report.py): a header line naming the columns,
# then "test-id" and x_raw, x_ext4 of each tensorfs target, NaN where
# there is no figure; ncols is the number of columns (1 + 2 per tensorfs
# target; default 3).
if (!exists("subtitle")) subtitle = ""
if (!exists("ncols")) ncols = 3
set terminal png size 1600,800
set output outfile
set title "tensorfs over the raw file and over ext4 (median; higher is faster)\n".subtitle
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -60 nomirror
set ytics nomirror
set grid ytics
set yrange [0:*]
set ylabel "ratio"
set key top right
set datafile missing "NaN"
plot for [i=2:ncols] datafile using i:xtic(1) title columnheader(i), \
     1 with lines lc rgb "black" lw 2 notitle
