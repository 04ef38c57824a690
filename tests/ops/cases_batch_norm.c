/* tests/ops/cases_batch_norm.c - batch_norm in training (batch statistics, frozen)
 * and inference, known values, and the moving-statistics update after one step. */
#include "runtime/oprun.h"
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Designated, so that cases may leave any trailing field out. */
#define CASE(nm, o, a, n) .name = nm, .op = o, .attrs = a, .n_in = n

/* x, then gamma, beta (trainable), then the moving statistics (state). */
#define BN_IN(...)                                                                                 \
    {                                                                                              \
        .rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), .dim = { __VA_ARGS__ }  \
    }
#define BN_CH(C)                                                                                   \
    {.rank = 1, .dim = {C}, .lo = 0.5, .hi = 1.5}, {.rank = 1, .dim = {C}},                        \
        {.rank = 1, .dim = {C}, .lo = -0.5, .hi = 0.5, .state = true},                             \
    {                                                                                              \
        .rank = 1, .dim = {C}, .lo = 0.5, .hi = 1.5, .state = true                                 \
    }

/*
 * Training, x (4,2): channel 0 = [0,0,2,2] (mean 1, biased var 1), channel 1 =
 * [1,3,1,3] (mean 2, var 1); epsilon 0, gamma [2,1], beta [0,0.5]:
 * y = gamma (x - mean) + beta.
 */
static const float tr_x[] = {0, 1, 0, 3, 2, 1, 2, 3};
static const float tr_gamma[] = {2, 1}, tr_beta[] = {0, 0.5f};
static const float tr_mm[] = {0.5f, -1}, tr_mv[] = {2, 3};
static const float tr_y[] = {-2, -0.5f, -2, 1.5f, 2, -0.5f, 2, 1.5f};
/* the same through a fused relu, and with gamma [8,1] through a fused relu6 */
static const float tr_y_relu[] = {0, 0, 0, 1.5f, 2, 0, 2, 1.5f};
static const float tr_gamma8[] = {8, 1};
static const float tr_y_relu6[] = {0, 0, 0, 1.5f, 6, 0, 6, 1.5f};

/* Inference, x (2,2) = [[1,2],[3,4]], moving mean [1,2], var [4,0.25], eps 0,
 * gamma [1,2], beta [0,1]: y = gamma (x - mm) / sqrt(mv) + beta. */
static const float in_x[] = {1, 2, 3, 4}, in_gamma[] = {1, 2}, in_beta[] = {0, 1};
static const float in_mm[] = {1, 2}, in_mv[] = {4, 0.25f};
static const float in_y[] = {0, 1, 1, 9};

