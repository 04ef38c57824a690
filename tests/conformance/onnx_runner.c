/*
 * tests/conformance/onnx_runner.c - ONNX operator conformance for slim.
 *
 * Runs the operator test cases ONNX ships (Debian's libonnx-testdata:
 * <data>/{node,pytorch-converted,pytorch-operator}/<case>/model.onnx with
 * test_data_set_0/{input,output}_N.pb) through the library's ONNX importer
 * (interop/onnx.h, the one `slimrun import` uses), and compares with ONNX's
 * expected outputs at ONNX's backend-test tolerance
 * |got - expected| <= atol + rtol * |expected|, rtol 1e-3, atol 1e-7.
 * Graph outputs come back in ONNX's order through slim's own transposes, so
 * the layouts the importer chose are checked too. A case the importer
 * refuses as unsupported (SLIM_EUNSUPPORTED) is "not applicable".
 *
 * Cases are grouped by the ONNX op they test: the model's only op, or for a
 * function-expanded case (_expanded) the op of the case it expands, or else
 * its first op in `priority`. Cases of ops slim does not implement are out of
 * scope and only counted. Every in-scope case is a TAP test: passed, failed,
 * or skipped as not applicable with the reason.
 *
 * usage: onnx_runner [substring...]   (only cases whose name contains one)
 * env:   SLIM_ONNX_DATA (default /usr/share/libonnx-testdata/data),
 *        SLIM_ONNX_THREADS (default 1), SLIM_ONNX_ATOL, SLIM_ONNX_RTOL.
 * Exit:  0 all passed, 1 a failure, 0 with a "1..0 # SKIP" plan when the data directory is absent.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "interop/onnx_build.h"

#define DEFAULT_DATA "/usr/share/libonnx-testdata/data"
#define MAX_TENSORS 16

/* The ops under test, in the order of the summary. */
static const char *const covered[] = {
    "Conv",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "Gemm",
    "MatMul",
    "Relu",
    "LeakyRelu",
    "Elu",
    "Sigmoid",
    "Tanh",
    "HardSigmoid",
    "HardSwish",
    "Clip",
    "Softmax",
    "LogSoftmax",
    "BatchNormalization",
    "LayerNormalization",
    "LRN",
    "Concat",
    "Add",
    "Mul",
    "Sub",
    "Div",
    "Pad",
    "Flatten",
    "Reshape",
    "Transpose",
    "Slice",
    "ReduceMean",
    "Dropout",
    "SoftmaxCrossEntropyLoss",
    "NegativeLogLikelihoodLoss",
};
#define N_COVERED ((int)(sizeof(covered) / sizeof(covered[0])))

/* Which op a multi-node case is filed under: the most specific first. */
static const char *const priority[] = {
    "SoftmaxCrossEntropyLoss",
    "NegativeLogLikelihoodLoss",
    "Conv",
    "BatchNormalization",
    "LayerNormalization",
    "LRN",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "Gemm",
    "MatMul",
    "Softmax",
    "LogSoftmax",
    "Concat",
    "Pad",
    "Flatten",
    "Reshape",
    "Transpose",
    "Slice",
    "ReduceMean",
    "Dropout",
    "HardSwish",
    "HardSigmoid",
    "Clip",
    "Add",
    "Mul",
    "Sub",
    "Div",
    "Elu",
    "LeakyRelu",
    "Relu",
    "Sigmoid",
    "Tanh",
};

static const char *const subdirs[] = {"node", "pytorch-converted", "pytorch-operator"};

typedef struct tally {
    int pass, fail, na;
} tally;

typedef struct options {
    double atol, rtol;
    int threads;
    int n_filters;
    char **filters;
} options;

static int tap_n;

static int covered_index(const char *op)
{
    for (int i = 0; i < N_COVERED; i++)
        if (strcmp(covered[i], op) == 0)
            return i;
    return -1;
}

/* The covered op a model tests, or -1. */
static int attribute_model(const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *g = m->graph;
    if (g->n_node == 1)
        return covered_index(g->node[0]->op_type);
    for (size_t p = 0; p < sizeof(priority) / sizeof(priority[0]); p++)
        for (size_t k = 0; k < g->n_node; k++)
            if (strcmp(g->node[k]->op_type, priority[p]) == 0)
                return covered_index(priority[p]);
    return -1;
}

static int attribute(const char *sub_path, const char *name, const Onnx__ModelProto *m)
{
    const char *suffix = "_expanded";
    size_t len = strlen(name), sl = strlen(suffix);
    if (len > sl && strcmp(name + len - sl, suffix) == 0) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%.*s/model.onnx", sub_path, (int)(len - sl), name);
        Onnx__ModelProto *base;
        if (slim__ox_model_load(path, &base, NULL) == SLIM_OK) {
            int op = attribute_model(base);
            slim__ox_model_free(base);
            return op;
        }
    }
    return attribute_model(m);
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* What running a case came to. */
typedef enum ob_result { OB_OK = 0, OB_NA, OB_FAIL } ob_result;

