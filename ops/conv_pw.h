/*
 * ops/conv_pw.h - the pointwise filter gradient from packed panels
 * (ops/conv_pw.c); its tuning constants.
 */
#ifndef SLIM_OPS_CONV_PW_H
#define SLIM_OPS_CONV_PW_H

#include "ops/conv.h"

/* The pointwise filter gradient from packed panels (ops/conv_pw.c), for
 * dW of at least PW_MIN_CO floats: blocks of PW_KC rows of x and dY, PW_MC
 * channels of x (a multiple of MR) and PW_NC columns of dY. */
#define PW_MIN_CO 32768
#define PW_KC 256
#define PW_MC 96
#define PW_NC 512

/* Whether q's filter gradient goes through slim__pw_dw (pointwise, no groups,
 * dW of at least PW_MIN_CO floats). */
bool slim__pw_dw_packed(const conv_geom *f);
/* Floats of one of nth workers' packed panels. */
size_t slim__pw_dw_ws_floats(const conv_geom *f, int nth);
/* Worker ith of nw: its part of dw (C, O) = x^T dy (written, not added), ws:
 * slim__pw_dw_ws_floats(f, nw) floats of its own. */
void slim__pw_dw(const conv_geom *f, const float *x, const float *dy, float *dw, float *ws, int ith,
                 int nw);

#endif /* SLIM_OPS_CONV_PW_H */
