/*
 * tools/cmd_bench.c - `slimrun bench`: how fast a model trains and infers on
 * this machine, as `caffe time` tells it for Caffe.
 *
 * A zoo model (or a model file) is built at the given batch, compiled for a
 * training step (forward, loss, backward, optimizer update) and for inference,
 * fed random images and labels once, and run: warm-up runs first, then timed
 * runs (at least --iterations, until --budget seconds are used). Reported per
 * mode: the median time per iteration, images/s, GFLOP/s (2 FLOPs per
 * multiply-add of the conv and fully-connected layers; a training step counts
 * three forward passes, as ../shared/anchors/torch_bench.py does) and its share
 * of the machine's fp32 peak, where the time goes per op kind and phase (per
 * node with --per_op: the engine's per-node timing, as `slimrun profile`
 * reads it), the memory the compiler planned (slim_graph_plan) beside the peak
 * resident memory the process actually reached (VmHWM), and how many cores
 * other processes used meanwhile.
 *
 * The two modes run one after the other in the same process, each on a model
 * of its own: the training program and its model are freed and the process's
 * peak RSS is reset (/proc/self/clear_refs) before inference is measured.
 */
#include "tools/cli.h"
#include "tools/measure.h"

#include <slim/model.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

typedef struct bench_cli {
    const char *model_name, *model_path, *mode, *json, *optimizer;
    int batch_size, num_threads, num_classes, image_size, iterations, warmup;
    double budget, peak, weight_decay, learning_rate;
    bool per_op;
    bool no_fusion;
    bool scaling;
    uint64_t seed;
    const char *const *plugins;
    int n_plugins;
    const char *const *defines;
    int n_defines;
} bench_cli;

#define B(f) offsetof(bench_cli, f)
static const flag_def bench_flags[] = {
    {"model_name", FLAG_STR, B(model_name), 0, "a zoo model (resnet_v1_50, vgg_16, ...)"},
    {"model", FLAG_STR, B(model_path), 0, "or a model file (path/to/model.yaml)"},
    {"batch_size", FLAG_INT, B(batch_size), 0, "images per iteration (32)"},
    {"num_threads", FLAG_INT, B(num_threads), 0, "threads of the model (1)"},
    {"mode", FLAG_STR, B(mode), 0, "train, inference or both (both)"},
    {"iterations", FLAG_INT, B(iterations), 0, "timed iterations at least (5)"},
    {"warmup", FLAG_INT, B(warmup), 0, "untimed iterations first (2)"},
    {"budget", FLAG_DBL, B(budget), 0,
     "seconds of timed iterations per mode, beyond --iterations (5)"},
    {"peak", FLAG_DBL, B(peak), 0,
     "the fp32 peak in GFLOP/s for the percentages (0: measure it, < 0: none)"},
    {"per_op", FLAG_BOOL, B(per_op), 0, "also every node's time, slowest first"},
    {"no_fusion", FLAG_BOOL, B(no_fusion), 0,
     "inference: keep batch_norm and relu nodes apart from the conv2d before them"},
    {"scaling", FLAG_BOOL, B(scaling), 0,
     "also time a 1-thread copy, alternating iterations: the speed-up over 1 thread"},
    {"json", FLAG_STR, B(json), 0, "write the results as JSON to this file"},
    {"optimizer", FLAG_STR, B(optimizer), 0,
     "update op of the training step: momentum (0.9), sgd, adam, rmsprop, ... (momentum)"},
    {"learning_rate", FLAG_DBL, B(learning_rate), 0, "(0.01)"},
    {"weight_decay", FLAG_DBL, B(weight_decay), 0, "L2 weight decay (< 0: the model file's; -1)"},
    {"num_classes", FLAG_INT, B(num_classes), 0, "override the model's class count"},
    {"image_size", FLAG_INT, B(image_size), 0, "override the model's input size"},
    {"seed", FLAG_U64, B(seed), 0, "initial weights and the random input (0)"},
    {"plugin", FLAG_LIST, B(plugins), B(n_plugins), "load an op plugin first; repeatable"},
    {"set", FLAG_DEFINES, B(defines), B(n_defines),
     "override a var: of the model file, NAME=VALUE (depth_multiplier=0.5); repeatable"},
};
#define N_BENCH_FLAGS ((int)(sizeof bench_flags / sizeof bench_flags[0]))

static const char bench_usage[] =
    "usage: slimrun bench (--model_name=NAME | --model=FILE.yaml) [--batch_size=N]\n"
    "                     [--num_threads=N] [--mode=train|inference|both] [--per_op]\n"
    "                     [--scaling] [--json=FILE] [flags]\n\n"
    "Times a model's training step and inference on random input: ms per iteration\n"
    "(median after warm-up), images/s, GFLOP/s and % of the fp32 peak, where the time\n"
    "goes per op, the planned memory and the process's peak resident memory.";

/* ---- the machine: peak FLOP rate, resident memory ------------------------------- */

typedef struct peak_job {
    double seconds, flops;
} peak_job;