/* input_0.pb, input_1.pb, ... until one is missing. */
static int load_tensors(const char *case_dir, const char *kind, slim__ox_tensor *t, char *msg,
                        size_t msg_size)
{
    int n = 0;
    for (; n < MAX_TENSORS; n++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/test_data_set_0/%s_%d.pb", case_dir, kind, n);
        if (!file_exists(path))
            break;
        slim_error err = {0};
        if (slim__ox_tensor_load(path, &t[n], &err) != SLIM_OK) {
            snprintf(msg, msg_size, "%s", err.msg);
            for (int i = 0; i < n; i++)
                slim__ox_tensor_fini(&t[i]);
            return -1;
        }
    }
    return n;
}

static ob_result run_fail(char *msg, size_t msg_size, const char *fmt, ...) SLIM_PRINTF(3, 4);
static ob_result run_fail(char *msg, size_t msg_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_size, fmt, ap);
    va_end(ap);
    return OB_FAIL;
}

/* Copy the host feeds into the program's inputs and the graph's parameters. */
static ob_result write_feeds(ox_builder *b, slim_program *p, char *msg, size_t msg_size)
{
    for (int i = 0; i < b->n_feeds; i++) {
        const ox_feed *f = &b->feeds[i];
        slim_tensor view;
        slim_error err = {0};
        slim_status st = f->is_param ? slim_graph_param_get(b->g, f->name, &view, &err)
                                     : slim_program_input(p, f->name, &view, &err);
        if (st != SLIM_OK)
            return run_fail(msg, msg_size, "%s('%s'): %s",
                            f->is_param ? "slim_graph_param_get" : "slim_program_input", f->name,
                            err.msg);
        int64_t n = slim_shape_numel(&f->shape);
        if (slim_shape_numel(&view.shape) != n || !view.data)
            return run_fail(msg, msg_size, "'%s': view of %lld elements, expected %lld", f->name,
                            (long long)slim_shape_numel(&view.shape), (long long)n);
        if (view.dtype == f->dtype) {
            memcpy(view.data, f->data, (size_t)n * slim_dtype_size(f->dtype));
        } else if (view.dtype == SLIM_I32 && f->dtype == SLIM_I64) {
            for (int64_t k = 0; k < n; k++)
                ((int32_t *)view.data)[k] = (int32_t)((const int64_t *)f->data)[k];
        } else {
            return run_fail(msg, msg_size, "'%s': view dtype %d, fed %d", f->name, view.dtype,
                            f->dtype);
        }
    }
    return OB_OK;
}

static bool close_enough(float got, float want, const options *o)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs((double)got - (double)want) <= o->atol + o->rtol * fabs((double)want);
}

/* Compare graph output k with its expected tensor (ONNX order). */
static ob_result compare(ox_builder *b, slim_program *p, size_t k, const slim__ox_tensor *e,
                         const options *o, char *msg, size_t msg_size)
{
    const char *name = b->model->graph->output[k]->name;
    ox_value *v = ox_find(b, name);
    slim_tensor view;
    slim_error err = {0};
    slim_status st;
    if (v->kind == OX_STATE)
        st = slim_graph_param_get(b->g, v->param, &view, &err);
    else
        st = slim_program_output(p, slim_graph_tensor_name(b->g, b->out_tids[k]), &view, &err);
    if (st != SLIM_OK)
        return run_fail(msg, msg_size, "output '%s': %s", name, err.msg);
    if (!e->f)
        return run_fail(msg, msg_size, "output '%s': expected %s data", name,
                        slim__ox_elem_name(e->elem));
    if (view.dtype != SLIM_F32)
        return run_fail(msg, msg_size, "output '%s': slim gave dtype %d", name, view.dtype);
    int64_t n = slim_shape_numel(&view.shape);
    bool shape_ok = n == e->numel;
    if (shape_ok && e->numel != 1) {
        shape_ok = view.shape.rank == e->rank;
        for (int i = 0; shape_ok && i < e->rank; i++)
            shape_ok = view.shape.dim[i] == e->dim[i];
    }
    if (!shape_ok) {
        char got[128], want[128];
        return run_fail(msg, msg_size, "output '%s': slim shape %s, expected ONNX %s", name,
                        slim_shape_str(&view.shape, got, sizeof got),
                        slim__ox_dims_str(e->rank, e->dim, want, sizeof want));
    }
    const float *got = view.data;
    int64_t bad = 0, first = -1, worst = 0;
    double max_diff = 0;
    for (int64_t i = 0; i < n; i++) {
        if (close_enough(got[i], e->f[i], o))
            continue;
        double diff = fabs((double)got[i] - (double)e->f[i]);
        if (first < 0)
            first = i;
        if (!(diff <= max_diff)) {
            max_diff = diff;
            worst = i;
        }
        bad++;
    }
    if (bad)
        return run_fail(msg, msg_size,
                        "output '%s': %lld of %lld elements off; first [%lld] got %.9g expected "
                        "%.9g; worst [%lld] got %.9g expected %.9g",
                        name, (long long)bad, (long long)n, (long long)first, (double)got[first],
                        (double)e->f[first], (long long)worst, (double)got[worst],
                        (double)e->f[worst]);
    return OB_OK;
}

