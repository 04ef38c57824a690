/*
 * tests/interop/export_fixture.c - data for tests/interop/test_onnx_export.sh.
 *
 *   export_fixture ckpt MODEL DIR [--ema] [NAME=VALUE...]
 *       DIR/model.ckpt-0.slimckpt: MODEL's parameters with random values that
 *       make every folding visible: batch norm gamma in [0.5, 1.5), beta and
 *       moving_mean normal (0.2), moving_variance in [0.5, 2), biases normal
 *       (0.1), the rest as the model initializes them; --ema adds moving
 *       averages (0.9 of each value) that predict and export must prefer.
 *       NAME=VALUE: the model's vars (image_size=64 is the input size).
 *   export_fixture input N D1 D2 D3 OUT.npy SEED   a normal (0, 1) f32 batch
 *   export_fixture nchw IN.npy OUT.npy             (N,H,W,C) -> (N,C,H,W)
 *   export_fixture compare GOT.npy WANT.npy TOL [softmax]
 *       |got - want| <= TOL * max |want| everywhere (want softmaxed over its
 *       last axis first with softmax); prints the largest difference.
 *   export_fixture ops FILE.onnx                    each op type and its count
 *   export_fixture graphs DIR                       graphs using every op the exporter
 *       maps, exported, with inputs and slim's logits (export_graphs.c)
 *   export_fixture unsupported                      the error for ops ONNX lacks
 */