/* Twelve chains of FMAs (two FMA ports of 4-cycle latency need eight), each
 * from its own starting value and passed through an empty asm statement every
 * iteration: chains the compiler can prove equal it computes once (the first
 * version of this loop started five chains from one value and five from
 * another, was folded to two chains, and reported 1.4x the real peak). */
#define PEAK_CHAINS 12
#if defined(__AVX512F__)
typedef __m512 pv;
#define PEAK_SET1 _mm512_set1_ps
#define PEAK_FMA _mm512_fmadd_ps
#define PEAK_LANES 16
#define OPAQUE(v) ({ __asm__ volatile("" : "+v"(v)); })
#elif defined(__FMA__)
typedef __m256 pv;
#define PEAK_SET1 _mm256_set1_ps
#define PEAK_FMA _mm256_fmadd_ps
#define PEAK_LANES 8
#define OPAQUE(v) ({ __asm__ volatile("" : "+x"(v)); })
#else
typedef float pv;
#define PEAK_SET1(x) (x)
#define PEAK_FMA(x, y, z) ((x) * (y) + (z))
#define PEAK_LANES 1
#define OPAQUE(v) ({ __asm__ volatile("" : "+g"(v)); })
#endif

static void *peak_worker(void *arg)
{
    peak_job *j = arg;
    const long chunk = 1L << 14;
    double t0 = bench_now(), t;
    long n = 0;
    pv m = PEAK_SET1(0.999999f), c = PEAK_SET1(1e-7f);
#define PEAK_INIT(k) a##k = PEAK_SET1(1.0f + 0.01f * k)
    pv PEAK_INIT(0), PEAK_INIT(1), PEAK_INIT(2), PEAK_INIT(3), PEAK_INIT(4), PEAK_INIT(5),
        PEAK_INIT(6), PEAK_INIT(7), PEAK_INIT(8), PEAK_INIT(9), PEAK_INIT(10), PEAK_INIT(11);
#define PEAK_STEP(k) a##k = PEAK_FMA(a##k, m, c), OPAQUE(a##k)
    do {
        for (long i = 0; i < chunk; i++) {
            PEAK_STEP(0), PEAK_STEP(1), PEAK_STEP(2), PEAK_STEP(3), PEAK_STEP(4), PEAK_STEP(5);
            PEAK_STEP(6), PEAK_STEP(7), PEAK_STEP(8), PEAK_STEP(9), PEAK_STEP(10), PEAK_STEP(11);
        }
        n += chunk;
    } while ((t = bench_now() - t0) < 0.1);
    pv s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
    float v[PEAK_LANES];
    memcpy(v, &s, sizeof v);
    volatile float sink = v[0];
    (void)sink;
    j->flops = (double)n * PEAK_CHAINS * PEAK_LANES * 2;
    j->seconds = t;
    return NULL;
}

/* This thread's CPU seconds: time it was running, not time it waited for a
 * core held by other work. */
static double thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The core clock in GHz, from a chain of dependent integer adds (one cycle
 * each on every x86-64 core), the best of five 20 ms runs; 0 elsewhere. Each
 * run takes the shorter of its wall time and its CPU time: a busy machine
 * stretches the wall time (the thread waits for a core), and a VM's CPU
 * time accounting reads up to ~15% long on an idle one. */
static double clock_ghz(void)
{
#if defined(__x86_64__)
    double best = 0;
    for (int r = 0; r < 5; r++) {
        unsigned long x = 0, y = 1, n = 0;
        double w0 = bench_now(), c0 = thread_seconds(), t;
        do {
            /* register operands: newer cores fold add-immediate chains at rename */
            for (int i = 0; i < 1000; i++)
                __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                                 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                                 "add %1, %0\n\tadd %1, %0"
                                 : "+r"(x)
                                 : "r"(y));
            n += 10000;
        } while ((t = bench_now() - w0) < 0.02);
        double c = thread_seconds() - c0;
        if (c > 0 && c < t)
            t = c;
        if (n / t * 1e-9 > best)
            best = n / t * 1e-9;
    }
    return best;
#else
    return 0;
#endif
}

/* The most fp32 FLOPs one core can start per cycle with this build's vectors:
 * two FMA ports of PEAK_LANES lanes, two FLOPs each. */
#define PEAK_FLOP_PER_CYCLE (2 * 2 * PEAK_LANES)

/* Whether a peak of nth threads at ghz reads under 3/4 of what a core's
 * vectors allow: some core was held by other work while it was measured. */
static bool peak_held(double peak, int nth, double ghz)
{
    return ghz > 0 && peak / nth / ghz < 0.75 * PEAK_FLOP_PER_CYCLE;
}

/* GFLOP/s of nth threads running FMAs at once, the best of three 0.1 s runs
 * (a VM's other vCPU is sometimes taken away for a moment; 0 when threads
 * cannot start). */
static double measure_peak(int nth)
{
    double best = 0;
    for (int run = 0; run < 3; run++) {
        pthread_t th[256];
        peak_job jobs[256] = {{0}};
        int started = 0;
        for (int i = 1; i < nth; i++)
            if (pthread_create(&th[i], NULL, peak_worker, &jobs[i]) == 0)
                started = i;
            else
                break;
        peak_worker(&jobs[0]);
        for (int i = 1; i <= started; i++)
            pthread_join(th[i], NULL);
        if (started < nth - 1)
            return 0;
        double g = 0;
        for (int i = 0; i < nth; i++)
            g += jobs[i].seconds > 0 ? jobs[i].flops / jobs[i].seconds * 1e-9 : 0;
        if (g > best)
            best = g;
    }
    return best;
}