static const harness_case cases[] = {
    {CASE("train_nhwc", "batch_norm", NULL, 5), .in = {BN_IN(2, 3, 3, 4), BN_CH(4)},
     .training = true},
    {CASE("train_nc", "batch_norm", NULL, 5), .in = {BN_IN(5, 3), BN_CH(3)}, .training = true},
    {CASE("train_batch1", "batch_norm", NULL, 5), .in = {BN_IN(1, 2, 2, 3), BN_CH(3)},
     .training = true},
    {CASE("train_odd", "batch_norm", "epsilon=0.01; decay=0.9", 5),
     .in = {BN_IN(3, 5, 3, 5), BN_CH(5)}, .training = true},
    {CASE("train_many_channels", "batch_norm", NULL, 5), .in = {BN_IN(2, 2, 2, 37), BN_CH(37)},
     .training = true},
    {CASE("train_biased_moving_var", "batch_norm", "moving_var_unbiased=false", 5),
     .in = {BN_IN(2, 2, 3, 3), BN_CH(3)}, .training = true},
    {CASE("train_frozen", "batch_norm", "use_batch_stats=false", 5),
     .in = {BN_IN(2, 3, 3, 4), BN_CH(4)}, .training = true},
    /* |mean| >> std: the shifted sums must not cancel */
    {CASE("train_large_mean", "batch_norm", NULL, 5),
     .in = {{.rank = 2, .dim = {16, 3}, .lo = 1000, .hi = 1002}, BN_CH(3)}, .training = true,
     .fwd_tol = 5e-4, .no_grad = true},
    {CASE("infer_nhwc", "batch_norm", NULL, 5), .in = {BN_IN(2, 3, 3, 4), BN_CH(4)}},
    {CASE("infer_nc", "batch_norm", "epsilon=0.1", 5), .in = {BN_IN(3, 6), BN_CH(6)}},
    {CASE("train_known", "batch_norm", "epsilon=0", 5),
     .in = {{.rank = 2, .dim = {4, 2}, .values = tr_x},
            {.rank = 1, .dim = {2}, .values = tr_gamma},
            {.rank = 1, .dim = {2}, .values = tr_beta},
            {.rank = 1, .dim = {2}, .values = tr_mm, .state = true},
            {.rank = 1, .dim = {2}, .values = tr_mv, .state = true}},
     .training = true, .expect = tr_y},
    /* fused activations: finite differences away from the kinks, known values */
    {CASE("train_relu", "batch_norm", "activation=relu", 5), .in = {BN_IN(2, 3, 3, 4), BN_CH(4)},
     .training = true},
    {CASE("train_relu6", "batch_norm", "activation=relu6", 5), .in = {BN_IN(3, 2, 2, 5), BN_CH(5)},
     .training = true},
    {CASE("train_frozen_relu", "batch_norm", "use_batch_stats=false; activation=relu", 5),
     .in = {BN_IN(2, 3, 3, 4), BN_CH(4)}, .training = true},
    {CASE("infer_relu", "batch_norm", "activation=relu", 5), .in = {BN_IN(2, 3, 3, 4), BN_CH(4)}},
    {CASE("train_known_relu", "batch_norm", "epsilon=0; activation=relu", 5),
     .in = {{.rank = 2, .dim = {4, 2}, .values = tr_x},
            {.rank = 1, .dim = {2}, .values = tr_gamma},
            {.rank = 1, .dim = {2}, .values = tr_beta},
            {.rank = 1, .dim = {2}, .values = tr_mm, .state = true},
            {.rank = 1, .dim = {2}, .values = tr_mv, .state = true}},
     .training = true, .expect = tr_y_relu, .no_grad = true},
    {CASE("train_known_relu6", "batch_norm", "epsilon=0; activation=relu6", 5),
     .in = {{.rank = 2, .dim = {4, 2}, .values = tr_x},
            {.rank = 1, .dim = {2}, .values = tr_gamma8},
            {.rank = 1, .dim = {2}, .values = tr_beta},
            {.rank = 1, .dim = {2}, .values = tr_mm, .state = true},
            {.rank = 1, .dim = {2}, .values = tr_mv, .state = true}},
     .training = true, .expect = tr_y_relu6, .no_grad = true},
    {CASE("infer_known", "batch_norm", "epsilon=0", 5),
     .in = {{.rank = 2, .dim = {2, 2}, .values = in_x},
            {.rank = 1, .dim = {2}, .values = in_gamma},
            {.rank = 1, .dim = {2}, .values = in_beta},
            {.rank = 1, .dim = {2}, .values = in_mm, .state = true},
            {.rank = 1, .dim = {2}, .values = in_mv, .state = true}},
     .expect = in_y},
};

/*
 * One training step on tr_x with decay 0.9 from moving mean [0.5,-1], var [2,3]:
 *   mean = 0.9 [0.5,-1] + 0.1 [1,2]          = [0.55, -0.7]
 *   var  = 0.9 [2,3] + 0.1 [4/3, 4/3] (n/(n-1) = 4/3 on the biased 1) = [1.9333333, 2.8333333]
 *   biased (ONNX): 0.9 [2,3] + 0.1 [1,1]      = [1.9, 2.8]
 * Frozen statistics and inference leave them alone.
 */
static int check_moving(const slim_registry *reg, const char *label, const char *unbiased,
                        const char *use_batch, bool training, int nth, bool ref,
                        const float *want_mm, const float *want_mv)
{
    slim_tensor_desc d[5] = {{SLIM_F32, {2, {4, 2}}},
                             {SLIM_F32, {1, {2}}},
                             {SLIM_F32, {1, {2}}},
                             {SLIM_F32, {1, {2}}},
                             {SLIM_F32, {1, {2}}}};
    float x[8], gamma[2], beta[2], mm[2], mv[2];
    for (int i = 0; i < 8; i++)
        x[i] = tr_x[i];
    for (int i = 0; i < 2; i++) {
        gamma[i] = tr_gamma[i];
        beta[i] = tr_beta[i];
        mm[i] = tr_mm[i];
        mv[i] = tr_mv[i];
    }
    void *in[5] = {x, gamma, beta, mm, mv};
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_text(a, "epsilon", "0");
    slim_attrs_set_text(a, "decay", "0.9");
    slim_attrs_set_text(a, "moving_var_unbiased", unbiased);
    slim_attrs_set_text(a, "use_batch_stats", use_batch);
    slim__oprun *r = NULL;
    slim_error err = {0};
    slim_status st = slim__oprun_new(reg, "batch_norm", a, d, 5, training, nth, &r, &err);
    slim_attrs_free(a);
    if (st != SLIM_OK) {
        harness_ok(false, "batch_norm/%s: infer: %s", label, err.msg);
        return 1;
    }
    slim__oprun_forward(r, in, ref, 1, 0, 0.1f);
    double worst = 0;
    for (int i = 0; i < 2; i++) {
        worst = fmax(worst, fabs(mm[i] - want_mm[i]));
        worst = fmax(worst, fabs(mv[i] - want_mv[i]));
    }
    bool ok = worst <= 1e-6;
    harness_ok(ok, "batch_norm/%s: moving statistics after one step, %d thread%s%s", label, nth,
               nth > 1 ? "s" : "", ref ? " (reference)" : "");
    if (!ok)
        harness_diag("moving_mean [%.8g, %.8g] moving_var [%.8g, %.8g], expected [%.8g, %.8g] "
                     "[%.8g, %.8g]",
                     mm[0], mm[1], mv[0], mv[1], want_mm[0], want_mm[1], want_mv[0], want_mv[1]);
    slim__oprun_free(r);
    return ok ? 0 : 1;
}

