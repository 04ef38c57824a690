/*
 * bench/conv_bench.c - per-layer GFLOP/s of conv2d (and of LeNet's
 * fully_connected layers): forward, backward-data (only dx requested) and
 * backward-filter (only dw requested), at 1 and 2 threads, next to the oneDNN
 * anchors (../shared/anchors/dnnl_conv_{1,2}t.txt) where they exist.
 *
 * The kernels run through the internal single-op runner (runtime/oprun.h), so
 * what is timed is the op's kernel on the engine's thread pool: the same code
 * a compiled program runs for the node, without the rest of the graph.
 *
 * FLOPs = 2*N*OH*OW*O*KH*KW*C for every direction, as the anchors count
 * (2*N*K*O for fully_connected).
 * Each case: warm-up (at least 2 runs and 0.3 s), then runs until at least
 * --min_reps and --budget seconds; the figure is the median run.
 */
#include <slim/slim.h>

#include "runtime/oprun.h"

#include "bench/benchutil.h"
#include "ops/conv.h"
#include "ops/conv_ukr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct layer {
    const char *name;                 /* ours */
    const char *dnnl;                 /* the anchor file's layer column */
    int64_t N, H, W, C, KH, KW, O, S; /* KH == 0: fully_connected x (N,C), w (C,O) */
    int64_t G;                        /* groups; G == C == O: depthwise */
} layer;

