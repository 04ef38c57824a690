/*
 * ops/act.h - the activations an op can apply to its own output in the same
 * pass (batch_norm, add, and in inference conv2d and conv2d_chain): relu and
 * relu6, and their backward from the output y (y > 0; 0 < y < 6), as the
 * relu and relu6 ops' own backward.
 *
 * An activation here is also the op of the same name: in inference the
 * fusion rule conv2d_post (ops/conv_fuse.c) folds such a node into the
 * conv2d before it when the op has no attributes (one with parameters, such
 * as leaky_relu's alpha, would need the rule to check them and the post step
 * to take them). hard_swish is forward-only here: conv2d and conv2d_chain
 * apply it (ACT_POST_CHOICES) with the very operations of its op's forward,
 * so the fused step gives the unfused op's values bit for bit; batch_norm's
 * and add's own activations stay relu and relu6, the ones act_bwd knows.
 * silu and gelu are not taken: lane by lane expf/erff in the post step cost
 * more instructions than their own pass saved (EfficientNet-B0, callgrind:
 * +3.6%). Adding one: its ACT_ value before ACT_COUNT, its name in
 * act_names and ACT_POST_CHOICES, its formula in act_fwd (as its op's
 * forward) and in vact (ops/conv_ukr.h, the vector post step); act_bwd only
 * if batch_norm or add are to take it as their own attribute. Neither
 * engine/ nor the rule changes.
 */
#ifndef SLIM_OPS_ACT_H
#define SLIM_OPS_ACT_H

#include <stdint.h>
#include <string.h>

enum { ACT_NONE, ACT_RELU, ACT_RELU6, ACT_HARD_SWISH, ACT_COUNT };

static const char *const act_names[ACT_COUNT] = {"none", "relu", "relu6", "hard_swish"};

/* The activation attribute's choices of the ops that apply any of them
 * forward only (conv2d, conv2d_chain). */
#define ACT_POST_CHOICES "none|relu|relu6|hard_swish"

/* The activation named s (an attribute's value or an op's name); ACT_NONE
 * for any other name. */
static inline int act_parse(const char *s)
{
    for (int a = ACT_NONE + 1; a < ACT_COUNT; a++)
        if (!strcmp(s, act_names[a]))
            return a;
    return ACT_NONE;
}

/* relu, relu6 or none: batch_norm's and add's own activations */
static inline float act_relu(int act, float v)
{
    if (act == ACT_NONE)
        return v;
    v = v > 0.0f ? v : 0.0f;
    return act == ACT_RELU6 && v > 6.0f ? 6.0f : v;
}

/* ops/activation.c's hard_swish forward, its fminf(fmaxf(v + 3, 0), 6) as
 * selects: the same value for every v (NaN too), and a loop of them is
 * vectorized */
static inline float act_hard_swish(float v)
{
    float t = v + 3.0f;
    t = t > 0.0f ? t : 0.0f;
    return v * (t < 6.0f ? t : 6.0f) * (1.0f / 6.0f);
}

static inline float act_fwd(int act, float v)
{
    return act == ACT_HARD_SWISH ? act_hard_swish(v) : act_relu(act, v);
}

/* act_fwd over v[0, n): one loop per kind, as a loop over act_fwd with act
 * unknown is not vectorized (its three kinds are too many to if-convert) */
static inline void act_fwd_row(int act, float *restrict v, int64_t n)
{
    if (act == ACT_HARD_SWISH)
        for (int64_t j = 0; j < n; j++)
            v[j] = act_hard_swish(v[j]);
    else if (act != ACT_NONE)
        for (int64_t j = 0; j < n; j++)
            v[j] = act_relu(act, v[j]);
}

/* act_fwd in double, for the reference kernels */
static inline double act_ref(int act, double v)
{
    switch (act) {
    case ACT_RELU: return v > 0 ? v : 0;
    case ACT_RELU6: return v > 6 ? 6 : v > 0 ? v : 0;
    case ACT_HARD_SWISH: return v <= -3 ? 0 : v >= 3 ? v : v * (v + 3) / 6;
    default: return v;
    }
}

/* dy through relu or relu6 (batch_norm's and add's own), given the output y */
static inline float act_bwd(int act, float y, float dy)
{
    if (act == ACT_NONE)
        return dy;
    /* dy or +0 by a bit mask: no branch and no conditional store for the
       vectorizer to give up on */
    uint32_t keep = (uint32_t)((y > 0.0f) & ((act == ACT_RELU) | (y < 6.0f)));
    union {
        float f;
        uint32_t u;
    } v = {.f = dy};
    v.u &= 0u - keep;
    return v.f;
}

#endif /* SLIM_OPS_ACT_H */