/*
 * Statistics synchronized across processes (slim_kernel_ctx.allreduce), two
 * processes simulated by two threads whose allreduce meets at a barrier: each
 * runs the op on half of x's rows. Their y and dx must be the halves of one
 * run on all the rows, their moving statistics that run's, and their dgamma
 * and dbeta add up to its (each process's part, as the gradient allreduce
 * will sum them).
 */
enum { SYNC_ROWS = 12, SYNC_C = 5 };

static struct {
    pthread_barrier_t bar;
    double buf[2][2 * SYNC_C * 2];
} sync_meet;

static void sync_allreduce(const slim_kernel_ctx *c, double *data, int64_t n)
{
    memcpy(sync_meet.buf[c->replica], data, (size_t)n * sizeof *data);
    pthread_barrier_wait(&sync_meet.bar);
    for (int64_t i = 0; i < n; i++)
        data[i] = sync_meet.buf[0][i] + sync_meet.buf[1][i];
    pthread_barrier_wait(&sync_meet.bar); /* before either writes buf again */
}

typedef struct sync_job {
    slim__oprun *r;
    bool ref;
    float *x, *gamma, *beta, *mm, *mv, *dy, *y, *dx, *dgamma, *dbeta;
    int rows;
} sync_job;

static void *sync_run(void *arg)
{
    sync_job *j = arg;
    void *in[5] = {j->x, j->gamma, j->beta, j->mm, j->mv};
    slim__oprun_forward(j->r, in, j->ref, 1, 0, 0.1f);
    slim_tensor y = slim__oprun_output(j->r, 0);
    memcpy(j->y, y.data, sizeof(float) * (size_t)j->rows * SYNC_C);
    const float *dout[1] = {j->dy};
    float *din[5] = {j->dx, j->dgamma, j->dbeta, NULL, NULL};
    slim__oprun_backward(j->r, in, dout, din, j->ref, 1, 0);
    return NULL;
}

