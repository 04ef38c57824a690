/* engine/exec.c - running a program: every pool thread walks the same flat
 * schedule; each kernel splits its own work by ith/nth, and the threads meet
 * at a barrier between steps. Reference kernels run on thread 0 alone.
 * A run allocates nothing. Inputs can be bound to caller memory: their
 * kernel views then point there (zero-copy feeding). */
#include "core/error.h"
#include "core/gemm.h"
#include "engine/program.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct run_job {
    slim_program *p;
} run_job;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sync_pool(const slim_kernel_ctx *c)
{
    if (c->nth > 1)
        slim__pool_barrier(((slim_program *)c->priv)->pool);
}

static void sync_none(const slim_kernel_ctx *c)
{
    (void)c;
}

/* Synchronized batch statistics across processes (slim_collective). */
static void coll_allreduce(const slim_kernel_ctx *c, double *data, int64_t n)
{
    const slim_program *p = c->priv;
    p->coll.allreduce(p->coll.user, data, n);
}

static void run_steps(void *arg, int ith, int nth)
{
    slim_program *p = ((run_job *)arg)->p;
    const slim_host *host = slim_host_table();
    double t0 = p->profiling && ith == 0 ? now() : 0;
    for (int s = 0; s < p->n_steps; s++) {
        const slim__step *st = &p->steps[s];
        slim_kernel_ctx c = {
            .ith = ith,
            .nth = nth,
            .params = st->params,
            .n_inputs = st->n_in,
            .n_outputs = st->n_out,
            .n_saved = st->n_saved,
            .in = st->in,
            .out = st->out,
            .saved = st->saved,
            .dout = st->dout,
            .din = st->din,
            .ws = st->ws,
            .ws_size = st->ws_size,
            .training = st->training,
            .seed = p->run.seed,
            .step = p->run.step,
            .node_id = st->node_id,
            .lr = p->run.learning_rate * st->lr_mult,
            .host = host,
            .sync = sync_pool,
            .priv = p,
            .replica = p->coll.replica,
            .replicas = p->coll.replicas > 1 ? p->coll.replicas : 1,
            .allreduce = p->coll.allreduce && st->training ? coll_allreduce : NULL,
        };
        if (st->single) {
            if (ith == 0) {
                c.nth = 1;
                c.sync = sync_none;
                st->fn(&c);
            }
        } else {
            st->fn(&c);
        }
        slim__pool_barrier(p->pool);
        if (p->profiling && ith == 0) {
            double t1 = now();
            p->times[s].seconds = t1 - t0;
            t0 = t1;
        }
    }
}

slim_status slim_program_run(slim_program *p, const slim_run_opts *opts, slim_error *err)
{
    if (!p)
        return slim__error(err, SLIM_EINVAL, "no program");
    p->run = opts ? *opts : (slim_run_opts){0};
    run_job j = {p};
    slim__pool_run(p->pool, run_steps, &j);
    return SLIM_OK;
}

/* The caller memory bound to input t, or NULL. */
static const void *bound_data(const slim_program *p, slim_tid t)
{
    for (int i = 0; i < p->n_bound; i++)
        if (p->bound[i].t == t)
            return p->bound[i].data;
    return NULL;
}

static slim_status view_of(slim_program *p, int buf, slim_tid t, slim_tensor *view)
{
    const slim__tinfo *ti = &p->g->tensors[t];
    const void *b = bound_data(p, t);
    view->dtype = ti->d.dtype;
    view->shape = ti->d.shape;
    /* bound memory is the caller's: the program only reads it */
    view->data = b ? (void *)(uintptr_t)b : p->arena + p->bufs[buf].offset;
    return SLIM_OK;
}

slim_status slim_program_input(slim_program *p, const char *name, slim_tensor *view,
                               slim_error *err)
{
    slim_tid t;
    if (!p || slim_graph_find(p->g, name, &t) != SLIM_OK)
        return slim__error(err, SLIM_ENOTFOUND, "no input named '%s'", name ? name : "(null)");
    if (p->g->tensors[t].kind != SLIM__T_INPUT)
        return slim__error(err, SLIM_EINVAL, "'%s' is not an input of the graph", name);
    return view_of(p, p->tbuf[t], t, view);
}

