/*
 * ops/act.h - the activations an op can apply to its own output in the same
 * pass (batch_norm, add): relu and relu6, and their backward from the
 * output y (y > 0; 0 < y < 6), as the relu and relu6 ops' own backward.
 */
#ifndef SLIM_OPS_ACT_H
#define SLIM_OPS_ACT_H

#include <stdint.h>
#include <string.h>

enum { ACT_NONE, ACT_RELU, ACT_RELU6 };

/* The "activation" attribute's value (none | relu | relu6). */
static inline int act_parse(const char *s)
{
    return !strcmp(s, "relu") ? ACT_RELU : !strcmp(s, "relu6") ? ACT_RELU6 : ACT_NONE;
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
