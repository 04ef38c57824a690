/* tests/ops/cases_lrn.c - lrn: TensorFlow's defaults, CifarNet's and AlexNet-like settings,
 * every beta special case (0.5, 0.75, 1) and a general one, radius 0 and a radius wider than
 * the channels, one channel, batch 1, and known values on tiny vectors. Strong alpha makes
 * the cross-channel term of the gradient matter. */
#include "cases.h"

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

/* x = [1,2,3], r = 1, bias 1, alpha 1, beta 1: S = [5,14,13], n = [6,15,14], y = x/n. */
static const float x123[] = {1, 2, 3};
static const float y_r1[] = {0.16666667f, 0.13333333f, 0.21428571f};
/* defaults (r = 5 covers all): S = 14, n = 15, y = x / sqrt(15). */
static const float y_def[] = {0.25819889f, 0.51639778f, 0.77459667f};
/* r = 0, bias 2, alpha 0.5, beta 0.75: y = x / (2 + x^2/2)^0.75 -> n = [2.5, 4, 6.5]. */
static const float y_r0[] = {0.50297337f, 0.70710678f, 0.73694697f};

static const harness_case cases[] = {
    {CASE("defaults", "lrn", NULL, 1, F32(4, 2, 3, 3, 8))},
    {CASE("cifarnet", "lrn", "depth_radius=4; bias=1.0; alpha=0.000111111; beta=0.75", 1,
          F32R(-3, 3, 4, 2, 3, 3, 16))},
    {CASE("strong_075", "lrn", "depth_radius=2; bias=1.0; alpha=0.5; beta=0.75", 1,
          F32(4, 2, 3, 2, 7))},
    {CASE("strong_beta1", "lrn", "depth_radius=1; bias=2.0; alpha=0.3; beta=1.0", 1,
          F32(4, 1, 2, 3, 6))},
    {CASE("general_beta", "lrn", "depth_radius=3; bias=1.5; alpha=0.4; beta=0.6", 1,
          F32(4, 2, 2, 2, 9))},
    {CASE("radius0", "lrn", "depth_radius=0; alpha=0.7", 1, F32(3, 2, 3, 5))},
    {CASE("radius_wide", "lrn", "depth_radius=10; alpha=0.2", 1, F32(2, 3, 5))},
    {CASE("one_channel", "lrn", "depth_radius=2; alpha=0.5; beta=0.75", 1, F32(4, 2, 2, 2, 1))},
    {CASE("batch1_odd", "lrn", "depth_radius=2; alpha=0.25", 1, F32(4, 1, 3, 5, 11))},
    {CASE("known_r1", "lrn", "depth_radius=1; bias=1; alpha=1; beta=1", 1, VALS(1, x123, 3)),
     .expect = y_r1},
    {CASE("known_defaults", "lrn", NULL, 1, VALS(1, x123, 3)), .expect = y_def},
    {CASE("known_r0", "lrn", "depth_radius=0; bias=2; alpha=0.5; beta=0.75", 1, VALS(1, x123, 3)),
     .expect = y_r0},
};

static const harness_family harness_family_lrn = {"lrn", cases,
                                                  (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_lrn)
