/* engine/plan.c - the memory plan: each arena buffer lives from the first to
 * the last step that touches it (a backward step only through what its
 * kernel reads; inputs, marked outputs, parameter gradients and kept step
 * outputs to the end of the run); an output may take over the buffer of an
 * input its step reads last (set_in_place); then buffers are placed in one
 * arena, largest first, each at the lowest offset free over its lifetime.
 * run allocates nothing. */
#include "engine/compile.h"
#include "core/error.h"
#include "core/gemm.h"

#include <stdlib.h>
#include <string.h>

static void touch(slim_program *p, int buf, int step)
{
    if (buf < 0)
        return;
    slim__buffer *b = &p->bufs[buf];
    if (step < b->first)
        b->first = step;
    if (step > b->last)
        b->last = step;
}

static void touch_block(slim_program *p, int v, int n, int step, uint32_t which)
{
    for (int i = 0; v >= 0 && i < n; i++)
        if (i >= 32 || ((which >> i) & 1u))
            touch(p, p->view_buf[v + i], step);
}

static int by_size_desc(const void *a, const void *b, void *ctx)
{
    const slim__buffer *bufs = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (bufs[x].bytes != bufs[y].bytes)
        return bufs[x].bytes < bufs[y].bytes ? 1 : -1;
    return x - y;
}

static int by_offset(const void *a, const void *b, void *ctx)
{
    const slim__buffer *bufs = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (bufs[x].offset != bufs[y].offset)
        return bufs[x].offset < bufs[y].offset ? -1 : 1;
    return x - y;
}

/* How many of step st's views (inputs, outputs, saved, output gradients,
 * input gradients) are arena buffer buf. */
static int step_views_of(const slim_program *p, const slim__step *st, int buf)
{
    const int first[5] = {st->v_in, st->v_out, st->v_saved, st->v_dout, st->v_din};
    const int count[5] = {st->n_in, st->n_out, st->n_saved, st->n_out, st->n_in};
    int n = 0;
    for (int k = 0; k < 5; k++)
        for (int i = 0; first[k] >= 0 && i < count[k]; i++)
            n += p->view_buf[first[k] + i] == buf;
    return n;
}

/* Buffer bo (written first by step s) becomes buffer bi (read last by step
 * s) when the sizes match and step s has no other view of either. */
static bool merge_in_place(slim_program *p, const slim__step *st, int s, int bi, int bo)
{
    if (bi < 0 || bo < 0 || bi == bo)
        return false;
    slim__buffer *in = &p->bufs[bi], *out = &p->bufs[bo];
    if (in->last != s || out->first != s || in->bytes != out->bytes ||
        step_views_of(p, st, bi) != 1 || step_views_of(p, st, bo) != 1)
        return false;
    for (int v = 0; v < p->n_views; v++)
        if (p->view_buf[v] == bo)
            p->view_buf[v] = bi;
    for (int t = 0; t < p->g->n_tensors; t++) {
        if (p->tbuf[t] == bo)
            p->tbuf[t] = bi;
        if (p->gbuf[t] == bo)
            p->gbuf[t] = bi;
    }
    in->last = out->last;
    out->bytes = 0;
    out->first = 0, out->last = -1;
    return true;
}

/* Outputs written in the memory of an input, and input gradients in that of
 * an output gradient (set_in_place, set_backward_in_place): the first
 * candidate whose buffer the step reads last. A fused convolution that sums
 * a residual then stores into the residual's lines it has just read,
 * instead of fetching each output line first; in training a sum writes over
 * a branch, a normalization's input gradient over its output gradient. */
static void share_in_place(slim_program *p)
{
    for (int s = 0; s < p->n_steps; s++) {
        const slim__step *st = &p->steps[s];
        if (st->node < 0 || (st->kind != SLIM__STEP_FWD && st->kind != SLIM__STEP_BWD))
            continue;
        const slim__infer_result *r = &p->infer[st->node];
        const bool fwd = st->kind == SLIM__STEP_FWD;
        /* forward: output o over input i; backward: input i's gradient over output o's */
        const int v_over = fwd ? st->v_out : st->v_din, v_under = fwd ? st->v_in : st->v_dout;
        const int n_over = fwd ? st->n_out : st->n_in, n_under = fwd ? st->n_in : st->n_out;
        if (v_over < 0 || v_under < 0)
            continue;
        for (int a = 0; a < n_over; a++) {
            const uint32_t cand = fwd ? r->in_place[a] : r->bwd_in_place[a];
            for (int b = 0; b < n_under && b < 32; b++)
                if (((cand >> b) & 1u) &&
                    merge_in_place(p, st, s, p->view_buf[v_under + b], p->view_buf[v_over + a]))
                    break;
        }
    }
}

