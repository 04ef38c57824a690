/* tests/ops/cases_optim.c - sgd_update and momentum_update (plain and Nesterov):
 * the harness runs them for shapes and threads; extra checks the parameter and
 * the momentum slot after two steps against values worked out by hand, with
 * and without a gradient scale input (global-norm clipping). */
#include "runtime/oprun.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Designated, so that cases may leave any trailing field out. */
#define CASE(nm, o, a, n) .name = nm, .op = o, .attrs = a, .n_in = n

#define P(r, ...)                                                                                  \
    {                                                                                              \
        .rank = r, .dim = {__VA_ARGS__}, .state = true                                             \
    }
#define G(r, ...)                                                                                  \
    {                                                                                              \
        .rank = r, .dim = { __VA_ARGS__ }                                                          \
    }

static const harness_case cases[] = {
    {CASE("basic", "sgd_update", NULL, 2), .in = {P(2, 3, 4), G(2, 3, 4)}, .no_grad = true},
    {CASE("conv_filter", "sgd_update", NULL, 2), .in = {P(4, 3, 3, 2, 5), G(4, 3, 3, 2, 5)},
     .no_grad = true},
    {CASE("basic", "momentum_update", NULL, 3), .in = {P(2, 3, 4), G(2, 3, 4), P(2, 3, 4)},
     .no_grad = true},
    {CASE("nesterov", "momentum_update", "use_nesterov=true; momentum=0.5", 3),
     .in = {P(1, 7), G(1, 7), P(1, 7)}, .no_grad = true},
    {CASE("scaled", "sgd_update", NULL, 3),
     .in = {P(2, 3, 4), G(2, 3, 4), {.rank = 0, .lo = 0.2, .hi = 0.8}}, .no_grad = true},
    {CASE("scaled", "momentum_update", NULL, 4),
     .in = {P(2, 3, 4), G(2, 3, 4), P(2, 3, 4), {.rank = 0, .lo = 0.2, .hi = 0.8}},
     .no_grad = true},
};

/*
 * Two steps with lr 0.1 and momentum 0.9 from param w0 = [1, -2, 0], slot 0,
 * with grads g1 = [0.5, 1, -1] then g2 = [-1, 0.25, 0.5]:
 *   sgd:      w2 = w0 - 0.1 g1 - 0.1 g2                = [1.05, -2.125, 0.05]
 *   momentum: a1 = g1 = [0.5, 1, -1], w1 = w0 - 0.1 a1 = [0.95, -2.1, 0.1]
 *             a2 = 0.9 a1 + g2 = [-0.55, 1.15, -0.4]
 *             w2 = w1 - 0.1 a2                       = [1.005, -2.215, 0.14]
 *   nesterov: w1 = w0 - 0.1 (g1 + 0.9 a1)            = [0.905, -2.19, 0.19]
 *             w2 = w1 - 0.1 (g2 + 0.9 a2)            = [1.0545, -2.3185, 0.176]
 *             (the slot is the same as plain momentum)
 * with a gradient scale of 0.5 on both steps (the gradients halved):
 *   sgd:      w2 = w0 - 0.05 (g1 + g2)               = [1.025, -2.0625, 0.025]
 *   momentum: a1 = [0.25, 0.5, -0.5], a2 = 0.9 a1 + 0.5 g2 = [-0.275, 0.575, -0.2]
 *             w2 = w0 - 0.1 (a1 + a2)                = [1.0025, -2.1075, 0.07]
 */
static const float w0[] = {1, -2, 0}, g1[] = {0.5f, 1, -1}, g2[] = {-1, 0.25f, 0.5f};
static const float sgd_w2[] = {1.05f, -2.125f, 0.05f};
static const float mom_w2[] = {1.005f, -2.215f, 0.14f}, mom_a2[] = {-0.55f, 1.15f, -0.4f};
static const float nes_w2[] = {1.0545f, -2.3185f, 0.176f};
static const float sgd_half_w2[] = {1.025f, -2.0625f, 0.025f};
static const float mom_half_w2[] = {1.0025f, -2.1075f, 0.07f},
                   mom_half_a2[] = {-0.275f, 0.575f, -0.2f};

/* scale: the gradient scale input, 0 = none */
static int two_steps(const slim_registry *reg, const char *op, const char *nesterov, int nth,
                     bool ref, float scale, const float *want_w, const float *want_a)
{
    const slim_tensor_desc d = {SLIM_F32, {1, {3}}};
    slim_tensor_desc descs[4] = {d, d, d, d};
    float w[3], g[3], acc[3] = {0, 0, 0}, sc[16] = {scale};
    memcpy(w, w0, sizeof w);
    void *in[4] = {w, g, acc, NULL};
    int n_in = want_a ? 3 : 2;
    if (scale != 0) {
        descs[n_in] = (slim_tensor_desc){SLIM_F32, {0}};
        in[n_in++] = sc;
    }
    slim_attrs *a = slim_attrs_new();
    if (want_a) {
        slim_attrs_set_text(a, "momentum", "0.9");
        slim_attrs_set_text(a, "use_nesterov", nesterov);
    }
    slim__oprun *r = NULL;
    slim_error err = {0};
    slim_status st = slim__oprun_new(reg, op, a, descs, n_in, true, nth, &r, &err);
    slim_attrs_free(a);
    char name[64];
    snprintf(name, sizeof name, "%s%s",
             want_a ? (nesterov[0] == 't' ? "nesterov" : "momentum") : "sgd",
             scale != 0 ? "_scaled" : "");
    if (st != SLIM_OK) {
        harness_ok(false, "%s/two_steps_%s: infer: %s", op, name, err.msg);
        return 1;
    }
    memcpy(g, g1, sizeof g);
    slim__oprun_forward(r, in, ref, 1, 0, 0.1f);
    memcpy(g, g2, sizeof g);
    slim__oprun_forward(r, in, ref, 1, 1, 0.1f);
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        worst = fmax(worst, fabs(w[i] - want_w[i]));
        if (want_a)
            worst = fmax(worst, fabs(acc[i] - want_a[i]));
    }
    bool ok = worst <= 2e-6;
    harness_ok(ok, "%s/two_steps_%s: param%s after two steps, %d thread%s%s (max err %.2g)", op,
               name, want_a ? " and slot" : "", nth, nth > 1 ? "s" : "", ref ? " (reference)" : "",
               worst);
    if (!ok)
        harness_diag("param [%.8g, %.8g, %.8g] slot [%.8g, %.8g, %.8g]", w[0], w[1], w[2], acc[0],
                     acc[1], acc[2]);
    slim__oprun_free(r);
    return ok ? 0 : 1;
}

static int extra(const slim_registry *reg)
{
    int failed = 0;
    for (int k = 0; k < 3; k++) {
        int nth = k == 1 ? 3 : 1;
        bool ref = k == 2;
        failed += two_steps(reg, "sgd_update", "false", nth, ref, 0, sgd_w2, NULL);
        failed += two_steps(reg, "momentum_update", "false", nth, ref, 0, mom_w2, mom_a2);
        failed += two_steps(reg, "momentum_update", "true", nth, ref, 0, nes_w2, mom_a2);
        failed += two_steps(reg, "sgd_update", "false", nth, ref, 0.5f, sgd_half_w2, NULL);
        failed +=
            two_steps(reg, "momentum_update", "false", nth, ref, 0.5f, mom_half_w2, mom_half_a2);
    }
    return failed;
}

static const harness_family harness_family_optim = {"optim", cases,
                                                    (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_optim)
