/* tests/ops/cases_dropout.c - dropout: training (forward vs reference at the same seed and
 * step, gradients by finite differences: the mask is fixed for a fixed step) and inference.
 * The extra checks run the op directly: the kept fraction is near keep_prob, kept elements
 * are scaled by 1/keep_prob, inference is the identity, backward applies the forward's mask,
 * another step draws another mask, and keep_prob = 1 keeps everything. */
#include "cases.h"
#include "runtime/oprun.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

static const float x4[] = {1, -2, 3, 0.5f};

static const harness_case cases[] = {
    {CASE("train_default", "dropout", NULL, 1, F32(2, 4, 50)), .training = true},
    {CASE("train_0.8", "dropout", "keep_prob=0.8", 1, F32(4, 2, 3, 3, 5)), .training = true},
    {CASE("train_odd_batch1", "dropout", "keep_prob=0.3", 1, F32(3, 1, 7, 5)), .training = true},
    {CASE("train_keep_all", "dropout", "keep_prob=1", 1, F32(2, 3, 4)), .training = true},
    {CASE("inference", "dropout", "keep_prob=0.5", 1, F32(4, 2, 3, 3, 4))},
    {CASE("known_inference", "dropout", "keep_prob=0.5", 1, VALS(1, x4, 4)), .expect = x4},
};

/* Run dropout once on n elements of x; returns the runner (caller frees) or NULL. */
static slim__oprun *run(const slim_registry *reg, double keep, bool training, int nth, int64_t n,
                        float *x, int64_t step)
{
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_float(a, "keep_prob", keep);
    slim_tensor_desc d = {SLIM_F32, {.rank = 1, .dim = {n}}};
    slim__oprun *r = NULL;
    slim_error err = {0};
    slim_status st = slim__oprun_new(reg, "dropout", a, &d, 1, training, nth, &r, &err);
    slim_attrs_free(a);
    if (st != SLIM_OK) {
        harness_diag("dropout runner: %s", err.msg);
        return NULL;
    }
    void *in[1] = {x};
    slim__oprun_forward(r, in, false, 42, step, 0);
    return r;
}

static int extra(const slim_registry *reg)
{
    int before = harness_failures();
    enum { N = 20000 };
    const double keep = 0.7;
    float *x = malloc(N * sizeof(float)), *y1 = malloc(N * sizeof(float));
    float *dy = malloc(N * sizeof(float)), *dx = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) {
        x[i] = 1.0f + (float)(i % 97) / 97.0f; /* nonzero, so zero means dropped */
        dy[i] = 0.5f + (float)(i % 13);
    }

    /* training: fraction kept, scaling, and backward using the same mask */
    slim__oprun *r = run(reg, keep, true, 3, N, x, 5);
    harness_ok(r != NULL, "dropout/extra: runner");
    if (!r)
        goto out;
    const float *y = slim__oprun_output(r, 0).data;
    int kept = 0, bad_scale = 0;
    for (int i = 0; i < N; i++) {
        y1[i] = y[i];
        if (y[i] != 0) {
            kept++;
            if (fabs(y[i] - x[i] / keep) > 1e-5 * (1 + fabs(x[i] / keep)))
                bad_scale++;
        }
    }
    double frac = (double)kept / N; /* sd = sqrt(0.21 / N) ~ 0.0032 */
    harness_ok(fabs(frac - keep) < 0.02, "dropout/extra: kept fraction %.4f near %.2f", frac, keep);
    harness_ok(bad_scale == 0, "dropout/extra: kept elements scaled by 1/keep_prob (%d wrong)",
               bad_scale);
    void *in[1] = {x};
    const float *douts[1] = {dy};
    float *dins[1] = {dx};
    slim__oprun_backward(r, in, douts, dins, false, 42, 5);
    int bad_grad = 0;
    for (int i = 0; i < N; i++) {
        double want = y1[i] != 0 ? dy[i] / keep : 0;
        if (fabs(dx[i] - want) > 1e-5 * (1 + fabs(want)))
            bad_grad++;
    }
    harness_ok(bad_grad == 0, "dropout/extra: backward masks and scales like forward (%d wrong)",
               bad_grad);
    slim__oprun_free(r);

    /* another step: another mask; the same step on 1 thread: the same mask */
    r = run(reg, keep, true, 1, N, x, 6);
    int differ = 0;
    for (int i = 0; r && i < N; i++)
        differ += (((const float *)slim__oprun_output(r, 0).data)[i] != 0) != (y1[i] != 0);
    harness_ok(r && differ > N / 10,
               "dropout/extra: step 6 draws a different mask (%d of %d "
               "elements differ)",
               differ, N);
    slim__oprun_free(r);
    r = run(reg, keep, true, 1, N, x, 5);
    int same = r != NULL;
    for (int i = 0; r && i < N; i++)
        same = same && ((const float *)slim__oprun_output(r, 0).data)[i] == y1[i];
    harness_ok(same, "dropout/extra: step 5 on 1 thread gives the 3-thread mask bit for bit");
    slim__oprun_free(r);

    /* inference: identity, forward and backward */
    r = run(reg, keep, false, 3, N, x, 5);
    int ident = r != NULL;
    for (int i = 0; r && i < N; i++)
        ident = ident && ((const float *)slim__oprun_output(r, 0).data)[i] == x[i];
    if (r) {
        slim__oprun_backward(r, in, douts, dins, false, 42, 5);
        for (int i = 0; i < N; i++)
            ident = ident && dx[i] == dy[i];
    }
    harness_ok(ident, "dropout/extra: inference is the identity (forward and backward)");
    slim__oprun_free(r);

    /* keep_prob = 0 is rejected by infer (the schema range is [0, 1]) */
    slim_tensor_desc d4[] = {HARNESS_DESC(1, 4)};
    harness_infer_fails(reg, "dropout", "keep_prob_0", "keep_prob=0", true, d4, 1,
                        "must be in (0, 1]");

    /* keep_prob = 1 in training: nothing dropped, nothing scaled */
    r = run(reg, 1.0, true, 3, N, x, 5);
    ident = r != NULL;
    for (int i = 0; r && i < N; i++)
        ident = ident && ((const float *)slim__oprun_output(r, 0).data)[i] == x[i];
    harness_ok(ident, "dropout/extra: keep_prob=1 keeps every element unscaled");
    slim__oprun_free(r);
out:
    free(x);
    free(y1);
    free(dy);
    free(dx);
    return harness_failures() - before;
}

static const harness_family harness_family_dropout = {"dropout", cases,
                                                      (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_dropout)
