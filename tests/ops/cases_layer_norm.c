/* tests/ops/cases_layer_norm.c - layer_norm over the last axis of 2-D to 4-D inputs (the
 * gradients of x, gamma and beta, and of the mean and 1/std outputs too), epsilon
 * variants, and known values. */
#include "cases.h"

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

/* [1, 2, 3]: mean 2, variance 2/3, so (x - 2) * sqrt(3/2) with eps 0 */
static const float x123[] = {1, 2, 3, 10, 10, 13};
static const float ones3[] = {1, 1, 1}, zeros3[] = {0, 0, 0};
static const float y123[] = {-1.2247449f, 0, 1.2247449f, -0.70710677f, -0.70710677f, 1.4142135f};
static const float g3[] = {2, 1, 0.5f}, b3[] = {1, 0, -1};
static const float y123gb[] = {-1.4494898f,  0,           -0.38762754f, -0.41421354f,
                               -0.70710677f, -0.29289323f};

static const harness_case cases[] = {
    {CASE("nhwc", "layer_norm", NULL, 3, F32(4, 2, 3, 3, 8), F32R(0.5, 1.5, 1, 8), F32(1, 8))},
    {CASE("rows", "layer_norm", NULL, 3, F32(2, 5, 7), F32R(0.5, 1.5, 1, 7), F32(1, 7))},
    {CASE("tokens", "layer_norm", "epsilon=1e-6", 3, F32(3, 2, 4, 16), F32R(0.5, 1.5, 1, 16),
          F32(1, 16))},
    {CASE("large_eps", "layer_norm", "epsilon=0.5", 3, F32(2, 3, 5), F32R(-1, 1, 1, 5), F32(1, 5))},
    {CASE("known", "layer_norm", "epsilon=0", 3, VALS(2, x123, 2, 3), VALS(1, ones3, 3),
          VALS(1, zeros3, 3)),
     .expect = y123},
    {CASE("known_affine", "layer_norm", "epsilon=0", 3, VALS(2, x123, 2, 3), VALS(1, g3, 3),
          VALS(1, b3, 3)),
     .expect = y123gb},
};

static const harness_family harness_family_layer_norm = {
    "layer_norm", cases, (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_layer_norm)