slim_status slim__plan(slim_program *p, bool allocate, slim_error *err)
{
    slim_graph *g = p->g;
    int last = p->n_steps; /* "after the run": readable by the caller */
    for (int s = 0; s < p->n_steps; s++) {
        const slim__step *st = &p->steps[s];
        /* a backward step shares its forward step's views of the inputs and
           outputs, but keeps alive only those its kernel reads */
        bool bwd = st->kind == SLIM__STEP_BWD;
        touch_block(p, st->v_in, st->n_in, s, bwd ? st->reads_in : ~0u);
        touch_block(p, st->v_out, st->n_out, s, bwd ? st->reads_out : ~0u);
        touch_block(p, st->v_saved, st->n_saved, s, ~0u);
        touch_block(p, st->v_dout, st->n_out, s, ~0u);
        touch_block(p, st->v_din, st->n_in, s, ~0u);
        touch(p, st->ws_buf, s);
        for (int j = 0; j < st->n_out && j < 32; j++) /* readable after the run */
            if ((st->keep_out >> j) & 1u)
                touch(p, p->view_buf[st->v_out + j], last);
    }
    for (int t = 0; t < g->n_tensors; t++) {
        const slim__tinfo *ti = &g->tensors[t];
        /* inputs are written by the caller before the run and stay intact through it,
         * so a program can be run again on the same inputs */
        if (p->tbuf[t] >= 0 && ti->kind == SLIM__T_INPUT)
            touch(p, p->tbuf[t], -1), touch(p, p->tbuf[t], last);
        if (p->tbuf[t] >= 0 && ti->marked)
            touch(p, p->tbuf[t], last);
        if (p->gbuf[t] >= 0 && ti->kind == SLIM__T_PARAM)
            touch(p, p->gbuf[t], last);
    }
    int n = p->n_bufs;
    p->naive_bytes = 0; /* every buffer apart, before any is shared */
    for (int k = 0; k < n; k++)
        p->naive_bytes += p->bufs[k].bytes;
    share_in_place(p);
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    int *placed = malloc((size_t)(n ? n : 1) * sizeof *placed);
    if (!order || !placed) {
        free(order);
        free(placed);
        return slim__oom(err);
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_size_desc, p->bufs);
    int n_placed = 0;
    size_t total = 0;
    int *overl = malloc((size_t)(n ? n : 1) * sizeof *overl);
    if (!overl) {
        free(order);
        free(placed);
        return slim__oom(err);
    }
    for (int k = 0; k < n; k++) {
        slim__buffer *b = &p->bufs[order[k]];
        if (b->last < b->first) { /* never used: give it a lifetime of its own */
            b->first = b->last = -2;
        }
        int m = 0;
        for (int j = 0; j < n_placed; j++) {
            const slim__buffer *o = &p->bufs[placed[j]];
            if (o->first <= b->last && b->first <= o->last)
                overl[m++] = placed[j];
        }
        qsort_r(overl, (size_t)m, sizeof *overl, by_offset, p->bufs);
        size_t off = 0;
        for (int j = 0; j < m; j++) {
            const slim__buffer *o = &p->bufs[overl[j]];
            if (o->offset >= off + b->bytes)
                break;
            if (o->offset + o->bytes > off)
                off = o->offset + o->bytes;
        }
        b->offset = off;
        if (off + b->bytes > total)
            total = off + b->bytes;
        placed[n_placed++] = order[k];
    }
    free(overl);
    free(order);
    free(placed);
    p->arena_bytes = total;
    if (!allocate)
        return SLIM_OK;
    p->arena = aligned_alloc(SLIM__ALIGN, total + SLIM__BLIS_SLACK);
    if (!p->arena)
        return slim__error(err, SLIM_ENOMEM, "cannot allocate the %zu-byte arena", total);
    memset(p->arena, 0, total + SLIM__BLIS_SLACK);
    for (int v = 0; v < p->n_views; v++)
        if (p->view_buf[v] >= 0)
            p->views[v].data = p->arena + p->bufs[p->view_buf[v]].offset;
    for (int s = 0; s < p->n_steps; s++) {
        slim__step *st = &p->steps[s];
        st->in = st->v_in >= 0 ? &p->views[st->v_in] : NULL;
        st->out = st->v_out >= 0 ? &p->views[st->v_out] : NULL;
        st->saved = st->v_saved >= 0 ? &p->views[st->v_saved] : NULL;
        st->dout = st->v_dout >= 0 ? &p->views[st->v_dout] : NULL;
        st->din = st->v_din >= 0 ? &p->views[st->v_din] : NULL;
        st->ws = st->ws_buf >= 0 ? p->arena + p->bufs[st->ws_buf].offset : NULL;
    }
    return SLIM_OK;
}