/* SAME padding everywhere (the 1x1 needs none). */
static const layer LAYERS[] = {
    {"ResNet-50 3x3 64->64 56x56 b16", "R50 conv3x3 64->64 56x56 b16", 16, 56, 56, 64, 3, 3, 64, 1,
     1},
    {"VGG-16 conv1_2 64->64 224x224 b4", "VGG conv1_2 64->64 224x224 b4", 4, 224, 224, 64, 3, 3, 64,
     1, 1},
    {"1x1 256->64 56x56 b16", "1x1 conv 256->64 56x56 b16", 16, 56, 56, 256, 1, 1, 64, 1, 1},
    {"ResNet-50 conv1 7x7/2 3->64 224x224 b16", "R50 conv1 7x7/2 3->64 224 b16", 16, 224, 224, 3, 7,
     7, 64, 2, 1},
    /* deep layers, filter rows of 768-1536 floats (the direct path in depth chunks) */
    {"VGG-16 conv4_2 512->512 28x28 b8", "", 8, 28, 28, 512, 3, 3, 512, 1, 1},
    {"ResNet-50 3x3 256->256 14x14 b16", "", 16, 14, 14, 256, 3, 3, 256, 1, 1},
    {"ResNet-50 3x3 128->128 28x28 b16", "", 16, 28, 28, 128, 3, 3, 128, 1, 1},
    {"ResNet-50 3x3 512->512 7x7 b16", "", 16, 7, 7, 512, 3, 3, 512, 1, 1},
    {"ResNet-50 1x1 1024->2048 7x7 b16", "", 16, 7, 7, 1024, 1, 1, 2048, 1, 1},
    /* ResNet-50's other 1x1 shapes (the bottlenecks' expanding and reducing layers) */
    {"ResNet-50 1x1 64->256 56x56 b16", "", 16, 56, 56, 64, 1, 1, 256, 1, 1},
    {"ResNet-50 1x1 128->512 28x28 b16", "", 16, 28, 28, 128, 1, 1, 512, 1, 1},
    {"ResNet-50 1x1 512->128 28x28 b16", "", 16, 28, 28, 512, 1, 1, 128, 1, 1},
    {"ResNet-50 1x1 1024->256 14x14 b16", "", 16, 14, 14, 1024, 1, 1, 256, 1, 1},
    {"ResNet-50 1x1 256->1024 14x14 b16", "", 16, 14, 14, 256, 1, 1, 1024, 1, 1},
    {"ResNet-50 1x1 2048->512 7x7 b16", "", 16, 7, 7, 2048, 1, 1, 512, 1, 1},
    /* the projection shortcuts of blocks 2 and 3 (TF-Slim strides the block's last unit) */
    {"ResNet-50 1x1 256->512 28x28 b16", "", 16, 28, 28, 256, 1, 1, 512, 1, 1},
    {"ResNet-50 1x1 512->1024 14x14 b16", "", 16, 14, 14, 512, 1, 1, 1024, 1, 1},
    /* TF-Slim's LeNet at batch 64 (bench/train_step) */
    {"LeNet conv1 5x5 1->32 28x28 b64", "", 64, 28, 28, 1, 5, 5, 32, 1, 1},
    {"LeNet conv2 5x5 32->64 14x14 b64", "", 64, 14, 14, 32, 5, 5, 64, 1, 1},
    {"LeNet fc3 3136->1024 b64", "", 64, 1, 1, 3136, 0, 0, 1024, 1, 1},
    {"LeNet fc4 1024->10 b64", "", 64, 1, 1, 1024, 0, 0, 10, 1, 1},
    /* MobileNet v1 at batch 16: the stem and the early 1x1 layers (small depth, big maps) */
    {"MobileNet v1 Conv2d_0 3x3/2 3->32 224x224 b16", "", 16, 224, 224, 3, 3, 3, 32, 2, 1},
    {"MobileNet v1 1x1 32->64 112x112 b16", "", 16, 112, 112, 32, 1, 1, 64, 1, 1},
    {"MobileNet v1 1x1 64->128 56x56 b16", "", 16, 56, 56, 64, 1, 1, 128, 1, 1},
    {"MobileNet v1 1x1 128->128 56x56 b16", "", 16, 56, 56, 128, 1, 1, 128, 1, 1},
    /* MobileNet v1 and v2 depthwise layers at batch 16 (stride 1 and 2) */
    {"MobileNet v1 dw 3x3 32 112x112 b16", "", 16, 112, 112, 32, 3, 3, 32, 1, 32},
    {"MobileNet v1 dw 3x3/2 64 112x112 b16", "", 16, 112, 112, 64, 3, 3, 64, 2, 64},
    {"MobileNet v1 dw 3x3 128 56x56 b16", "", 16, 56, 56, 128, 3, 3, 128, 1, 128},
    {"MobileNet v1 dw 3x3 512 14x14 b16", "", 16, 14, 14, 512, 3, 3, 512, 1, 512},
    {"MobileNet v2 dw 3x3/2 96 112x112 b16", "", 16, 112, 112, 96, 3, 3, 96, 2, 96},
    {"MobileNet v2 dw 3x3 144 56x56 b16", "", 16, 56, 56, 144, 3, 3, 144, 1, 144},
    /* Fashion-MNIST ResNet-14 (models/examples/resnet_fmnist.yaml): stage 1 and stage 2 */
    {"ResNet-14 3x3 16->16 28x28 b64", "", 64, 28, 28, 16, 3, 3, 16, 1, 1},
    {"ResNet-14 3x3 32->32 14x14 b64", "", 64, 14, 14, 32, 3, 3, 32, 1, 1},
};
#define N_LAYERS ((int)(sizeof LAYERS / sizeof LAYERS[0]))

enum { DIR_FWD, DIR_BWD_DATA, DIR_BWD_FILTER, N_DIRS };
static const char *const DIR_NAME[N_DIRS] = {"fwd", "bwd-data", "bwd-filter"};
static const char *const DNNL_DIR[N_DIRS] = {"fwd", "bwd-data", "bwd-wts"};

typedef struct opts {
    int threads[4], n_threads;
    double peak[3]; /* by thread count 1, 2 */
    double budget;
    int min_reps;
    const char *anchors; /* directory of dnnl_conv_*.txt */
    const char *json;
    const char *only;     /* substring of a layer name, or NULL */
    const char *dir;      /* one direction, or NULL */
    bool cpu_time;        /* time by process CPU time instead of wall time */
    const char *winograd; /* conv2d's winograd attribute: auto, on, off */
} opts;

typedef struct result {
    int layer, dir, threads, reps;
    double gflops, best, ms;
    double other;               /* cores other processes used while timing */
    double dnnl_any, dnnl_nhwc; /* median GFLOP/s, 0 = no anchor */
} result;

