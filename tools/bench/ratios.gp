# ratios.gp: the plot of tools/bench.sh: for each test, tensorfs's median
# over the raw file's (x raw) and over ext4's (x ext4); 1 is a tie.
#
#   gnuplot -e "datafile='ratios.dat'; outfile='ratios.png'; subtitle='...'" ratios.gp
#
# ratios.dat (written by report.py): "test-id" x_raw x_ext4, NaN where
# there is no figure.
if (!exists("subtitle")) subtitle = ""
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
plot datafile using 2:xtic(1) title "x raw file", \
     '' using 3 title "x ext4 (loop, direct I/O)", \
     1 with lines lc rgb "black" lw 2 notitle