/* A "VmHWM:"/"VmRSS:" line of /proc/self/status in bytes (0 if absent). */
static size_t proc_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    size_t v = 0, l = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, l)) {
            v = (size_t)strtoull(line + l, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return v;
}

/* Peak resident memory so far (VmHWM; ru_maxrss where /proc is absent). */
static size_t peak_rss(void)
{
    size_t v = proc_status_bytes("VmHWM:");
    if (!v) {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0)
            v = (size_t)ru.ru_maxrss * 1024;
    }
    return v;
}

/* Start the peak over from the current resident size (Linux >= 4.0). */
static bool reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* ---- one mode --------------------------------------------------------------------- */

typedef struct node_row {
    const char *name, *op;
    int phase;
    double ms, flop; /* per iteration; flop 0 = unknown */
    double ms1;      /* --scaling: the 1-thread program's ms per iteration (0: none) */
} node_row;

typedef struct mode_result {
    char model_name[256], model_path[1024]; /* the info's strings, which outlive the model */
    bool train;
    int iters, warmup;
    double ms_median, ms_min, ms_max, img_s, gflop_iter, gflops, other;
    int pairs;                  /* --scaling: alternating pairs timed (0: none) */
    double ms_median1, speedup; /* the 1-thread program's median; median of per-pair ratios */
    double phase_ms[4];
    slim_program_stats plan, compiled;
    size_t base_rss, peak_rss;
    bool rss_reset;
    int n_nodes, n_kinds;
    node_row *nodes, *kinds; /* slowest first; names point into names */
    char *names;
} mode_result;

static void mode_result_fini(mode_result *r)
{
    free(r->nodes);
    free(r->kinds);
    free(r->names);
}

