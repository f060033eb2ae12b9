# chart.gp - throughput and latency by concurrency (bench/run.sh runs it
# in the results directory with -e "chart='/path/results.png'").
# Data: throughput.dat and latency.dat (columns: conc direct proxy orgw
# portkey; NaN where a path was not run), seq.dat (index name median_ms).

if (!exists("chart")) chart = "results.png"
if (chart[strlen(chart)-3:] eq ".svg") {
	set terminal svg size 1200,420 dynamic font "sans,11"
} else {
	set terminal pngcairo size 1200,420 font "sans,10"
}
set output chart
set termoption noenhanced

set multiplot layout 1,3 title "orgw vs direct, bare lighttpd proxy and Portkey (loopback, OpenRouter double)"
set key top left
set grid
set logscale x 2
set xlabel "concurrent connections"
set style line 1 lc rgb "#777777" lw 2 pt 7
set style line 2 lc rgb "#1f77b4" lw 2 pt 5
set style line 3 lc rgb "#d62728" lw 3 pt 9
set style line 4 lc rgb "#2ca02c" lw 2 pt 11

set title "throughput (req/s, higher is better)"
set key center right
set ylabel "requests / s"
set yrange [0:*]
plot "throughput.dat" u 1:2 w lp ls 1 t "direct", \
     ""               u 1:3 w lp ls 2 t "lighttpd mod_proxy", \
     ""               u 1:4 w lp ls 3 t "lighttpd + orgw", \
     ""               u 1:5 w lp ls 4 t "Portkey"

set title "median latency under load (ms, lower is better)"
set ylabel "ms (wrk p50)"
set key top left
plot "latency.dat" u 1:2 w lp ls 1 t "direct", \
     ""            u 1:3 w lp ls 2 t "lighttpd mod_proxy", \
     ""            u 1:4 w lp ls 3 t "lighttpd + orgw", \
     ""            u 1:5 w lp ls 4 t "Portkey"

unset logscale x
set title "sequential request latency (ms, median)"
set xlabel ""
set ylabel "ms"
set style fill solid 0.7
set boxwidth 0.6
set xrange [-0.6:3.6]
set key off
plot "seq.dat" u 1:3:xtic(2) w boxes lc rgb "#1f77b4", \
     ""        u 1:3:(sprintf("%.3f", $3)) w labels offset 0,0.8

unset multiplot