_Static_assert(SLIM_BIND_SLACK >= SLIM__BLIS_SLACK, "bound inputs may reach BLIS");

/* Every kernel view of arena buffer buf reads data instead. */
static void point_views(slim_program *p, int buf, void *data)
{
    for (int v = 0; v < p->n_views; v++)
        if (p->view_buf[v] == buf)
            p->views[v].data = data;
}

slim_status slim_program_bind_input(slim_program *p, const char *name, const slim_tensor_desc *desc,
                                    const void *data, size_t bytes, slim_error *err)
{
    slim_tid t;
    if (!p || !name || slim_graph_find(p->g, name, &t) != SLIM_OK)
        return slim__error(err, SLIM_ENOTFOUND, "no input named '%s'", name ? name : "(null)");
    const slim__tinfo *ti = &p->g->tensors[t];
    if (ti->kind != SLIM__T_INPUT || p->tbuf[t] < 0)
        return slim__error(err, SLIM_EINVAL, "'%s' is not an input of the graph", name);
    int k = 0;
    while (k < p->n_bound && p->bound[k].t != t)
        k++;
    int buf = p->tbuf[t];
    if (!data) { /* unbind: back to the program's own buffer */
        if (k < p->n_bound) {
            point_views(p, buf, p->arena + p->bufs[buf].offset);
            p->bound[k] = p->bound[--p->n_bound];
        }
        return SLIM_OK;
    }
    char want[96], got[96];
    if (!desc)
        return slim__error(err, SLIM_EINVAL, "binding input '%s': no tensor description", name);
    if (desc->dtype != ti->d.dtype)
        return slim__error(err, SLIM_ETYPE,
                           "binding input '%s': the memory holds %s, the input is %s", name,
                           slim__dtype_str(desc->dtype), slim__dtype_str(ti->d.dtype));
    if (!slim_shape_equal(&desc->shape, &ti->d.shape))
        return slim__error(err, SLIM_ESHAPE,
                           "binding input '%s': the memory holds %s, the input is %s", name,
                           slim_shape_str(&desc->shape, got, sizeof got),
                           slim_shape_str(&ti->d.shape, want, sizeof want));
    if ((uintptr_t)data % SLIM_BIND_ALIGN)
        return slim__error(err, SLIM_EINVAL,
                           "binding input '%s': address %p is not %d-byte aligned "
                           "(SLIM_BIND_ALIGN; aligned_alloc gives such memory)",
                           name, data, SLIM_BIND_ALIGN);
    size_t need = (size_t)slim_shape_numel(&ti->d.shape) * slim_dtype_size(ti->d.dtype);
    if (bytes < need + SLIM_BIND_SLACK)
        return slim__error(err, SLIM_EINVAL,
                           "binding input '%s': %zu bytes given, the tensor needs %zu plus "
                           "SLIM_BIND_SLACK (%d) readable bytes after it (BLIS kernels read "
                           "past the end of their operands)",
                           name, bytes, need, SLIM_BIND_SLACK);
    if (k == p->n_bound) {
        struct slim__binding *nb = realloc(p->bound, (size_t)(p->n_bound + 1) * sizeof *nb);
        if (!nb)
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        p->bound = nb;
        p->n_bound++;
    }
    p->bound[k].t = t;
    p->bound[k].data = data;
    point_views(p, buf, (void *)(uintptr_t)data);
    return SLIM_OK;
}

slim_status slim_program_output(slim_program *p, const char *name, slim_tensor *view,
                                slim_error *err)
{
    slim_tid t;
    if (!p || slim_graph_find(p->g, name, &t) != SLIM_OK)
        return slim__error(err, SLIM_ENOTFOUND, "no tensor named '%s'", name ? name : "(null)");
    const slim__tinfo *ti = &p->g->tensors[t];
    if (ti->kind == SLIM__T_PARAM)
        return slim_graph_param_get(p->g, name, view, err);
    if (!ti->marked || p->tbuf[t] < 0)
        return slim__error(err, SLIM_ESTATE,
                           "'%s' is not kept after the run: mark it with slim_graph_mark_output "
                           "before compiling",
                           name);
    return view_of(p, p->tbuf[t], t, view);
}