static int by_ms_desc(const void *a, const void *b)
{
    double x = ((const node_row *)a)->ms, y = ((const node_row *)b)->ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Mean per-node times over the timed runs -> rows per node and per op kind. */
static int collect_nodes(mode_result *r, const slim_model *m, const slim_node_time *t, int n,
                         const double *acc, const double *acc1, int runs, int batch)
{
    size_t pool = 1;
    for (int k = 0; k < n; k++)
        pool += strlen(t[k].name ? t[k].name : "?") + strlen(t[k].op ? t[k].op : "?") + 2;
    r->nodes = calloc((size_t)n + 1, sizeof *r->nodes);
    r->kinds = calloc((size_t)n + 1, sizeof *r->kinds);
    r->names = malloc(pool);
    if (!r->nodes || !r->kinds || !r->names)
        return -1;
    char *sp = r->names;
    for (int k = 0; k < n; k++) {
        node_row *o = &r->nodes[r->n_nodes++];
        const char *nm = t[k].name ? t[k].name : "?", *op = t[k].op ? t[k].op : "?";
        o->name = strcpy(sp, nm);
        sp += strlen(nm) + 1;
        o->op = strcpy(sp, op);
        sp += strlen(op) + 1;
        o->phase = t[k].phase >= 0 && t[k].phase < 4 ? t[k].phase : 0;
        o->ms = 1e3 * acc[k] / runs;
        o->ms1 = acc1 ? 1e3 * acc1[k] / runs : 0;
        r->phase_ms[o->phase] += o->ms;
        /* forward: 2 FLOPs per multiply-add; backward: data and filter gradients */
        int64_t madds = o->phase <= 1 ? slim_model_step_madds(m, o->name) : 0;
        o->flop = 2.0 * (double)madds * batch * (o->phase == 1 ? 2 : 1);
        int j = 0;
        while (j < r->n_kinds && (strcmp(r->kinds[j].op, o->op) || r->kinds[j].phase != o->phase))
            j++;
        if (j == r->n_kinds)
            r->kinds[r->n_kinds++] = (node_row){o->op, o->op, o->phase, 0, 0, 0};
        r->kinds[j].ms += o->ms;
        r->kinds[j].ms1 += o->ms1;
        r->kinds[j].flop += o->flop;
    }
    qsort(r->nodes, (size_t)r->n_nodes, sizeof *r->nodes, by_ms_desc);
    qsort(r->kinds, (size_t)r->n_kinds, sizeof *r->kinds, by_ms_desc);
    return 0;
}

/* Random images in [-1, 1) and labels in [0, classes). */
static int feed(slim_program *p, int classes, uint64_t seed, slim_error *err)
{
    slim_tensor x, y;
    if (slim_program_input(p, "images", &x, err))
        return 1;
    float *xd = x.data;
    for (int64_t i = 0; i < slim_shape_numel(&x.shape); i++)
        xd[i] = 2 * slim_rand_uniform(seed, 11, (uint64_t)i) - 1;
    if (slim_program_input(p, "labels", &y, NULL) == SLIM_OK) {
        int32_t *yd = y.data;
        for (int64_t i = 0; i < slim_shape_numel(&y.shape); i++)
            yd[i] = (int32_t)(slim_rand_u64(seed, 12, (uint64_t)i) % (uint64_t)classes);
    }
    return 0;
}

static bool same_plan(const slim_program_stats *a, const slim_program_stats *b)
{
    return a->arena_bytes == b->arena_bytes && a->naive_bytes == b->naive_bytes &&
           a->param_bytes == b->param_bytes && a->slot_bytes == b->slot_bytes &&
           a->n_forward == b->n_forward && a->n_backward == b->n_backward &&
           a->n_update == b->n_update;
}

/* A model loaded, planned, compiled and fed, with what owns it. */
typedef struct bench_prog {
    slim_registry *reg;
    slim_model *m;
    slim_program *p;
    slim_attrs *oa;
} bench_prog;

static void prog_close(bench_prog *b)
{
    slim_attrs_free(b->oa);
    slim_program_free(b->p);
    slim_model_free(b->m);
    slim_registry_free(b->reg);
    memset(b, 0, sizeof *b);
}

/* Open c's model for training or inference on nth threads; the planner's and
 * the compiled program's memory into plan and compiled. 0 or 1 (err set). */
static int prog_open(const bench_cli *c, const char *path, bool train, int nth, bench_prog *b,
                     slim_program_stats *plan, slim_program_stats *compiled, slim_error *err)
{
    memset(b, 0, sizeof *b);
    if (slim_registry_new(&b->reg, err) != SLIM_OK)
        return 1;
    slim_model_opts mo = {.batch_size = c->batch_size,
                          .num_classes = c->num_classes,
                          .image_size = c->image_size,
                          .training = train,
                          .weight_decay = (float)c->weight_decay,
                          .plugins = c->plugins,
                          .n_plugins = c->n_plugins,
                          .defines = c->defines,
                          .n_defines = c->n_defines};
    if (slim_model_load(b->reg, path, &mo, &b->m, err) != SLIM_OK)
        return 1;
    slim_graph *g = slim_model_graph(b->m);
    char opname[64];
    snprintf(opname, sizeof opname, "%s_update", c->optimizer);
    b->oa = slim_attrs_new();
    if (!b->oa) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return 1;
    }
    if (!strcmp(c->optimizer, "momentum"))
        slim_attrs_set_float(b->oa, "momentum", 0.9);
    slim_compile_opts co = {.training = train,
                            .num_threads = nth,
                            .optimizer = train ? opname : NULL,
                            .optimizer_attrs = train ? b->oa : NULL,
                            .no_fusion = c->no_fusion};
    if (slim_graph_plan(g, &co, plan, err) != SLIM_OK ||
        slim_graph_init_params(g, c->seed, err) != SLIM_OK ||
        slim_graph_compile(g, &co, &b->p, err) != SLIM_OK)
        return 1;
    slim_program_get_stats(b->p, compiled);
    return feed(b->p, slim_model_get_info(b->m)->num_classes, c->seed, err);
}

/* One iteration of b: its seconds, or < 0 (err set); with acc, each of its
 * n nodes' seconds added to acc[node]. */
static double prog_step(const bench_cli *c, bench_prog *b, int64_t step, double *acc, int n,
                        slim_error *err)
{
    slim_run_opts ro = {.learning_rate = (float)c->learning_rate, .step = step, .seed = 1};
    double s = bench_now();
    if (slim_program_run(b->p, &ro, err) != SLIM_OK)
        return -1;
    double t = bench_now() - s;
    const slim_node_time *nt;
    if (acc && slim_program_times(b->p, &nt) == n)
        for (int k = 0; k < n; k++)
            acc[k] += nt[k].seconds;
    return t;
}

/* Whether two programs of one model list the same nodes in the same order. */
static bool same_nodes(slim_program *a, slim_program *b)
{
    const slim_node_time *ta, *tb;
    int n = slim_program_times(a, &ta);
    if (slim_program_times(b, &tb) != n)
        return false;
    for (int k = 0; k < n; k++)
        if (ta[k].phase != tb[k].phase || !ta[k].name != !tb[k].name ||
            (ta[k].name && strcmp(ta[k].name, tb[k].name)))
            return false;
    return true;
}

