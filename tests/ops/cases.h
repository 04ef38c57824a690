/* tests/ops/cases.h - shorthands for the inputs in the case tables of
 * tests/ops/cases_*.c (harness_input initializers). */
#ifndef SLIM_TESTS_OPS_CASES_H
#define SLIM_TESTS_OPS_CASES_H

#include "harness.h"

/* f32 of shape dims (rank r), drawn in [-1, 1) */
#define F32(r, ...)                                                                                \
    {                                                                                              \
        .rank = r, .dim = { __VA_ARGS__ }                                                          \
    }
/* f32 drawn in [lo_, hi_) */
#define F32R(lo_, hi_, r, ...)                                                                     \
    {                                                                                              \
        .rank = r, .dim = {__VA_ARGS__}, .lo = lo_, .hi = hi_                                      \
    }
/* fixed f32 values v */
#define VALS(r, v, ...)                                                                            \
    {                                                                                              \
        .rank = r, .dim = {__VA_ARGS__}, .values = v                                               \
    }
/* (a,b,c,d): an NHWC activation or a KH KW C O filter */
#define X4(a, b, c, d)                                                                             \
    {                                                                                              \
        .rank = 4, .dim = { a, b, c, d }                                                           \
    }
/* (o): a bias */
#define B1(o)                                                                                      \
    {                                                                                              \
        .rank = 1, .dim = { o }                                                                    \
    }
/* a batch norm's gamma, beta, moving_mean, moving_var for o channels (the
 * variance positive, gamma of either sign) */
#define BN_IN(o)                                                                                   \
    {.rank = 1, .dim = {o}, .lo = -1.5, .hi = 1.5}, {.rank = 1, .dim = {o}},                       \
        {.rank = 1, .dim = {o}, .lo = -0.5, .hi = 0.5},                                            \
    {                                                                                              \
        .rank = 1, .dim = {o}, .lo = 0.2, .hi = 2                                                  \
    }

#endif