static void die(const char *what, const slim_error *err)
{
    fprintf(stderr, "conv_bench: %s: %s\n", what, err ? err->msg : strerror(errno));
    exit(1);
}

static float *alloc_rand(int64_t n, uint64_t stream)
{
    float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) & ~(size_t)63);
    if (!p)
        die("out of memory", NULL);
    for (int64_t i = 0; i < n; i++)
        p[i] = 2.0f * slim_rand_uniform(42, stream, (uint64_t)i) - 1.0f;
    return p;
}

/* The anchor's median GFLOP/s for (layer, layout, direction) at nth threads, 0 if absent. */
static double dnnl_anchor(const char *dir, int nth, const char *lname, const char *layout,
                          const char *direction)
{
    char path[1024], line[512];
    if (!*lname)
        return 0;
    snprintf(path, sizeof path, "%s/dnnl_conv_%dt.txt", dir, nth);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    double v = 0;
    size_t ln = strlen(lname);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, lname, ln) != 0 || line[ln] != ' ')
            continue;
        char lay[32], d[32];
        double best, med;
        if (sscanf(line + ln, "%31s %31s %lf %lf", lay, d, &best, &med) == 4 &&
            strcmp(lay, layout) == 0 && strcmp(d, direction) == 0) {
            v = med;
            break;
        }
    }
    fclose(f);
    return v;
}

static result run_case(const slim_registry *reg, const opts *o, int li, int dir, int nth)
{
    const layer *L = &LAYERS[li];
    slim_error err = {0};
    slim_attrs *a = slim_attrs_new();
    bool fc = L->KH == 0;
    if (!fc) {
        slim_attrs_set_ints(a, "strides", (int64_t[]){L->S, L->S}, 2);
        slim_attrs_set_str(a, "padding", "SAME");
        slim_attrs_set_str(a, "winograd", o->winograd);
        if (L->G > 1)
            slim_attrs_set_int(a, "groups", L->G);
    }
    slim_tensor_desc in[2] = {
        {SLIM_F32, {4, {L->N, L->H, L->W, L->C}}},
        {SLIM_F32, {4, {L->KH, L->KW, L->C / L->G, L->O}}},
    };
    if (fc) {
        in[0].shape = (slim_shape){2, {L->N, L->C}};
        in[1].shape = (slim_shape){2, {L->C, L->O}};
    }
    slim__oprun *r;
    if (slim__oprun_new(reg, fc ? "fully_connected" : "conv2d", a, in, 2, dir != DIR_FWD, nth, &r,
                        &err) != SLIM_OK)
        die(L->name, &err);
    slim_attrs_free(a);
    const slim_shape *ys = &slim__oprun_infer(r)->out[0].shape;
    int64_t OH = fc ? 1 : ys->dim[1], OW = fc ? 1 : ys->dim[2];
    int64_t taps = fc ? 1 : L->KH * L->KW;
    double flops = 2.0 * (double)(L->N * OH * OW * L->O * taps * L->C / L->G);

    float *x = alloc_rand(slim_shape_numel(&in[0].shape), 1);
    float *w = alloc_rand(slim_shape_numel(&in[1].shape), 2);
    float *dy = alloc_rand(slim_shape_numel(ys), 3);
    float *dx = alloc_rand(slim_shape_numel(&in[0].shape), 4);
    float *dw = alloc_rand(slim_shape_numel(&in[1].shape), 5);
    void *in_data[2] = {x, w};
    const float *dout[1] = {dy};
    float *din[2] = {dir == DIR_BWD_DATA ? dx : NULL, dir == DIR_BWD_FILTER ? dw : NULL};
    if (dir != DIR_FWD)
        slim__oprun_forward(r, in_data, false, 0, 0, 0); /* what a training step has run */

    int cap = 1000, reps = 0;
    double *t = malloc((size_t)cap * sizeof *t);
    double t0 = bench_now();
    for (int warm = 0; warm < 2 || bench_now() - t0 < 0.3; warm++) {
        if (dir == DIR_FWD)
            slim__oprun_forward(r, in_data, false, 0, 0, 0);
        else
            slim__oprun_backward(r, in_data, dout, din, false, 0, 0);
    }
    bench_cpu c0 = bench_cpu_snapshot();
    t0 = bench_now();
    while (reps < cap && (reps < o->min_reps || bench_now() - t0 < o->budget)) {
        double s = o->cpu_time ? bench_cpu_snapshot().mine : bench_now();
        if (dir == DIR_FWD)
            slim__oprun_forward(r, in_data, false, 0, 0, 0);
        else
            slim__oprun_backward(r, in_data, dout, din, false, 0, 0);
        t[reps++] = (o->cpu_time ? bench_cpu_snapshot().mine : bench_now()) - s;
        if (o->cpu_time)
            t[reps - 1] /= nth; /* per thread: 2 threads fully busy count twice */
    }
    double other = bench_other_cores(c0, bench_cpu_snapshot());
    double med = bench_median(t, reps);
    result res = {
        .other = other,
        .layer = li,
        .dir = dir,
        .threads = nth,
        .reps = reps,
        .gflops = flops / med * 1e-9,
        .best = flops / t[0] * 1e-9,
        .ms = med * 1e3,
        .dnnl_any = dnnl_anchor(o->anchors, nth, L->dnnl, "any", DNNL_DIR[dir]),
        .dnnl_nhwc = dnnl_anchor(o->anchors, nth, L->dnnl, "nhwc", DNNL_DIR[dir]),
    };
    free(t);
    free(x);
    free(w);
    free(dy);
    free(dx);
    free(dw);
    slim__oprun_free(r);
    return res;
}