/* Load, plan, compile, feed and time one mode. Returns 0 or 1 (message printed). */
static int run_mode(const bench_cli *c, const char *path, bool train, mode_result *r,
                    slim_model_info *info)
{
    memset(r, 0, sizeof *r);
    r->train = train;
    r->rss_reset = reset_peak_rss();
    r->base_rss = proc_status_bytes("VmRSS:");
    const char *what = train ? "training" : "inference";
    slim_error err = {0};
    bench_prog main_p = {0}, one = {0};
    double *acc = NULL, *acc1 = NULL, *times = NULL, *times1 = NULL, *ratio = NULL;
    int rc = 1;
    if (prog_open(c, path, train, c->num_threads, &main_p, &r->plan, &r->compiled, &err))
        goto fail;
    *info = *slim_model_get_info(main_p.m);
    snprintf(r->model_name, sizeof r->model_name, "%s", info->name ? info->name : "");
    snprintf(r->model_path, sizeof r->model_path, "%s", info->path ? info->path : "");
    info->name = r->model_name; /* the model's own strings go with slim_model_free */
    info->path = r->model_path;
    if (!same_plan(&r->plan, &r->compiled))
        fprintf(stderr,
                "slimrun bench: warning: %s: slim_graph_plan (%zu-byte arena) and the "
                "compiled program (%zu) differ\n",
                what, r->plan.arena_bytes, r->compiled.arena_bytes);
    slim_program_set_profiling(main_p.p, true);
    const slim_node_time *nt;
    int n = slim_program_times(main_p.p, &nt);
    int cap = c->iterations > 1000 ? c->iterations : 1000;
    acc = calloc((size_t)n + 1, sizeof *acc);
    times = malloc((size_t)cap * sizeof *times);
    times1 = malloc((size_t)cap * sizeof *times1);
    ratio = malloc((size_t)cap * sizeof *ratio);
    if (!acc || !times || !times1 || !ratio) {
        snprintf(err.msg, sizeof err.msg, "out of memory");
        goto fail;
    }
    int64_t step = 0;
    for (int i = 0; i < c->warmup; i++)
        if (prog_step(c, &main_p, step++, NULL, 0, &err) < 0)
            goto fail;
    if (c->scaling) {
        /* The resident peak is the measured program's alone: taken before the
         * 1-thread copy exists (the warm-up has touched all of its memory). */
        r->peak_rss = peak_rss();
        slim_program_stats plan1, compiled1;
        if (prog_open(c, path, train, 1, &one, &plan1, &compiled1, &err))
            goto fail;
        slim_program_set_profiling(one.p, true);
        for (int i = 0; i < c->warmup; i++)
            if (prog_step(c, &one, i, NULL, 0, &err) < 0)
                goto fail;
        /* per-op speed-ups when both list the same nodes */
        if (same_nodes(main_p.p, one.p) && !(acc1 = calloc((size_t)n + 1, sizeof *acc1))) {
            snprintf(err.msg, sizeof err.msg, "out of memory");
            goto fail;
        }
    }
    bench_cpu c0 = bench_cpu_snapshot();
    double t0 = bench_now();
    while (r->iters < cap && (r->iters < c->iterations || bench_now() - t0 < c->budget)) {
        /* --scaling: pairs of one iteration each, the order alternating so
         * neither program always runs right after the other */
        bool one_first = c->scaling && r->iters % 2;
        double t1 = 0;
        if (one_first && (t1 = prog_step(c, &one, step, acc1, n, &err)) < 0)
            goto fail;
        double t = prog_step(c, &main_p, step, acc, n, &err);
        if (t < 0)
            goto fail;
        if (c->scaling && !one_first && (t1 = prog_step(c, &one, step, acc1, n, &err)) < 0)
            goto fail;
        step++;
        times1[r->iters] = t1;
        ratio[r->iters] = t > 0 ? t1 / t : 0;
        times[r->iters++] = t;
    }
    n = slim_program_times(main_p.p, &nt);
    r->other = bench_other_cores(c0, bench_cpu_snapshot());
    if (!c->scaling)
        r->peak_rss = peak_rss();
    r->warmup = c->warmup;
    r->ms_min = r->ms_max = 1e3 * times[0];
    for (int i = 0; i < r->iters; i++) {
        r->ms_min = 1e3 * times[i] < r->ms_min ? 1e3 * times[i] : r->ms_min;
        r->ms_max = 1e3 * times[i] > r->ms_max ? 1e3 * times[i] : r->ms_max;
    }
    r->ms_median = 1e3 * bench_median(times, r->iters);
    if (c->scaling) {
        r->pairs = r->iters;
        r->ms_median1 = 1e3 * bench_median(times1, r->iters);
        r->speedup = bench_median(ratio, r->iters);
    }
    r->img_s = c->batch_size / (r->ms_median * 1e-3);
    r->gflop_iter = 2.0 * (double)info->madds * c->batch_size * (train ? 3 : 1) * 1e-9;
    r->gflops = r->gflop_iter / (r->ms_median * 1e-3);
    if (collect_nodes(r, main_p.m, nt, n, acc, acc1, r->iters, c->batch_size)) {
        snprintf(err.msg, sizeof err.msg, "out of memory");
        goto fail;
    }
    rc = 0;
fail:
    if (rc)
        fprintf(stderr, "slimrun bench: %s: %s\n", what, err.msg[0] ? err.msg : "failed");
    free(acc);
    free(acc1);
    free(times);
    free(times1);
    free(ratio);
    prog_close(&one);
    prog_close(&main_p);
    return rc;
}

/* ---- output ----------------------------------------------------------------------- */

static const char *const PHASE[] = {"forward", "backward", "update", "grad-sum"};

static size_t planned_total(const slim_program_stats *s)
{
    return s->arena_bytes + s->param_bytes + s->slot_bytes;
}

