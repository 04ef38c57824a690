/* runtime/oprun.c - the single-op runner: one op on caller buffers, its
 * kernels on a thread pool of its own, without a graph (the op harness,
 * conv_bench). */
#include "runtime/oprun.h"
#include "core/error.h"
#include "core/gemm.h"
#include "engine/registry.h"

#include <stdlib.h>
#include <string.h>

/* ---- running a kernel on the pool ----------------------------------------- */

typedef struct kjob {
    slim_kernel_fn fn;
    const slim_kernel_ctx *tpl;
    slim__pool *pool;
} kjob;

static void sync_pool(const slim_kernel_ctx *c)
{
    if (c->nth > 1)
        slim__pool_barrier(((kjob *)c->priv)->pool);
}

static void sync_none(const slim_kernel_ctx *c)
{
    (void)c;
}

static void kjob_fn(void *arg, int ith, int nth)
{
    kjob *j = arg;
    slim_kernel_ctx c = *j->tpl;
    c.ith = ith;
    c.nth = nth;
    c.sync = sync_pool;
    c.priv = j;
    j->fn(&c);
}

/* Run kernel on the pool with ctx as the template (ith/nth/sync filled in). */
static void run_kernel(slim__pool *pool, slim_kernel_fn fn, bool single, const slim_kernel_ctx *tpl)
{
    if (single || !pool || slim__pool_size(pool) == 1) {
        slim_kernel_ctx c = *tpl;
        c.ith = 0;
        c.nth = 1;
        c.sync = sync_none;
        fn(&c);
        return;
    }
    kjob j = {.fn = fn, .tpl = tpl, .pool = pool};
    slim__pool_run(pool, kjob_fn, &j);
}

/* ---- the single-op runner -------------------------------------------------- */

struct slim__oprun {
    const slim_op_desc *d;
    slim__attr_set attrs;
    slim__infer_result inf;
    int n_in;
    slim_tensor_desc in[SLIM_MAX_INPUTS];
    bool training;
    slim__pool *pool;
    void *out[SLIM__MAX_OUTPUTS];
    void *saved[SLIM__MAX_SAVED];
    void *ws;
    /* NaN stand-ins for what backward does not read, made once and kept (a
     * buffer per call would time page faults in the benchmarks) */
    void *poison[SLIM_MAX_INPUTS + SLIM__MAX_OUTPUTS];
    int replica, replicas;
    void (*allreduce)(const slim_kernel_ctx *c, double *data, int64_t n);
};

void slim__oprun_set_replica(slim__oprun *r, int replica, int replicas,
                             void (*allreduce)(const slim_kernel_ctx *c, double *data, int64_t n))
{
    r->replica = replica;
    r->replicas = replicas;
    r->allreduce = allreduce;
}

static size_t desc_bytes(const slim_tensor_desc *t)
{
    return (size_t)slim_shape_numel(&t->shape) * slim_dtype_size(t->dtype);
}

/* Zeroed memory at a cache line's start, as the program's arena places every
 * buffer: a runner's outputs and workspace land where a compiled program's
 * would (calloc's 16-byte alignment split a row of stores across two lines
 * and made conv_bench's products slower than the same kernels in a model). */
static void *zalloc_line(size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p)
        memset(p, 0, bytes);
    return p;
}

slim_status slim__oprun_new(const slim_registry *reg, const char *op, const slim_attrs *attrs,
                            const slim_tensor_desc *in, int n_in, bool training, int nth,
                            slim__oprun **out, slim_error *err)
{
    *out = NULL;
    const slim_op_desc *d = slim_registry_find(reg, op);
    if (!d)
        return slim__error(err, SLIM_ENOTFOUND, "unknown op '%s'", op ? op : "(none)");
    if (n_in > SLIM_MAX_INPUTS)
        return slim__error(err, SLIM_EINVAL, "too many inputs");
    slim__oprun *r = calloc(1, sizeof *r);
    if (!r)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    r->d = d;
    r->n_in = n_in;
    r->training = training;
    memcpy(r->in, in, (size_t)n_in * sizeof *in);
    slim_status st = slim__attrs_resolve(d, attrs, &r->attrs, err);
    if (st == SLIM_OK)
        st = slim__node_infer(d, &r->attrs, in, n_in, training, nth, op, &r->inf, err);
    if (st == SLIM_OK && slim__pool_new(nth, &r->pool) != SLIM_OK)
        st = slim__error(err, SLIM_ENOMEM, "cannot start threads");
    for (int i = 0; st == SLIM_OK && i < r->inf.n_out; i++)
        if (!(r->out[i] = zalloc_line(desc_bytes(&r->inf.out[i]) + SLIM__BLIS_SLACK)))
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
    for (int i = 0; st == SLIM_OK && i < r->inf.n_saved; i++)
        if (!(r->saved[i] = zalloc_line(desc_bytes(&r->inf.saved[i]) + SLIM__BLIS_SLACK)))
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
    if (st == SLIM_OK && !(r->ws = zalloc_line(r->inf.ws_bytes + SLIM__BLIS_SLACK)))
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
    if (st != SLIM_OK) {
        slim__oprun_free(r);
        return st;
    }
    *out = r;
    return SLIM_OK;
}