/* Build, compile, run and compare one variant of a case (layouts: plain
 * first, then channels-last when some op could take host inputs either way). */
static ob_result run_variant(slim_registry *reg, const Onnx__ModelProto *m, const char *file,
                             const slim__ox_tensor *in, int n_in, const slim__ox_tensor *out,
                             int n_out, bool prefer_cl, const options *o, bool *could_cl, char *msg,
                             size_t msg_size, char *note, size_t note_size)
{
    slim__onnx_opts io = {.reg = reg, .inputs = in, .n_inputs = n_in, .prefer_cl = prefer_cl};
    ox_builder *b = NULL;
    slim_program *p = NULL;
    slim_error err = {0};
    ob_result r = OB_OK;
    slim_status st = slim__onnx_import(&io, m, file, &b, &err);
    if (st == SLIM_OK && b->training) {
        /* again, now knowing that the graph compiles for training */
        slim__onnx_import_free(b);
        io.trainable_inputs = true;
        st = slim__onnx_import(&io, m, file, &b, &err);
    }
    *could_cl = st == SLIM_OK && b->could_cl;
    note[0] = '\0';
    if (st != SLIM_OK) {
        snprintf(msg, msg_size, "%s", err.msg);
        return st == SLIM_EUNSUPPORTED ? OB_NA : OB_FAIL;
    }
    snprintf(note, note_size, "%s", b->note);
    if ((size_t)n_out != m->graph->n_output) {
        r = run_fail(msg, msg_size, "%d output_N.pb for %zu graph outputs", n_out,
                     m->graph->n_output);
        goto done;
    }
    slim_compile_opts co = {.training = b->training, .num_threads = o->threads};
    if (slim_graph_compile(b->g, &co, &p, &err) != SLIM_OK) {
        r = run_fail(msg, msg_size, "slim_graph_compile: %s", err.msg);
        goto done;
    }
    if (slim_graph_init_params(b->g, 0, &err) != SLIM_OK) {
        r = run_fail(msg, msg_size, "slim_graph_init_params: %s", err.msg);
        goto done;
    }
    if ((r = write_feeds(b, p, msg, msg_size)) != OB_OK)
        goto done;
    slim_run_opts ro = {.learning_rate = 0, .step = 0, .seed = 0};
    if (slim_program_run(p, &ro, &err) != SLIM_OK) {
        r = run_fail(msg, msg_size, "slim_program_run: %s", err.msg);
        goto done;
    }
    for (int k = 0; k < n_out && r == OB_OK; k++)
        r = compare(b, p, (size_t)k, &out[k], o, msg, msg_size);
done:
    slim_program_free(p);
    slim__onnx_import_free(b);
    return r;
}

static ob_result run_case(slim_registry *reg, const char *case_dir, const Onnx__ModelProto *m,
                          const char *file, const options *o, char *msg, size_t msg_size,
                          char *note, size_t note_size)
{
    slim__ox_tensor in[MAX_TENSORS], out[MAX_TENSORS];
    int n_in = load_tensors(case_dir, "input", in, msg, msg_size);
    if (n_in < 0)
        return OB_NA;
    int n_out = load_tensors(case_dir, "output", out, msg, msg_size);
    if (n_out < 0) {
        for (int i = 0; i < n_in; i++)
            slim__ox_tensor_fini(&in[i]);
        return OB_NA;
    }
    bool could_cl = false, unused;
    ob_result r = run_variant(reg, m, file, in, n_in, out, n_out, false, o, &could_cl, msg,
                              msg_size, note, note_size);
    if (r == OB_OK && could_cl) {
        /* The same case with host inputs fed channels-last. Not applicable
         * there (a later op needs ONNX order) is no failure. */
        char msg2[896], note2[96];
        ob_result r2 = run_variant(reg, m, file, in, n_in, out, n_out, true, o, &unused, msg2,
                                   sizeof(msg2), note2, sizeof(note2));
        if (r2 == OB_FAIL) {
            r = OB_FAIL;
            snprintf(msg, msg_size, "channels-last variant: %s", msg2);
        } else if (r2 == OB_OK) {
            snprintf(note, note_size, "%s%salso channels-last", note2, note2[0] ? "; " : "");
        }
    }
    for (int i = 0; i < n_in; i++)
        slim__ox_tensor_fini(&in[i]);
    for (int i = 0; i < n_out; i++)
        slim__ox_tensor_fini(&out[i]);
    return r;
}

