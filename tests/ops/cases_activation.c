/* tests/ops/cases_activation.c - relu, relu6, leaky_relu, elu, sigmoid, tanh: odd sizes,
 * batch 1, a scalar, attribute variants, and known values on both sides of every kink.
 * Random inputs for the piecewise-linear ops are drawn from ranges that a finite-difference
 * step is unlikely to straddle a kink in; the known-value cases that sit on a kink skip
 * the gradient check. */
#include "cases.h"

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

static const float relu_x[] = {-2, -0.5f, 0, 0.5f, 3};
static const float relu_y[] = {0, 0, 0, 0.5f, 3};
static const float relu6_x[] = {-1, -0.01f, 0, 0.01f, 5.99f, 6, 6.01f, 100};
static const float relu6_y[] = {0, 0, 0, 0.01f, 5.99f, 6, 6, 6};
static const float leaky_x[] = {-2, -0.5f, 0, 3};
static const float leaky_y[] = {-0.4f, -0.1f, 0, 3};    /* default alpha 0.2 */
static const float leaky_y01[] = {-0.2f, -0.05f, 0, 3}; /* alpha 0.1 */
static const float elu_x[] = {-1, 0, 2, -20};
static const float elu_y[] = {-0.63212056f, 0, 2, -1}; /* e^-1 - 1; e^-20 - 1 ~ -1 */
static const float elu_y05[] = {-0.31606028f, 0, 2, -0.5f};
/* sigmoid(ln 3) = 3/4, tanh(ln 2) = (2 - 1/2) / (2 + 1/2) = 0.6; saturation at +-100. */
static const float sig_x[] = {0, 1.0986123f, -1.0986123f, 100, -100};
static const float sig_y[] = {0.5f, 0.75f, 0.25f, 1, 0};
static const float tanh_x[] = {0, 0.69314718f, -0.69314718f, 50, -50};
static const float tanh_y[] = {0, 0.6f, -0.6f, 1, -1};

static const harness_case cases[] = {
    {CASE("nhwc", "relu", NULL, 1, F32R(-1, 1, 4, 2, 3, 4, 5))},
    {CASE("odd_batch1", "relu", NULL, 1, F32R(-1, 1, 2, 1, 13))},
    {CASE("vector7", "relu", NULL, 1, F32R(-1, 1, 1, 7))},
    {CASE("known", "relu", NULL, 1, VALS(1, relu_x, 5)), .expect = relu_y, .no_grad = true},

    {CASE("nhwc", "relu6", NULL, 1, F32R(-3, 9, 4, 2, 3, 3, 5))},
    {CASE("odd_batch1", "relu6", NULL, 1, F32R(-2, 8, 3, 1, 5, 7))},
    {CASE("known", "relu6", NULL, 1, VALS(1, relu6_x, 8)), .expect = relu6_y, .no_grad = true},

    {CASE("default_alpha", "leaky_relu", NULL, 1, F32R(-2, 2, 4, 2, 3, 4, 3))},
    {CASE("alpha_0.1", "leaky_relu", "alpha=0.1", 1, F32R(-2, 2, 2, 1, 11))},
    {CASE("known", "leaky_relu", NULL, 1, VALS(1, leaky_x, 4)), .expect = leaky_y, .no_grad = true},
    {CASE("known_alpha", "leaky_relu", "alpha=0.1", 1, VALS(1, leaky_x, 4)), .expect = leaky_y01,
     .no_grad = true},

    {CASE("default_alpha", "elu", NULL, 1, F32R(-3, 2, 4, 2, 3, 4, 3))},
    {CASE("alpha_0.5", "elu", "alpha=0.5", 1, F32R(-3, 2, 3, 1, 5, 7))},
    {CASE("known", "elu", NULL, 1, VALS(1, elu_x, 4)), .expect = elu_y, .no_grad = true},
    {CASE("known_alpha", "elu", "alpha=0.5", 1, VALS(1, elu_x, 4)), .expect = elu_y05,
     .no_grad = true},

    {CASE("nhwc", "sigmoid", NULL, 1, F32R(-6, 6, 4, 2, 3, 4, 5))},
    {CASE("odd_batch1", "sigmoid", NULL, 1, F32R(-4, 4, 2, 1, 17))},
    {CASE("scalar", "sigmoid", NULL, 1, F32R(-2, 2, 0, 0))},
    {CASE("known", "sigmoid", NULL, 1, VALS(1, sig_x, 5)), .expect = sig_y},

    {CASE("nhwc", "tanh", NULL, 1, F32R(-3, 3, 4, 2, 3, 4, 5))},
    {CASE("odd_batch1", "tanh", NULL, 1, F32R(-3, 3, 3, 1, 3, 5))},
    {CASE("known", "tanh", NULL, 1, VALS(1, tanh_x, 5)), .expect = tanh_y},
};

static const harness_family harness_family_activation = {
    "activation", cases, (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_activation)