#include <slim/model.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/npy.h"
#include "interop/onnx_proto.h"
#include "runtime/checkpoint.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static double normal(void)
{
    double u = uniform(), v = uniform();
    return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static bool ends(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int ckpt(int argc, char **argv)
{
    const char *model = argv[2], *dir = argv[3];
    bool ema = false;
    const char *defines[16];
    int n_defines = 0, image_size = 0;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--ema"))
            ema = true;
        else if (!strncmp(argv[i], "image_size=", 11))
            image_size = atoi(argv[i] + 11);
        else if (n_defines < 16)
            defines[n_defines++] = argv[i];
    }
    slim_error e = {0};
    slim_registry *reg = NULL;
    slim_model *m = NULL;
    char path[1024];
    slim_model_opts mo = {.batch_size = 1,
                          .weight_decay = -1,
                          .image_size = image_size,
                          .defines = defines,
                          .n_defines = n_defines};
    if (slim_registry_new(&reg, &e) || slim_model_find(model, path, sizeof path, &e) ||
        slim_model_load(reg, path, &mo, &m, &e) ||
        slim_graph_init_params(slim_model_graph(m), 1, &e)) {
        fprintf(stderr, "export_fixture: %s\n", e.msg);
        return 1;
    }
    slim_graph *g = slim_model_graph(m);
    int np = slim_graph_param_count(g);
    float **avg = ema ? calloc((size_t)np, sizeof *avg) : NULL;
    for (int i = 0; i < np; i++) {
        const char *name;
        slim_tensor v;
        slim_graph_param_at(g, i, &name, &v, NULL);
        float *d = v.data;
        int64_t n = slim_shape_numel(&v.shape);
        for (int64_t k = 0; k < n; k++) {
            if (ends(name, "/gamma"))
                d[k] = (float)(0.5 + uniform());
            else if (ends(name, "/beta") || ends(name, "/moving_mean"))
                d[k] = (float)(0.2 * normal());
            else if (ends(name, "/moving_variance"))
                d[k] = (float)(0.5 + 1.5 * uniform());
            else if (ends(name, "/biases"))
                d[k] = (float)(0.1 * normal());
        }
        if (avg && (avg[i] = malloc((size_t)n * sizeof **avg)) != NULL)
            for (int64_t k = 0; k < n; k++)
                avg[i][k] = 0.9f * d[k];
    }
    /* the model as training records it: a zoo name, or a file's absolute path */
    char real[4096];
    const char *recorded = strchr(model, '/') && realpath(model, real) ? real : model;
    const slim_model_info *mi = slim_model_get_info(m);
    slim__rt_ckpt_state s = {.g = g,
                             .ema = avg,
                             .model_name = recorded,
                             .optimizer = "",
                             .run_config = "",
                             .num_classes = mi->num_classes,
                             .batch_size = 1};
    char out[1200];
    slim__rt_ckpt_path(dir, 0, out, sizeof out);
    int rc = 0;
    if (slim__rt_ckpt_save(out, &s, &e)) {
        fprintf(stderr, "export_fixture: %s\n", e.msg);
        rc = 1;
    }
    for (int i = 0; avg && i < np; i++)
        free(avg[i]);
    free(avg);
    slim_model_free(m);
    slim_registry_free(reg);
    return rc;
}

static int input(char **argv)
{
    int64_t dim[4];
    for (int i = 0; i < 4; i++)
        dim[i] = atoll(argv[2 + i]);
    rng ^= (uint64_t)atoll(argv[7]) * 0x2545f4914f6cdd1dull;
    int64_t n = dim[0] * dim[1] * dim[2] * dim[3];
    float *d = malloc((size_t)n * sizeof *d);
    if (!d)
        return 1;
    for (int64_t k = 0; k < n; k++)
        d[k] = (float)normal();
    slim_error e = {0};
    int rc = slim__npy_write(argv[6], d, 4, dim, &e) ? 1 : 0;
    if (rc)
        fprintf(stderr, "export_fixture: %s\n", e.msg);
    free(d);
    return rc;
}

static int nchw(char **argv)
{
    slim__npy a = {0};
    slim_error e = {0};
    if (slim__npy_read(argv[2], &a, &e) || a.rank != 4) {
        fprintf(stderr, "export_fixture: %s: %s\n", argv[2], e.msg[0] ? e.msg : "not 4-D");
        slim__npy_free(&a);
        return 1;
    }
    int64_t N = a.dim[0], H = a.dim[1], W = a.dim[2], C = a.dim[3];
    float *d = malloc((size_t)a.numel * sizeof *d);
    for (int64_t n = 0; d && n < N; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++)
                for (int64_t c = 0; c < C; c++)
                    d[((n * C + c) * H + h) * W + w] = a.data[((n * H + h) * W + w) * C + c];
    int64_t dim[4] = {N, C, H, W};
    int rc = d && !slim__npy_write(argv[3], d, 4, dim, &e) ? 0 : 1;
    if (rc)
        fprintf(stderr, "export_fixture: %s\n", e.msg);
    free(d);
    slim__npy_free(&a);
    return rc;
}

/* rows IN OUT N: OUT is N rows of IN along its first axis, cycling through them
 * (a batch other than the one a model was built or exported at) */
static int rows(char **argv)
{
    slim__npy a = {0};
    slim_error e = {0};
    long n = atol(argv[4]);
    if (slim__npy_read(argv[2], &a, &e) || a.rank < 1 || n < 1 || n > 4096) {
        fprintf(stderr, "export_fixture: %s: %s\n", argv[2], e.msg[0] ? e.msg : "bad rows");
        slim__npy_free(&a);
        return 1;
    }
    int64_t row = a.numel / a.dim[0];
    float *d = malloc((size_t)(n * row) * sizeof *d);
    for (long i = 0; d && i < n; i++)
        memcpy(d + i * row, a.data + (i % a.dim[0]) * row, (size_t)row * sizeof *d);
    int64_t dim[SLIM__NPY_MAX_DIMS];
    memcpy(dim, a.dim, (size_t)a.rank * sizeof *dim);
    dim[0] = n;
    int rc = d && !slim__npy_write(argv[3], d, a.rank, dim, &e) ? 0 : 1;
    if (rc)
        fprintf(stderr, "export_fixture: %s\n", e.msg);
    free(d);
    slim__npy_free(&a);
    return rc;
}

static int compare(int argc, char **argv)
{
    slim__npy got = {0}, want = {0};
    slim_error e = {0};
    double tol = atof(argv[4]);
    int rc = 1;
    if (slim__npy_read(argv[2], &got, &e) || slim__npy_read(argv[3], &want, &e)) {
        fprintf(stderr, "export_fixture: %s\n", e.msg);
        goto done;
    }
    if (got.rank != want.rank || memcmp(got.dim, want.dim, (size_t)got.rank * sizeof *got.dim) ||
        got.rank < 1) {
        fprintf(stderr, "export_fixture: %s and %s differ in shape\n", argv[2], argv[3]);
        goto done;
    }
    int64_t K = want.dim[want.rank - 1];
    if (argc > 5 && !strcmp(argv[5], "softmax"))
        for (int64_t r = 0; r < want.numel / K; r++) {
            float *row = want.data + r * K, mx = row[0];
            double sum = 0;
            for (int64_t k = 0; k < K; k++)
                mx = row[k] > mx ? row[k] : mx;
            for (int64_t k = 0; k < K; k++)
                sum += exp((double)row[k] - mx);
            for (int64_t k = 0; k < K; k++)
                row[k] = (float)(exp((double)row[k] - mx) / sum);
        }
    double big = 0, diff = 0;
    int64_t at = 0;
    for (int64_t k = 0; k < want.numel; k++) {
        big = fabs(want.data[k]) > big ? fabs(want.data[k]) : big;
        double d = fabs((double)got.data[k] - want.data[k]);
        if (d > diff || isnan(d)) {
            diff = isnan(d) ? INFINITY : d;
            at = k;
        }
    }
    printf("largest difference %.3g at %lld (%.6g vs %.6g), %.3g of the largest |value| %.4g\n",
           diff, (long long)at, got.data[at], want.data[at], big > 0 ? diff / big : diff, big);
    rc = diff <= tol * (big > 0 ? big : 1) ? 0 : 1;
done:
    slim__npy_free(&got);
    slim__npy_free(&want);
    return rc;
}

/* The op types of an ONNX file with their counts, one "OpType count" line each. */
static int ops(char **argv)
{
    Onnx__ModelProto *m;
    slim_error e = {0};
    if (slim__ox_model_load(argv[2], &m, &e)) {
        fprintf(stderr, "export_fixture: %s\n", e.msg);
        return 1;
    }
    const Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; i < g->n_node; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(g->node[j]->op_type, g->node[i]->op_type);
        if (seen)
            continue;
        int n = 0;
        for (size_t j = i; j < g->n_node; j++)
            n += !strcmp(g->node[j]->op_type, g->node[i]->op_type);
        printf("%s %d\n", g->node[i]->op_type, n);
    }
    printf("opset %lld inputs %zu outputs %zu initializers %zu\n", (long long)slim__ox_opset(m),
           g->n_input, g->n_output, g->n_initializer);
    slim__ox_model_free(m);
    return 0;
}

int export_graphs(const char *dir); /* export_graphs.c */
int export_unsupported(void);

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "unsupported"))
        return export_unsupported();
    if (argc == 3 && !strcmp(argv[1], "graphs"))
        return export_graphs(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "ops"))
        return ops(argv);
    if (argc >= 4 && !strcmp(argv[1], "ckpt"))
        return ckpt(argc, argv);
    if (argc == 8 && !strcmp(argv[1], "input"))
        return input(argv);
    if (argc == 4 && !strcmp(argv[1], "nchw"))
        return nchw(argv);
    if (argc == 5 && !strcmp(argv[1], "rows"))
        return rows(argv);
    if (argc >= 5 && !strcmp(argv[1], "compare"))
        return compare(argc, argv);
    fprintf(stderr,
            "usage: export_fixture ckpt MODEL DIR [--ema] [NAME=VALUE...] | input N D1 D2 "
            "D3 OUT.npy SEED | nchw IN OUT | rows IN OUT N | compare GOT WANT TOL [softmax] | ops "
            "FILE.onnx | graphs DIR | unsupported\n");
    return 2;
}