/* --check: fast kernels against the reference ones on shapes that take every
 * path (gather and scatter dx, tails of the 6 x 16 blocks, groups, dilation,
 * large pads, dW split by rows, Winograd) at 1 to 3 threads. Returns the
 * failures. */
typedef struct check_case {
    const char *attrs;
    int64_t N, H, W, C, KH, KW, O;
} check_case;

static double max_rel_err(const float *a, const float *b, int64_t n)
{
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (a[i] - b[i]) / (1.0 + (b[i] < 0 ? -b[i] : b[i]));
        d = d < 0 ? -d : d;
        if (!(d <= e))
            e = d; /* NaN counts */
    }
    return e;
}

/* fully_connected's packed paths (ops/fc.c) against its reference kernels:
 * x (N,K), w (K,O), b (O), at 1 to 3 threads. Returns the failures. */
static int run_fc_checks(const slim_registry *reg)
{
    static const int64_t shapes[][3] = {
        {64, 3136, 1024}, {64, 1024, 10}, {1, 300, 40},  {37, 300, 45},
        {7, 20, 600},     {70, 9, 5},     {600, 13, 70}, {33, 513, 97},
    };
    int failed = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t N = shapes[si][0], K = shapes[si][1], O = shapes[si][2];
        for (int nth = 1; nth <= 3; nth++) {
            slim_error err = {0};
            slim_attrs *a = slim_attrs_new();
            slim_tensor_desc in[3] = {
                {SLIM_F32, {2, {N, K}}}, {SLIM_F32, {2, {K, O}}}, {SLIM_F32, {1, {O}}}};
            slim__oprun *r;
            if (slim__oprun_new(reg, "fully_connected", a, in, 3, true, nth, &r, &err) != SLIM_OK)
                die("fully_connected", &err);
            slim_attrs_free(a);
            int64_t n[3] = {N * K, K * O, O};
            float *x = alloc_rand(N * K, 31), *w = alloc_rand(K * O, 32), *b = alloc_rand(O, 33);
            float *dy = alloc_rand(N * O, 34), *y = malloc((size_t)(N * O) * sizeof *y);
            float *g[2][3];
            void *in_data[3] = {x, w, b};
            const float *dout[1] = {dy};
            double e[4] = {0};
            for (int ref = 1; ref >= 0; ref--) {
                for (int i = 0; i < 3; i++)
                    g[ref][i] = alloc_rand(n[i], 40 + (uint64_t)i); /* overwritten */
                slim__oprun_forward(r, in_data, ref, 0, 0, 0);
                slim_tensor out = slim__oprun_output(r, 0);
                if (ref)
                    memcpy(y, out.data, (size_t)(N * O) * sizeof *y);
                else
                    e[0] = max_rel_err(out.data, y, N * O);
                slim__oprun_backward(r, in_data, dout, g[ref], ref, 0, 0);
            }
            for (int i = 0; i < 3; i++)
                e[1 + i] = max_rel_err(g[0][i], g[1][i], n[i]);
            bool ok = e[0] <= 1e-4 && e[1] <= 1e-4 && e[2] <= 1e-4 && e[3] <= 1e-4;
            failed += !ok;
            printf("%s fully_connected %lldx%lld * %lldx%lld, %d threads: max rel err y %.1e dx "
                   "%.1e dw %.1e db %.1e\n",
                   ok ? "ok  " : "FAIL", (long long)N, (long long)K, (long long)K, (long long)O,
                   nth, e[0], e[1], e[2], e[3]);
            for (int ref = 0; ref < 2; ref++)
                for (int i = 0; i < 3; i++)
                    free(g[ref][i]);
            free(x);
            free(w);
            free(b);
            free(dy);
            free(y);
            slim__oprun_free(r);
        }
    }
    return failed;
}