static void print_rows(const node_row *rows, int n, int max, double total, double peak, bool node,
                       bool scaling)
{
    printf("  %-*s %-9s %10s %6s %9s%s%s\n", node ? 52 : 28, node ? "node (slowest first)" : "op",
           "phase", "ms/iter", "%", "GFLOP/s", peak > 0 ? "  % of peak" : "",
           scaling ? "  1 thread ms  speed-up" : "");
    for (int i = 0; i < n && i < max; i++) {
        const node_row *o = &rows[i];
        char label[160], gf[32] = "", pp[32] = "";
        if (node)
            snprintf(label, sizeof label, "%s (%s)", o->name, o->op);
        else
            snprintf(label, sizeof label, "%s", o->op);
        double g = o->flop > 0 && o->ms > 0 ? o->flop / (o->ms * 1e-3) * 1e-9 : 0;
        if (g > 0) {
            snprintf(gf, sizeof gf, "%.1f", g);
            if (peak > 0)
                snprintf(pp, sizeof pp, "  %8.0f%%", 100 * g / peak);
        }
        printf("  %-*.*s %-9s %10.3f %5.1f%% %9s%s", node ? 52 : 28, node ? 52 : 28, label,
               PHASE[o->phase], o->ms, total > 0 ? 100 * o->ms / total : 0, gf, pp);
        if (scaling)
            printf("%*s%12.3f %8.2fx", peak > 0 && !pp[0] ? 11 : 0, "", o->ms1,
                   o->ms > 0 ? o->ms1 / o->ms : 0);
        printf("\n");
    }
    if (n > max)
        printf("  (%d more)\n", n - max);
}