static bool selected(const options *o, const char *name)
{
    if (o->n_filters == 0)
        return true;
    for (int i = 0; i < o->n_filters; i++)
        if (strstr(name, o->filters[i]))
            return true;
    return false;
}

/* Print a message as TAP diagnostics (one "# " line per line). */
static void diag(const char *msg)
{
    const char *s = msg;
    while (*s) {
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        printf("#   %.*s\n", len, s);
        s += len + (nl ? 1 : 0);
    }
}

static int one_subdir(slim_registry *reg, const char *data, const char *sub, const options *o,
                      tally *t, int *out_of_scope)
{
    char sub_path[1024];
    snprintf(sub_path, sizeof(sub_path), "%s/%s", data, sub);
    struct dirent **ents;
    int n = scandir(sub_path, &ents, NULL, alphasort);
    if (n < 0)
        return 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char case_dir[1536], path[2048], msg[1024] = "", note[128] = "";
        snprintf(case_dir, sizeof(case_dir), "%s/%s", sub_path, name);
        snprintf(path, sizeof(path), "%s/model.onnx", case_dir);
        if (name[0] == '.' || !selected(o, name) || !file_exists(path))
            continue;
        Onnx__ModelProto *m = NULL;
        int op = slim__ox_model_load(path, &m, NULL) == SLIM_OK ? attribute(sub_path, name, m) : -1;
        if (op < 0) {
            (*out_of_scope)++;
            slim__ox_model_free(m);
            continue;
        }
        ob_result r = run_case(reg, case_dir, m, name, o, msg, sizeof(msg), note, sizeof(note));
        slim__ox_model_free(m);
        tap_n++;
        if (r == OB_OK) {
            t[op].pass++;
            printf("ok %d - %s/%s%s%s%s\n", tap_n, covered[op], name, note[0] ? " (" : "", note,
                   note[0] ? ")" : "");
        } else if (r == OB_NA) {
            t[op].na++;
            printf("ok %d - %s/%s # SKIP not applicable: %s\n", tap_n, covered[op], name, msg);
        } else {
            t[op].fail++;
            printf("not ok %d - %s/%s%s%s%s\n", tap_n, covered[op], name, note[0] ? " (" : "", note,
                   note[0] ? ")" : "");
            diag(msg);
        }
        fflush(stdout);
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    return 0;
}

static double env_double(const char *name, double def)
{
    const char *s = getenv(name);
    return s && *s ? strtod(s, NULL) : def;
}

int main(int argc, char **argv)
{
    const char *data = getenv("SLIM_ONNX_DATA");
    if (!data || !*data)
        data = DEFAULT_DATA;
    struct stat st;
    if (stat(data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("1..0 # SKIP ONNX test data not found at %s (apt-get install libonnx-testdata, "
               "or set SLIM_ONNX_DATA)\n",
               data);
        return 0; /* TAP: a plan of 0 with SKIP is a skipped test; exit 77 would be an error */
    }
    options o = {
        .atol = env_double("SLIM_ONNX_ATOL", 1e-7),
        .rtol = env_double("SLIM_ONNX_RTOL", 1e-3),
        .threads = (int)env_double("SLIM_ONNX_THREADS", 1),
        .n_filters = argc - 1,
        .filters = argv + 1,
    };
    slim_registry *reg;
    slim_error err = {0};
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        printf("Bail out! slim_registry_new: %s\n", err.msg);
        return 1;
    }
    printf("# ONNX conformance: %s, rtol %g, atol %g, %d thread(s)\n", data, o.rtol, o.atol,
           o.threads);
    tally t[N_COVERED] = {{0}};
    int out_of_scope = 0;
    for (size_t s = 0; s < sizeof(subdirs) / sizeof(subdirs[0]); s++)
        one_subdir(reg, data, subdirs[s], &o, t, &out_of_scope);
    printf("1..%d\n", tap_n);
    tally all = {0};
    printf("# per ONNX op:\n");
    for (int i = 0; i < N_COVERED; i++) {
        printf("# %s: %d passed, %d failed, %d not applicable\n", covered[i], t[i].pass, t[i].fail,
               t[i].na);
        all.pass += t[i].pass;
        all.fail += t[i].fail;
        all.na += t[i].na;
    }
    printf("# total: %d passed, %d failed, %d not applicable; %d cases of other ops not run\n",
           all.pass, all.fail, all.na, out_of_scope);
    slim_registry_free(reg);
    return all.fail ? 1 : 0;
}