static int run_checks(const slim_registry *reg)
{
    static const check_case cases[] = {
        {"padding=SAME", 2, 9, 7, 16, 3, 3, 20},
        {"padding=SAME", 3, 8, 8, 32, 5, 5, 64},
        {"padding=SAME", 2, 6, 5, 24, 1, 1, 10},
        {"padding=VALID;dilations=2,2", 1, 11, 11, 18, 3, 3, 17},
        {"padding=SAME;groups=2", 2, 10, 10, 32, 3, 3, 32},
        {"padding=SAME;strides=2,2", 2, 13, 13, 3, 7, 7, 16},
        {"padding=SAME;strides=2,2", 3, 9, 9, 20, 3, 3, 8},
        {"padding=EXPLICIT;pads=3,0,2,3", 2, 6, 7, 16, 3, 3, 16},
        {"padding=VALID", 1, 5, 5, 64, 3, 3, 64},
        {"padding=SAME;strides=1,2", 3, 7, 9, 17, 2, 3, 33},
        /* filter rows of >= 96 floats: read in place, no im2col */
        {"padding=EXPLICIT;pads=3,0,2,3", 2, 6, 7, 48, 3, 3, 40},
        {"padding=SAME;strides=2,2", 3, 9, 9, 40, 3, 3, 24},
        {"padding=VALID", 2, 7, 5, 100, 1, 3, 20},
        {"padding=SAME", 2, 5, 4, 33, 5, 5, 70},
        /* Winograd F(4x4,3x3), whose transforms round more (tolerance 5e-4) */
        {"padding=SAME;winograd=on", 2, 14, 14, 256, 3, 3, 256},
        {"padding=SAME;winograd=on", 3, 7, 7, 512, 3, 3, 512},
        {"padding=VALID;winograd=on", 2, 9, 10, 64, 3, 3, 16},
        {"padding=EXPLICIT;pads=3,0,2,3;winograd=on", 2, 6, 7, 48, 3, 3, 40},
    };
    int failed = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const check_case *k = &cases[ci];
        for (int nth = 1; nth <= 3; nth++) {
            slim_error err = {0};
            slim_attrs *a = slim_attrs_new();
            char buf[128];
            snprintf(buf, sizeof buf, "%s", k->attrs);
            for (char *sv, *t = strtok_r(buf, ";", &sv); t; t = strtok_r(NULL, ";", &sv)) {
                char *eq = strchr(t, '='), text[64];
                *eq = 0;
                snprintf(text, sizeof text, strchr(eq + 1, ',') ? "[%s]" : "%s", eq + 1);
                slim_attrs_set_text(a, t, text);
            }
            if (!strstr(k->attrs, "winograd="))
                slim_attrs_set_str(a, "winograd", "off");
            slim_tensor_desc in[3] = {{SLIM_F32, {4, {k->N, k->H, k->W, k->C}}},
                                      {SLIM_F32, {4, {k->KH, k->KW, 0, k->O}}},
                                      {SLIM_F32, {1, {k->O}}}};
            int64_t groups = strstr(k->attrs, "groups=2") ? 2 : 1;
            in[1].shape.dim[2] = k->C / groups;
            slim__oprun *r;
            if (slim__oprun_new(reg, "conv2d", a, in, 3, true, nth, &r, &err) != SLIM_OK)
                die(k->attrs, &err);
            slim_attrs_free(a);
            const slim_shape *ys = &slim__oprun_infer(r)->out[0].shape;
            int64_t n[3] = {slim_shape_numel(&in[0].shape), slim_shape_numel(&in[1].shape), k->O};
            int64_t ny = slim_shape_numel(ys);
            float *x = alloc_rand(n[0], 11), *w = alloc_rand(n[1], 12), *b = alloc_rand(n[2], 13);
            float *dy = alloc_rand(ny, 14), *y = malloc((size_t)ny * sizeof *y);
            float *g[2][3];
            void *in_data[3] = {x, w, b};
            const float *dout[1] = {dy};
            for (int ref = 1; ref >= 0; ref--) {
                for (int i = 0; i < 3; i++)
                    g[ref][i] = alloc_rand(n[i], 20 + (uint64_t)i); /* overwritten */
                slim__oprun_forward(r, in_data, ref, 0, 0, 0);
                slim_tensor out = slim__oprun_output(r, 0);
                double e = 0;
                if (ref)
                    memcpy(y, out.data, (size_t)ny * sizeof *y);
                else
                    e = max_rel_err(out.data, y, ny);
                slim__oprun_backward(r, in_data, dout, g[ref], ref, 0, 0);
                if (!ref) {
                    double ex = max_rel_err(g[0][0], g[1][0], n[0]);
                    double ew = max_rel_err(g[0][1], g[1][1], n[1]);
                    double eb = max_rel_err(g[0][2], g[1][2], n[2]);
                    /* cases without winograd=on pin it off: the direct paths */
                    double tol = strstr(k->attrs, "winograd=on") ? 5e-4 : 1e-4;
                    bool ok = e <= tol && ex <= tol && ew <= tol && eb <= tol;
                    failed += !ok;
                    printf("%s conv2d %lldx%lldx%lldx%lld * %lldx%lldx%lld %s, %d threads: max rel "
                           "err y %.1e dx %.1e dw %.1e db %.1e\n",
                           ok ? "ok  " : "FAIL", (long long)k->N, (long long)k->H, (long long)k->W,
                           (long long)k->C, (long long)k->KH, (long long)k->KW, (long long)k->O,
                           k->attrs, nth, e, ex, ew, eb);
                }
            }
            for (int ref = 0; ref < 2; ref++)
                for (int i = 0; i < 3; i++)
                    free(g[ref][i]);
            free(x);
            free(w);
            free(b);
            free(dy);
            free(y);
            slim__oprun_free(r);
        }
    }
    failed += run_fc_checks(reg);
    printf("%s: %d failed\n", failed ? "FAIL" : "ok", failed);
    return failed;
}

