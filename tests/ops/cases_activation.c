/* tests/ops/cases_activation.c - relu, relu6, leaky_relu, elu, sigmoid, tanh, hard_sigmoid,
 * hard_swish, silu, gelu, clip: odd sizes,
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

/* hard_sigmoid (0.2, 0.5): 0.2 x + 0.5 clipped to [0, 1]; PyTorch's alpha 1/6. */
static const float hsig_x[] = {-5, -2.5f, 0, 1, 2.5f, 5};
static const float hsig_y[] = {0, 0, 0.5f, 0.7f, 1, 1};
static const float hsig6_y[] = {0, 0.083333336f, 0.5f, 0.6666667f, 0.9166667f, 1};
/* hard_swish: x relu6(x + 3) / 6 */
static const float hsw_x[] = {-4, -3, -1, 0, 1, 3, 4};
static const float hsw_y[] = {0, 0, -0.33333334f, 0, 0.6666667f, 3, 4};
/* silu: x sigmoid(x); gelu: x Phi(x) (Phi(1) = 0.8413447, Phi(3) = 0.99865010) */
static const float silu_x[] = {0, 1, -1, 20};
static const float silu_y[] = {0, 0.7310586f, -0.26894142f, 20};
static const float gelu_x[] = {0, 1, -1, 3};
static const float gelu_y[] = {0, 0.8413447f, -0.15865526f, 2.9959503f};
static const float clip_x[] = {-3, -1, 0, 1.5f, 2, 5};
static const float clip_y[] = {-1, -1, 0, 1.5f, 2, 2};

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

    /* ranges inside the linear part (0 < 0.2 x + 0.5 < 1): no kink for the differences */
    {CASE("nhwc", "hard_sigmoid", NULL, 1, F32R(-2, 2, 4, 2, 3, 4, 5))},
    {CASE("torch_alpha", "hard_sigmoid", "alpha=0.16666667; beta=0.5", 1,
          F32R(-2.5, 2.5, 2, 3, 7))},
    {CASE("saturated", "hard_sigmoid", NULL, 1, F32R(3, 8, 2, 2, 5))},
    {CASE("known", "hard_sigmoid", NULL, 1, VALS(1, hsig_x, 6)), .expect = hsig_y, .no_grad = true},
    {CASE("known_torch", "hard_sigmoid", "alpha=0.16666667", 1, VALS(1, hsig_x, 6)),
     .expect = hsig6_y, .no_grad = true},

    {CASE("nhwc", "hard_swish", NULL, 1, F32R(-2.5, 2.5, 4, 2, 3, 4, 5))},
    {CASE("beyond", "hard_swish", NULL, 1, F32R(3.5, 6, 2, 1, 9))},
    {CASE("below", "hard_swish", NULL, 1, F32R(-6, -3.5, 2, 1, 9))},
    {CASE("known", "hard_swish", NULL, 1, VALS(1, hsw_x, 7)), .expect = hsw_y, .no_grad = true},

    {CASE("nhwc", "silu", NULL, 1, F32R(-6, 6, 4, 2, 3, 4, 5))},
    {CASE("odd_batch1", "silu", NULL, 1, F32R(-4, 4, 2, 1, 17))},
    {CASE("known", "silu", NULL, 1, VALS(1, silu_x, 4)), .expect = silu_y},

    {CASE("nhwc", "gelu", NULL, 1, F32R(-4, 4, 4, 2, 3, 4, 5))},
    {CASE("odd_batch1", "gelu", NULL, 1, F32R(-3, 3, 3, 1, 5, 3))},
    {CASE("known", "gelu", NULL, 1, VALS(1, gelu_x, 4)), .expect = gelu_y},

    {CASE("inside", "clip", "min=-5; max=5", 1, F32R(-4, 4, 4, 2, 3, 4, 5))},
    {CASE("below_min", "clip", "min=2; max=5", 1, F32R(-3, 1.5, 2, 3, 5))},
    {CASE("above_max", "clip", "min=-5; max=-2", 1, F32R(-1.5, 3, 2, 3, 5))},
    {CASE("known", "clip", "min=-1; max=2", 1, VALS(1, clip_x, 6)), .expect = clip_y,
     .no_grad = true},
};

static const harness_family harness_family_activation = {
    "activation", cases, (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_activation)