slim_status slim_program_grad(slim_program *p, const char *param, slim_tensor *view,
                              slim_error *err)
{
    slim_tid t;
    if (!p || slim_graph_find(p->g, param, &t) != SLIM_OK || p->g->tensors[t].kind != SLIM__T_PARAM)
        return slim__error(err, SLIM_ENOTFOUND, "no parameter named '%s'",
                           param ? param : "(null)");
    if (p->gbuf[t] < 0)
        return slim__error(err, SLIM_ESTATE,
                           "parameter '%s' has no gradient in this program (not trainable, "
                           "outside the trainable scopes, or the loss does not depend on it)",
                           param);
    view_of(p, p->gbuf[t], t, view);
    view->dtype = SLIM_F32;
    return SLIM_OK;
}

slim_status slim_program_slot(slim_program *p, const char *param, int i, slim_tensor *view,
                              slim_error *err)
{
    slim_tid t;
    if (!p || slim_graph_find(p->g, param, &t) != SLIM_OK || p->g->tensors[t].kind != SLIM__T_PARAM)
        return slim__error(err, SLIM_ENOTFOUND, "no parameter named '%s'",
                           param ? param : "(null)");
    int k = p->g->tensors[t].producer;
    if (i < 0 || i >= p->n_slots || !p->slots || !p->slots[k * p->n_slots + i])
        return slim__error(err, SLIM_ENOTFOUND, "parameter '%s' has no optimizer slot %d", param,
                           i);
    view->dtype = SLIM_F32;
    view->shape = p->g->tensors[t].d.shape;
    view->data = p->slots[k * p->n_slots + i];
    return SLIM_OK;
}

slim_status slim_program_global_norm(const slim_program *p, float *norm, slim_error *err)
{
    if (!p || !p->arena || p->norm_step < 0)
        return slim__error(err, SLIM_ENOTFOUND,
                           "the program has no global gradient norm (compiled without "
                           "clip_gradient_norm)");
    *norm = *(const float *)p->steps[p->norm_step].out[1].data;
    return SLIM_OK;
}

void slim_program_get_stats(const slim_program *p, slim_program_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!p)
        return;
    st->arena_bytes = p->arena_bytes;
    st->naive_bytes = p->naive_bytes;
    for (int i = 0; i < p->g->n_params; i++)
        st->param_bytes += (size_t)slim_shape_numel(&p->g->tensors[p->g->params[i].t].d.shape) * 4;
    st->slot_bytes = p->slot_bytes;
    st->n_forward = p->n_fwd;
    st->n_backward = p->n_bwd;
    st->n_update = p->n_upd;
    st->num_threads = p->nth;
}

void slim_program_set_profiling(slim_program *p, bool on)
{
    if (p)
        p->profiling = on;
}

int slim_program_times(const slim_program *p, const slim_node_time **times)
{
    if (!p) {
        *times = NULL;
        return 0;
    }
    *times = p->times;
    return p->n_steps;
}

void slim__program_destroy(slim_program *p)
{
    if (!p)
        return;
    slim__pool_free(p->pool);
    free(p->arena);
    free(p->steps);
    free(p->views);
    free(p->view_buf);
    free(p->bufs);
    free(p->tbuf);
    free(p->gbuf);
    for (int i = 0; p->infer && i < p->n_infer; i++)
        slim__infer_result_fini(&p->infer[i]);
    free(p->infer);
    if (p->slots) {
        for (int i = 0; i < p->g->n_params * p->n_slots; i++)
            free(p->slots[i]);
        free(p->slots);
    }
    free(p->times);
    free(p->bound);
    for (int i = 0; i < p->n_owned; i++)
        free(p->owned[i]);
    free(p->owned);
    free(p);
}

void slim_program_free(slim_program *p)
{
    slim__program_destroy(p);
}
