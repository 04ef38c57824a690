/* tools/measure.h - timing for slimrun bench and the benchmarks in bench/
 * (header only): a monotonic clock, medians, and how many cores other
 * processes used while something was timed. */
#ifndef SLIM_TOOLS_MEASURE_H
#define SLIM_TOOLS_MEASURE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of t[0..n) (sorts t). */
static inline double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Machine-wide busy CPU seconds and this process's CPU seconds: the
 * difference over an interval, divided by its wall time, is how many cores
 * other processes used meanwhile (as ../shared/anchors/otherload.py and
 * torch_bench.py measure it; ~0 = the timing had the machine to itself). */
typedef struct bench_cpu {
    double busy, mine, wall;
} bench_cpu;

static inline bench_cpu bench_cpu_snapshot(void)
{
    bench_cpu s = {0, 0, bench_now()};
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        unsigned long long v[10] = {0}, sum = 0;
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8) {
            for (int i = 0; i < 8; i++) /* guest time is already in user */
                sum += v[i];
            s.busy = (double)(sum - v[3] - v[4]) / (double)sysconf(_SC_CLK_TCK);
        }
        fclose(f);
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        s.mine = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                 (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    return s;
}

static inline double bench_other_cores(bench_cpu a, bench_cpu b)
{
    double wall = b.wall - a.wall,
           v = ((b.busy - a.busy) - (b.mine - a.mine)) / (wall > 1e-9 ? wall : 1e-9);
    return v > 0 ? v : 0;
}

#endif