static double peak_of(const opts *o, int nth)
{
    return nth == 1 ? o->peak[1] : nth == 2 ? o->peak[2] : o->peak[1] * nth;
}

static void pct(char *buf, size_t n, double v, double peak)
{
    if (v > 0)
        snprintf(buf, n, "%.1f (%.0f%%)", v, 100 * v / peak);
    else
        snprintf(buf, n, "-");
}

static void usage(void)
{
    fprintf(stderr,
            "usage: conv_bench [--threads=1,2] [--budget=SECONDS] [--min_reps=N]\n"
            "                  [--peak1=GFLOPS] [--peak2=GFLOPS] [--anchors=DIR]\n"
            "                  [--layer=SUBSTRING] [--direction=fwd|bwd-data|bwd-filter]\n"
            "                  [--cpu_time=1] [--winograd=auto|on|off] [--json=FILE]\n"
            "       conv_bench --check   (fast kernels vs reference, exit 1 on mismatch)\n"
            "       conv_bench --ukr     (the micro-kernels alone on L1 operands, 1 thread)\n");
    exit(2);
}

/* Each kernel in a function of its own, as the conv code calls it: inlined
 * into run_ukr's loop with the others, GCC ran out of AVX2's 16 registers
 * and kept accumulators on the stack (ukr_nn measured 42 GFLOP/s on the
 * Zen3 machine, 88-99 alone). */