void slim__oprun_free(slim__oprun *r)
{
    if (!r)
        return;
    for (int i = 0; i < SLIM__MAX_OUTPUTS; i++)
        free(r->out[i]);
    for (int i = 0; i < SLIM__MAX_SAVED; i++)
        free(r->saved[i]);
    for (int i = 0; i < SLIM_MAX_INPUTS + SLIM__MAX_OUTPUTS; i++)
        free(r->poison[i]);
    free(r->ws);
    slim__pool_free(r->pool);
    slim__infer_result_fini(&r->inf);
    slim__attrs_fini(&r->attrs);
    free(r);
}

const slim__infer_result *slim__oprun_infer(const slim__oprun *r)
{
    return &r->inf;
}

const slim_op_desc *slim__oprun_desc(const slim__oprun *r)
{
    return r->d;
}

slim_tensor slim__oprun_output(const slim__oprun *r, int i)
{
    slim_tensor t = {r->inf.out[i].dtype, r->inf.out[i].shape, r->out[i]};
    return t;
}

static void fill_ctx(slim__oprun *r, slim_kernel_ctx *c, slim_tensor *in, slim_tensor *out,
                     slim_tensor *saved, void *const *in_data, uint64_t seed, int64_t step)
{
    for (int i = 0; i < r->n_in; i++)
        in[i] = (slim_tensor){r->in[i].dtype, r->in[i].shape, in_data[i]};
    for (int i = 0; i < r->inf.n_out; i++)
        out[i] = slim__oprun_output(r, i);
    for (int i = 0; i < r->inf.n_saved; i++)
        saved[i] = (slim_tensor){r->inf.saved[i].dtype, r->inf.saved[i].shape, r->saved[i]};
    memset(c, 0, sizeof *c);
    c->params = r->inf.params;
    c->n_inputs = r->n_in;
    c->n_outputs = r->inf.n_out;
    c->n_saved = r->inf.n_saved;
    c->in = in;
    c->out = out;
    c->saved = saved;
    c->ws = r->ws;
    c->ws_size = r->inf.ws_bytes;
    c->training = r->training;
    c->replica = r->replica;
    c->replicas = r->replicas;
    c->allreduce = r->allreduce;
    c->seed = seed;
    c->step = step;
    c->node_id = 7;
    c->host = slim_host_table();
}

void slim__oprun_forward(slim__oprun *r, void *const *in_data, bool ref, uint64_t seed,
                         int64_t step, float lr)
{
    slim_tensor in[SLIM_MAX_INPUTS], out[SLIM__MAX_OUTPUTS], saved[SLIM__MAX_SAVED];
    slim_kernel_ctx c;
    fill_ctx(r, &c, in, out, saved, in_data, seed, step);
    c.lr = lr;
    bool is_ref;
    slim_kernel_fn fn = slim__pick_kernel(r->d, false, ref, &is_ref);
    run_kernel(r->pool, fn, is_ref, &c);
}

void slim__oprun_backward(slim__oprun *r, void *const *in_data, const float *const *dout,
                          float *const *din, bool ref, uint64_t seed, int64_t step)
{
    if (!r->d->backward)
        return;
    slim_tensor in[SLIM_MAX_INPUTS], out[SLIM__MAX_OUTPUTS], saved[SLIM__MAX_SAVED];
    slim_tensor dt_out[SLIM__MAX_OUTPUTS], dt_in[SLIM_MAX_INPUTS];
    slim_kernel_ctx c;
    fill_ctx(r, &c, in, out, saved, in_data, seed, step);
    for (int i = 0; i < r->inf.n_out; i++)
        dt_out[i] = (slim_tensor){SLIM_F32, r->inf.out[i].shape, (void *)dout[i]};
    for (int i = 0; i < r->n_in; i++)
        dt_in[i] = (slim_tensor){SLIM_F32, r->in[i].shape, din[i]};
    c.dout = dt_out;
    c.din = dt_in;
    /* What the op says its backward does not read (set_backward_reads) is
     * swapped for NaN, as the memory planner would have handed that memory
     * to another tensor: a kernel that reads it anyway shows in the results. */
    void **poison = r->poison; /* kernels only read them: poisoned once */
    for (int i = 0; i < r->n_in + r->inf.n_out; i++) {
        bool is_in = i < r->n_in;
        slim_tensor *t = is_in ? &in[i] : &out[i - r->n_in];
        uint32_t reads = is_in ? r->inf.bwd_in : r->inf.bwd_out;
        int k = is_in ? i : i - r->n_in;
        if (k < 32 && ((reads >> k) & 1u))
            continue;
        if (!t->data || (is_in && ((r->d->mutates_inputs >> k) & 1u)))
            continue;
        size_t bytes = (size_t)slim_shape_numel(&t->shape) * slim_dtype_size(t->dtype);
        if (!poison[i]) {
            poison[i] = malloc(bytes + 64);
            if (!poison[i])
                continue;
            memset(poison[i], 0xff, bytes + 64); /* f32: NaN; integers: -1 */
        }
        t->data = poison[i];
    }
    /* The workspace is scratch: a compiled program gives backward its own
     * buffer, so what forward left there is gone; NaN shows a kernel that
     * reads it before writing. */
    if (r->ws)
        memset(r->ws, 0xff, r->inf.ws_bytes);
    bool is_ref;
    slim_kernel_fn fn = slim__pick_kernel(r->d, true, ref, &is_ref);
    if (fn)
        run_kernel(r->pool, fn, is_ref, &c);
}
