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
 * to take them). Adding one (say hard_swish): its ACT_ value before
 * ACT_COUNT, its name in act_names and ACT_POST_CHOICES, its formula in
 * act_fwd and in vact (ops/conv_ukr.h, the vector post step); act_bwd only
 * if batch_norm or add are to take it as their own attribute. Neither
 * engine/ nor the rule changes.
 */
#ifndef SLIM_OPS_ACT_H
#define SLIM_OPS_ACT_H

#include <stdint.h>
#include <string.h>

enum { ACT_NONE, ACT_RELU, ACT_RELU6, ACT_COUNT };

static const char *const act_names[ACT_COUNT] = {"none", "relu", "relu6"};

/* The activation attribute's choices of the ops that apply any of them
 * forward only (conv2d, conv2d_chain). */
#define ACT_POST_CHOICES "none|relu|relu6"

/* The activation named s (an attribute's value or an op's name); ACT_NONE
 * for any other name. */
static inline int act_parse(const char *s)
{
    for (int a = ACT_NONE + 1; a < ACT_COUNT; a++)
        if (!strcmp(s, act_names[a]))
            return a;
    return ACT_NONE;
}

static inline float act_fwd(int act, float v)
{
    if (act == ACT_NONE)
        return v;
    v = v > 0.0f ? v : 0.0f;
    return act == ACT_RELU6 && v > 6.0f ? 6.0f : v;
}

/* dy through the activation, given its output y */
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