static void print_mode(const bench_cli *c, const mode_result *r, double peak)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    printf("\n%s (%s), %d timed iterations after %d warm-up:\n",
           r->train ? "training" : "inference",
           r->train ? "forward + loss + backward + update" : "forward", r->iters, r->warmup);
    printf("  %.2f ms/iter (median; min %.2f, max %.2f), %.2f images/s, %.1f GFLOP/s", r->ms_median,
           r->ms_min, r->ms_max, r->img_s, r->gflops);
    if (peak > 0)
        printf(" (%.0f%% of peak)", 100 * r->gflops / peak);
    printf("\n  forward %.2f ms, backward %.2f ms, update %.2f ms, gradient sums %.2f ms\n",
           r->phase_ms[0], r->phase_ms[1], r->phase_ms[2], r->phase_ms[3]);
    const slim_program_stats *s = &r->compiled;
    printf("  planned memory: %s arena (%s without reuse) + %s parameters + %s optimizer slots "
           "= %s\n",
           slim_cli_bytes(b1, sizeof b1, (double)s->arena_bytes),
           slim_cli_bytes(b2, sizeof b2, (double)s->naive_bytes),
           slim_cli_bytes(b3, sizeof b3, (double)s->param_bytes),
           slim_cli_bytes(b4, sizeof b4, (double)s->slot_bytes),
           slim_cli_bytes(b5, sizeof b5, (double)planned_total(s)));
    printf("  peak resident memory: %s (%s before the model); planned / peak = %.2f\n",
           slim_cli_bytes(b1, sizeof b1, (double)r->peak_rss),
           slim_cli_bytes(b2, sizeof b2, (double)r->base_rss),
           r->peak_rss ? (double)planned_total(s) / (double)r->peak_rss : 0);
    if (r->pairs)
        printf("  thread scaling: %.2fx over 1 thread (median of %d alternating pairs; 1 thread "
               "%.2f ms/iter, %d threads %.2f)\n",
               r->speedup, r->pairs, r->ms_median1, c->num_threads, r->ms_median);
    printf("  other processes used %.2f cores while timing\n\n", r->other);
    double total = r->phase_ms[0] + r->phase_ms[1] + r->phase_ms[2] + r->phase_ms[3];
    bool sc = r->pairs > 0 && r->n_kinds > 0 && r->kinds[0].ms1 > 0;
    print_rows(r->kinds, r->n_kinds, 40, total, peak, false, sc);
    if (c->per_op) {
        printf("\n");
        print_rows(r->nodes, r->n_nodes, r->n_nodes, total, peak, true, sc);
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_rows(FILE *f, const char *key, const node_row *rows, int n, bool node)
{
    fprintf(f, ",\n    \"%s\": [", key);
    for (int i = 0; i < n; i++) {
        const node_row *o = &rows[i];
        fprintf(f, "%s\n      {", i ? "," : "");
        if (node) {
            fprintf(f, "\"name\": ");
            json_str(f, o->name);
            fprintf(f, ", ");
        }
        fprintf(f, "\"op\": ");
        json_str(f, o->op);
        fprintf(f, ", \"phase\": \"%s\", \"ms\": %.4f, \"gflops\": %.2f", PHASE[o->phase], o->ms,
                o->flop > 0 && o->ms > 0 ? o->flop / (o->ms * 1e-3) * 1e-9 : 0.0);
        if (o->ms1 > 0)
            fprintf(f, ", \"ms_1thread\": %.4f", o->ms1);
        fprintf(f, "}");
    }
    fprintf(f, "\n    ]");
}

static void json_mode(FILE *f, const bench_cli *c, const mode_result *r, double peak)
{
    const slim_program_stats *s = &r->compiled;
    fprintf(f,
            "{\n    \"iterations\": %d, \"warmup\": %d, \"ms_median\": %.3f, \"ms_min\": %.3f, "
            "\"ms_max\": %.3f,\n    \"img_s\": %.3f, \"gflop_per_iter\": %.4f, \"gflops\": %.2f, "
            "\"pct_peak\": %.2f, \"other_cores\": %.3f,\n    \"forward_ms\": %.3f, "
            "\"backward_ms\": %.3f, \"update_ms\": %.3f, \"grad_sum_ms\": %.3f,\n    "
            "\"arena_bytes\": %zu, \"naive_bytes\": %zu, \"param_bytes\": %zu, \"slot_bytes\": "
            "%zu, \"planned_bytes\": %zu,\n    \"plan_only_arena_bytes\": %zu, \"plan_matches\": "
            "%s, \"peak_rss_bytes\": %zu, \"base_rss_bytes\": %zu, \"rss_reset\": %s,\n    "
            "\"n_forward\": %d, \"n_backward\": %d, \"n_update\": %d",
            r->iters, r->warmup, r->ms_median, r->ms_min, r->ms_max, r->img_s, r->gflop_iter,
            r->gflops, peak > 0 ? 100 * r->gflops / peak : 0.0, r->other, r->phase_ms[0],
            r->phase_ms[1], r->phase_ms[2], r->phase_ms[3], s->arena_bytes, s->naive_bytes,
            s->param_bytes, s->slot_bytes, planned_total(s), r->plan.arena_bytes,
            same_plan(&r->plan, s) ? "true" : "false", r->peak_rss, r->base_rss,
            r->rss_reset ? "true" : "false", s->n_forward, s->n_backward, s->n_update);
    if (r->pairs)
        fprintf(
            f,
            ",\n    \"scaling\": {\"speedup\": %.4f, \"pairs\": %d, \"ms_median_1thread\": %.3f}",
            r->speedup, r->pairs, r->ms_median1);
    json_rows(f, "ops", r->kinds, r->n_kinds, false);
    if (c->per_op)
        json_rows(f, "nodes", r->nodes, r->n_nodes, true);
    fprintf(f, "\n  }");
}

static int write_json(const bench_cli *c, const slim_model_info *info, const mode_result *res,
                      int n, double peak, const char *peak_src, double ghz)
{
    FILE *f = strcmp(c->json, "-") ? fopen(c->json, "w") : stdout;
    if (!f) {
        fprintf(stderr, "slimrun bench: cannot write %s\n", c->json);
        return 1;
    }
    fprintf(f, "{\n  \"model\": ");
    json_str(f, c->model_name ? c->model_name : info->name);
    fprintf(f, ", \"name\": ");
    json_str(f, info->name);
    fprintf(f,
            ", \"batch\": %d, \"threads\": %d, \"image_size\": %d, \"channels\": %d, "
            "\"num_classes\": %d,\n  \"params\": %lld, \"trainable_params\": %lld, "
            "\"fwd_gflop_per_img\": %.5f, \"peak_gflops\": %.1f, \"peak_source\": \"%s\", "
            "\"clock_ghz\": %.3f, \"peak_flop_per_cycle_max\": %d",
            c->batch_size, c->num_threads, info->image_size, info->channels, info->num_classes,
            (long long)info->n_params, (long long)info->n_trainable, 2e-9 * (double)info->madds,
            peak, peak_src, ghz, PEAK_FLOP_PER_CYCLE);
    for (int i = 0; i < n; i++) {
        fprintf(f, ",\n  \"%s\": ", res[i].train ? "train" : "inference");
        json_mode(f, c, &res[i], peak);
    }
    fprintf(f, "\n}\n");
    if (f != stdout && fclose(f) != 0) {
        fprintf(stderr, "slimrun bench: cannot write %s\n", c->json);
        return 1;
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static int run_bench(int argc, char **argv)
{
    bench_cli c = {.batch_size = 32,
                   .num_threads = 1,
                   .mode = "both",
                   .iterations = 5,
                   .warmup = 2,
                   .budget = 5,
                   .optimizer = "momentum",
                   .learning_rate = 0.01,
                   .weight_decay = -1};
    flags_result fr;
    memset(&fr, 0, sizeof fr);
    char msg[1024];
    if (flags_parse(bench_flags, N_BENCH_FLAGS, &c, argc, argv, 1, &fr, msg, sizeof msg)) {
        fprintf(stderr, "slimrun bench: %s\n", msg);
        return 2;
    }
    if (fr.help) {
        flags_usage(stdout, bench_usage, bench_flags, N_BENCH_FLAGS);
        return 0;
    }
    const char *bad = NULL;
    if (fr.n_pos)
        snprintf(msg, sizeof msg, "unexpected argument '%s' (flags are --name=value)", fr.pos[0]),
            bad = msg;
    else if (!c.model_name == !c.model_path)
        bad = "give a model: --model_name=NAME (a zoo model) or --model=FILE.yaml";
    else if (c.batch_size < 1)
        bad = "--batch_size must be at least 1";
    else if (c.num_threads < 1 || c.num_threads > 256)
        bad = "--num_threads must be in [1, 256]";
    else if (c.scaling && c.num_threads < 2)
        bad = "--scaling compares --num_threads with 1 thread: give --num_threads=2 or more";
    else if (strcmp(c.mode, "train") && strcmp(c.mode, "inference") && strcmp(c.mode, "both"))
        snprintf(msg, sizeof msg, "--mode=%s: expected train, inference or both", c.mode),
            bad = msg;
    else if (c.iterations < 1)
        bad = "--iterations must be at least 1";
    else if (c.warmup < 0 || c.budget < 0)
        bad = "--warmup and --budget cannot be negative";
    else if (c.num_classes < 0 || c.image_size < 0)
        bad = "--num_classes and --image_size cannot be negative";
    if (bad) {
        fprintf(stderr, "slimrun bench: %s\n", bad);
        return 2;
    }
    slim_error err = {0};
    char path[1024];
    if (slim_model_find(c.model_path ? c.model_path : c.model_name, path, sizeof path, &err) !=
        SLIM_OK) {
        fprintf(stderr, "slimrun bench: %s\n", err.msg);
        return 1;
    }
    if (strcmp(c.mode, "inference")) { /* the optimizer's update op must exist */
        slim_registry *reg;
        char opname[64];
        snprintf(opname, sizeof opname, "%s_update", c.optimizer);
        if (slim_registry_new(&reg, &err) != SLIM_OK) {
            fprintf(stderr, "slimrun bench: %s\n", err.msg);
            return 1;
        }
        const slim_op_desc *d = slim_registry_find(reg, opname);
        bool ok = d && (d->flags & SLIM_OP_UPDATE);
        slim_registry_free(reg);
        if (!ok) {
            fprintf(stderr,
                    "slimrun bench: --optimizer=%s: no update op '%s' (momentum, sgd, "
                    "adam, adagrad, adadelta, rmsprop, ftrl)\n",
                    c.optimizer, opname);
            return 2;
        }
    }
    double peak = c.peak, ghz = 0;
    const char *peak_src = "given";
    if (peak == 0) {
        peak = measure_peak(c.num_threads);
        ghz = clock_ghz();
        peak_src = "measured";
        /* A vCPU taken away for the whole measurement reads as a fraction of
         * the peak (once 16.4 FLOP per cycle per core of 32 on 2 threads,
         * and the step "138% of peak"): measure again, up to three more
         * times, while a core starts under 3/4 of what its vectors allow. */
        for (int r = 0; r < 3 && peak_held(peak, c.num_threads, ghz); r++) {
            double again = measure_peak(c.num_threads);
            peak = again > peak ? again : peak;
        }
    } else if (peak < 0) {
        peak = 0;
        peak_src = "none";
    }
    mode_result res[2];
    int n = 0, rc = 0;
    slim_model_info info = {0};
    bool modes[2] = {strcmp(c.mode, "inference") != 0, strcmp(c.mode, "train") != 0};
    for (int k = 0; k < 2 && !rc; k++) {
        if (!modes[k])
            continue;
        slim_model_info mi;
        rc = run_mode(&c, path, k == 0, &res[n], &mi);
        if (rc) {
            mode_result_fini(&res[n]);
            break;
        }
        if (n == 0) {
            info = mi;
            printf("bench %s (%s): batch %d of %dx%dx%d, %d classes, %d thread%s; %.2f M "
                   "parameters, %.3f GFLOP per image forward\n",
                   c.model_name ? c.model_name : info.name, path, c.batch_size, info.image_size,
                   info.image_size, info.channels, info.num_classes, c.num_threads,
                   c.num_threads > 1 ? "s" : "", (double)info.n_params * 1e-6,
                   2e-9 * (double)info.madds);
            if (peak > 0 && ghz > 0) {
                printf("fp32 peak: %.1f GFLOP/s (%s, %d thread%s: %.1f FLOP per cycle per core at "
                       "%.2f GHz, of the %d its vectors allow)\n",
                       peak, peak_src, c.num_threads, c.num_threads > 1 ? "s" : "",
                       peak / c.num_threads / ghz, ghz, PEAK_FLOP_PER_CYCLE);
                if (peak_held(peak, c.num_threads, ghz))
                    printf("  (under 3/4 of it: other work held a core while measuring; the "
                           "percentages below are too high, give --peak)\n");
            } else if (peak > 0)
                printf("fp32 peak: %.1f GFLOP/s (%s, %d thread%s)\n", peak, peak_src, c.num_threads,
                       c.num_threads > 1 ? "s" : "");
        }
        print_mode(&c, &res[n], peak);
        fflush(stdout);
        n++;
    }
    if (!rc && c.json)
        rc = write_json(&c, &info, res, n, peak, peak_src, ghz);
    for (int i = 0; i < n; i++)
        mode_result_fini(&res[i]);
    return rc;
}

const slim_command slim_cmd_bench = {
    .name = "bench",
    .summary = "time a model's training step and inference on random input (like caffe time)",
    .run = run_bench,
};