static __attribute__((noinline)) void ukr_call(int kind, int64_t d, const float *const *a,
                                               const float *B, float *C, int rows, int cols)
{
    if (kind == 1)
        ukr_nn_narrow(d, a, B, C, NR, rows, cols, NULL, true);
#ifdef UKR_HAS_NN_WIDE
    else if (kind == 2)
        ukr_nn_wide(d, a, B, C, NR, cols, NULL, true);
#endif
    else
        ukr_nn(d, a, B, C, NR, rows, cols, NULL, true);
}

/* --ukr: the micro-kernels alone, one thread, operands in L1 (a KCHUNK-deep
 * B panel, MR or MR2 rows of A), C accumulated in place: the ceiling the
 * conv and fc kernels work under, next to slimrun bench's FMA peak. */
static int run_ukr(void)
{
    const int64_t d = KCHUNK;
    float *A = malloc(sizeof(float) * MR2 * d), *B = malloc(sizeof(float) * NR * d);
    float C[MR2 * NR];
    if (!A || !B)
        return 1;
    for (int64_t i = 0; i < MR2 * d; i++)
        A[i] = 1e-3f * (float)(i % 7);
    for (int64_t i = 0; i < NR * d; i++)
        B[i] = 1e-3f * (float)(i % 5);
    memset(C, 0, sizeof C);
    const float *a[MR2];
    for (int i = 0; i < MR2; i++)
        a[i] = A + i * d;
#ifdef UKR_HAS_NN_WIDE
    const int kinds = 3; /* 0: ukr_nn, 1: ukr_nn_narrow, 2: ukr_nn_wide */
#else
    const int kinds = 2;
#endif
    static const char *const name[3] = {"ukr_nn", "ukr_nn_narrow", "ukr_nn_wide"};
    for (int kind = 0; kind < kinds; kind++) {
        const bool narrow = kind == 1;
        int rows = kind ? MR2 : MR, cols = narrow ? NARROW_NR : NR;
        double flops = 2.0 * (double)(rows * cols) * (double)d, best = 0;
        for (int rep = 0; rep < 7; rep++) {
            long calls = 0;
            double t0 = bench_now(), t;
            do {
                for (int k = 0; k < 1000; k++) {
                    ukr_call(kind, d, a, B, C, rows, cols);
                    __asm__ volatile("" ::: "memory"); /* every call counts */
                }
                calls += 1000;
                t = bench_now() - t0;
            } while (t < 0.2);
            double g = flops * (double)calls / t * 1e-9;
            best = g > best ? g : best;
        }
        printf("micro-kernel %s %dx%d, depth %lld, operands in L1, 1 thread: %.1f GFLOP/s "
               "(best of 7)\n",
               name[kind], rows, cols, (long long)d, best);
    }
    free(A);
    free(B);
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {.threads = {1, 2},
              .n_threads = 2,
              .peak = {0, 102.6, 205.8},
              .budget = 1.5,
              .min_reps = 5,
              .anchors = "../shared/anchors",
              .winograd = "auto"};
    bool check = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = strchr(arg, '=');
        if (!strcmp(arg, "--ukr"))
            return run_ukr();
        if (!strcmp(arg, "--check")) {
            check = true;
            continue;
        }
        if (!v)
            usage();
        v++;
        if (!strncmp(arg, "--threads=", 10)) {
            o.n_threads = 0;
            for (char *e; *v && o.n_threads < 4; v = *e ? e + 1 : e) {
                o.threads[o.n_threads++] = (int)strtol(v, &e, 10);
                if (e == v)
                    usage();
            }
        } else if (!strncmp(arg, "--budget=", 9))
            o.budget = atof(v);
        else if (!strncmp(arg, "--min_reps=", 11))
            o.min_reps = atoi(v);
        else if (!strncmp(arg, "--peak1=", 8))
            o.peak[1] = atof(v);
        else if (!strncmp(arg, "--peak2=", 8))
            o.peak[2] = atof(v);
        else if (!strncmp(arg, "--anchors=", 10))
            o.anchors = v;
        else if (!strncmp(arg, "--layer=", 8))
            o.only = v;
        else if (!strncmp(arg, "--direction=", 12))
            o.dir = v;
        else if (!strncmp(arg, "--cpu_time=", 11))
            o.cpu_time = atoi(v) != 0;
        else if (!strncmp(arg, "--winograd=", 11))
            o.winograd = v;
        else if (!strncmp(arg, "--json=", 7))
            o.json = v;
        else
            usage();
    }
    if (o.min_reps < 1)
        usage();
    for (int i = 0; i < o.n_threads; i++)
        if (o.threads[i] < 1)
            usage();

    slim_error err = {0};
    slim_registry *reg;
    if (slim_registry_new(&reg, &err))
        die("registry", &err);
    if (check) {
        int failed = run_checks(reg);
        slim_registry_free(reg);
        return failed ? 1 : 0;
    }
    result res[N_LAYERS * N_DIRS * 4];
    int nres = 0;
    for (int ti = 0; ti < o.n_threads; ti++)
        for (int li = 0; li < N_LAYERS; li++) {
            if (o.only && !strstr(LAYERS[li].name, o.only))
                continue;
            for (int d = 0; d < N_DIRS; d++) {
                if (o.dir && strcmp(o.dir, DIR_NAME[d]) != 0)
                    continue;
                res[nres] = run_case(reg, &o, li, d, o.threads[ti]);
                const result *r = &res[nres++];
                fprintf(
                    stderr, "%dt %-42s %-10s %7.1f GFLOP/s (%.2f ms, %d reps, other load %.2f)\n",
                    r->threads, LAYERS[li].name, DIR_NAME[d], r->gflops, r->ms, r->reps, r->other);
            }
        }

    /* one table: a row per layer, direction and thread count */
    double max_other = 0;
    printf("| layer | direction | threads | slim GFLOP/s (%% of peak) | ms | oneDNN nhwc | "
           "oneDNN any (blocked) |\n|---|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        double pk = peak_of(&o, r->threads);
        char s[64], dn[64], da[64];
        pct(s, sizeof s, r->gflops, pk);
        pct(dn, sizeof dn, r->dnnl_nhwc, pk);
        pct(da, sizeof da, r->dnnl_any, pk);
        printf("| %s | %s | %d | %s | %.2f | %s | %s |\n", LAYERS[r->layer].name, DIR_NAME[r->dir],
               r->threads, s, r->ms, dn, da);
        max_other = r->other > max_other ? r->other : max_other;
    }
    printf("\nMedian of the timed runs; peak %.1f GFLOP/s on 1 thread, %.1f on 2 (measured, "
           "../shared/anchors/peak_fma.txt). oneDNN: median GFLOP/s from %s/dnnl_conv_*t.txt "
           "(\"-\": no anchor). Other processes used up to %.2f cores while timing.\n",
           o.peak[1], o.peak[2], o.anchors, max_other);

    if (o.json) {
        FILE *f = fopen(o.json, "w");
        if (!f)
            die(o.json, NULL);
        fprintf(f, "[\n");
        for (int i = 0; i < nres; i++) {
            const result *r = &res[i];
            double pk = peak_of(&o, r->threads);
            fprintf(f,
                    "  {\"layer\": \"%s\", \"direction\": \"%s\", \"threads\": %d, "
                    "\"gflops\": %.2f, \"gflops_best\": %.2f, \"ms_median\": %.3f, \"reps\": %d, "
                    "\"peak_gflops\": %.1f, \"pct_of_peak\": %.1f, \"dnnl_nhwc_gflops\": %.1f, "
                    "\"dnnl_any_gflops\": %.1f, \"other_cores\": %.2f}%s\n",
                    LAYERS[r->layer].name, DIR_NAME[r->dir], r->threads, r->gflops, r->best, r->ms,
                    r->reps, pk, 100 * r->gflops / pk, r->dnnl_nhwc, r->dnnl_any, r->other,
                    i + 1 < nres ? "," : "");
        }
        fprintf(f, "]\n");
        fclose(f);
    }
    slim_registry_free(reg);
    return 0;
}