static int check_sync(const slim_registry *reg, bool ref)
{
    float x[SYNC_ROWS * SYNC_C], dy[SYNC_ROWS * SYNC_C], gamma[SYNC_C], beta[SYNC_C];
    for (int i = 0; i < SYNC_ROWS * SYNC_C; i++) {
        x[i] = 3.0f + (float)((i * 37) % 23) / 7.0f - (float)(i % SYNC_C);
        dy[i] = (float)((i * 13) % 17) / 9.0f - 0.8f;
    }
    for (int k = 0; k < SYNC_C; k++) {
        gamma[k] = 0.5f + 0.25f * (float)k;
        beta[k] = 0.1f * (float)k - 0.2f;
    }
    sync_job job[3];
    float mm[3][SYNC_C], mv[3][SYNC_C], y[3][SYNC_ROWS * SYNC_C], dx[3][SYNC_ROWS * SYNC_C];
    float dg[3][SYNC_C], db[3][SYNC_C];
    slim__oprun *r[3] = {NULL, NULL, NULL};
    slim_error err = {0};
    int failed = 0;
    for (int k = 0; k < 3; k++) { /* 0: all rows alone; 1, 2: the halves */
        int rows = k ? SYNC_ROWS / 2 : SYNC_ROWS;
        slim_tensor_desc d[5] = {{SLIM_F32, {2, {rows, SYNC_C}}},
                                 {SLIM_F32, {1, {SYNC_C}}},
                                 {SLIM_F32, {1, {SYNC_C}}},
                                 {SLIM_F32, {1, {SYNC_C}}},
                                 {SLIM_F32, {1, {SYNC_C}}}};
        slim_attrs *a = slim_attrs_new();
        slim_attrs_set_text(a, "decay", "0.5");
        slim_status st = slim__oprun_new(reg, "batch_norm", a, d, 5, true, k ? 2 : 1, &r[k], &err);
        slim_attrs_free(a);
        if (st) {
            harness_ok(false, "batch_norm/sync: infer: %s", err.msg);
            failed = 1;
            goto done;
        }
        if (k)
            slim__oprun_set_replica(r[k], k - 1, 2, sync_allreduce);
        for (int c = 0; c < SYNC_C; c++)
            mm[k][c] = 0.3f, mv[k][c] = 1.5f;
        int off = k == 2 ? SYNC_ROWS / 2 * SYNC_C : 0;
        job[k] = (sync_job){r[k],     ref,        x + off,     gamma, beta,  mm[k], mv[k],
                            dy + off, y[k] + off, dx[k] + off, dg[k], db[k], rows};
    }
    sync_run(&job[0]);
    pthread_barrier_init(&sync_meet.bar, NULL, 2);
    pthread_t th;
    pthread_create(&th, NULL, sync_run, &job[2]);
    sync_run(&job[1]);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&sync_meet.bar);
    double wy = 0, wdx = 0, wst = 0, wg = 0;
    for (int i = 0; i < SYNC_ROWS * SYNC_C; i++) {
        float yh = i < SYNC_ROWS / 2 * SYNC_C ? y[1][i] : y[2][i];
        float dxh = i < SYNC_ROWS / 2 * SYNC_C ? dx[1][i] : dx[2][i];
        wy = fmax(wy, fabs(yh - y[0][i]));
        wdx = fmax(wdx, fabs(dxh - dx[0][i]));
    }
    for (int c = 0; c < SYNC_C; c++) {
        for (int k = 1; k < 3; k++)
            wst = fmax(wst, fmax(fabs(mm[k][c] - mm[0][c]), fabs(mv[k][c] - mv[0][c])));
        wg = fmax(wg, fabs(dg[1][c] + dg[2][c] - dg[0][c]));
        wg = fmax(wg, fabs(db[1][c] + db[2][c] - db[0][c]));
    }
    bool ok = wy < 1e-5 && wdx < 1e-5 && wst < 1e-6 && wg < 1e-5;
    harness_ok(ok,
               "batch_norm/sync: 2 processes of 6 rows with synchronized statistics = 1 of 12 "
               "(y, dx, moving statistics; dgamma and dbeta add up)%s",
               ref ? " (reference)" : "");
    if (!ok)
        harness_diag("max differences: y %.3g, dx %.3g, moving statistics %.3g, dgamma/dbeta %.3g",
                     wy, wdx, wst, wg);
    failed = !ok;
done:
    for (int k = 0; k < 3; k++)
        slim__oprun_free(r[k]);
    return failed;
}

static int extra(const slim_registry *reg)
{
    static const float mm1[] = {0.55f, -0.7f};
    static const float mv_unbiased[] = {1.9333333f, 2.8333333f}, mv_biased[] = {1.9f, 2.8f};
    int failed = 0;
    slim_tensor_desc bad[5] = {{SLIM_F32, {4, {2, 2, 2, 4}}},
                               {SLIM_F32, {1, {4}}},
                               {SLIM_F32, {1, {3}}},
                               {SLIM_F32, {1, {4}}},
                               {SLIM_F32, {1, {4}}}};
    failed += harness_infer_fails(reg, "batch_norm", "bad_beta", NULL, true, bad, 5,
                                  "beta (3) must be (4,), the channels of x (2,2,2,4)");
    for (int k = 0; k < 3; k++) {
        int nth = k == 1 ? 3 : 1;
        bool ref = k == 2;
        failed +=
            check_moving(reg, "moving_unbiased", "true", "true", true, nth, ref, mm1, mv_unbiased);
        failed +=
            check_moving(reg, "moving_biased", "false", "true", true, nth, ref, mm1, mv_biased);
        failed += check_moving(reg, "moving_frozen", "true", "false", true, nth, ref, tr_mm, tr_mv);
        failed +=
            check_moving(reg, "moving_inference", "true", "true", false, nth, ref, tr_mm, tr_mv);
    }
    failed += check_sync(reg, false);
    failed += check_sync(reg, true);
    return failed;
}

static const harness_family harness_family_batch_norm = {
    "batch_norm", cases, (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_batch_norm)
