/* engine/registry.c - the op registry (ops and fusion rules) and the plugin
 * loader.
 *
 * Built-in ops and plugins enter through the same check (slim_registry_add):
 * descriptor size stamp, name, arity, kernels, attribute schema; fusion
 * rules likewise (slim_registry_add_fusion). A plugin's
 * metadata (ABI major/minor, descriptor and host-table sizes) is checked
 * before its init runs, and every failure has its own message. */
#include "engine/registry.h"
#include "core/attrs.h"
#include "core/error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLIM_OP(name) extern const slim_op_desc slim__op_##name;
#define SLIM_FUSION(name) extern const slim_fusion_desc slim__fusion_##name;
#include "ops/ops.def"
#undef SLIM_OP
#undef SLIM_FUSION

static const slim_op_desc *const builtins[] = {
#define SLIM_OP(name) &slim__op_##name,
#include "ops/ops.def"
#undef SLIM_OP
};

static const slim_fusion_desc *const builtin_rules[] = {
#define SLIM_OP(name)
#define SLIM_FUSION(name) &slim__fusion_##name,
#include "ops/ops.def"
#undef SLIM_OP
#undef SLIM_FUSION
};

static const slim_op_desc *const roles[SLIM__N_ROLES] = {
#define SLIM_OP(name)
#define SLIM_ROLE(role, name) [SLIM__ROLE_##role] = &slim__op_##name,
#include "ops/ops.def"
#undef SLIM_OP
};

const slim_op_desc *slim__role_op(slim__role role)
{
    return roles[role];
}

struct slim_registry {
    int n;
    const slim_op_desc **ops;
    char **origin; /* "built-in" or the plugin path, for duplicate messages */
    int n_rules;
    const slim_fusion_desc **rules; /* fusion rules, in the order they apply */
    char **rule_origin;
    int n_handles, cap_handles;
    void **handles;
    char **handle_paths; /* realpath of each loaded plugin */
    /* ONNX op types plugins implement: onnx_types[i] is op onnx_ops[i] */
    int n_onnx, cap_onnx;
    char **onnx_types, **onnx_ops;
};

bool slim__force_ref(void)
{
    const char *e = getenv("SLIM_KERNELS");
    return e && strcmp(e, "ref") == 0;
}

const slim_op_desc *slim_registry_find(const slim_registry *reg, const char *name)
{
    for (int i = 0; reg && name && i < reg->n; i++)
        if (strcmp(reg->ops[i]->name, name) == 0)
            return reg->ops[i];
    return NULL;
}

int slim_registry_count(const slim_registry *reg)
{
    return reg ? reg->n : 0;
}

const slim_op_desc *slim_registry_at(const slim_registry *reg, int i)
{
    return reg && i >= 0 && i < reg->n ? reg->ops[i] : NULL;
}

/* A name of lower-case letters, digits and '_'; else an error about what. */
static slim_status check_name(const char *what, const char *name, const char *origin,
                              slim_error *err)
{
    if (!name || !name[0])
        return slim__error(err, SLIM_EINVAL, "%s descriptor from %s has no name", what, origin);
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return slim__error(err, SLIM_EINVAL,
                               "%s name '%s' from %s: use lower-case letters, digits and '_'", what,
                               name, origin);
    return SLIM_OK;
}

/* Room for one more origin; false when out of memory. */
static bool grow_origin(char ***origin, int n)
{
    char **o = realloc(*origin, (size_t)(n + 1) * sizeof *o);
    if (o)
        *origin = o;
    return o != NULL;
}

static slim_status add_from(slim_registry *reg, const slim_op_desc *d, const char *origin,
                            slim_error *err)
{
    if (!d || d->struct_size != sizeof(slim_op_desc))
        return slim__error(err, SLIM_EABI,
                           "op descriptor from %s has size %u, this engine expects %zu "
                           "(rebuild it against this slim's <slim/op.h>)",
                           origin, d ? d->struct_size : 0, sizeof(slim_op_desc));
    slim_status st = check_name("op", d->name, origin, err);
    if (st != SLIM_OK)
        return st;
    if (!d->infer || !d->forward)
        return slim__error(err, SLIM_EINVAL, "op %s from %s lacks %s", d->name, origin,
                           !d->infer ? "infer" : "forward");
    if (d->min_inputs < 0 || d->max_inputs < d->min_inputs || d->max_inputs > SLIM_MAX_INPUTS ||
        d->n_outputs < 1 || d->n_outputs > 8)
        return slim__error(err, SLIM_EINVAL,
                           "op %s from %s: inputs must be 0..%d (min <= max), outputs 1..8",
                           d->name, origin, SLIM_MAX_INPUTS);
    const slim_op_desc *old = slim_registry_find(reg, d->name);
    if (old) {
        int i = 0;
        while (reg->ops[i] != old)
            i++;
        return slim__error(err, SLIM_EEXIST, "op '%s' from %s is already registered (from %s)",
                           d->name, origin, reg->origin[i]);
    }
    st = slim__attrs_check_schema(d, err);
    if (st != SLIM_OK) {
        slim__error_prefix(err, "op %s from %s: ", d->name, origin);
        return st;
    }
    const slim_op_desc **ops = realloc(reg->ops, (size_t)(reg->n + 1) * sizeof *ops);
    if (ops)
        reg->ops = ops;
    if (!ops || !grow_origin(&reg->origin, reg->n) || !(reg->origin[reg->n] = strdup(origin)))
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    reg->ops[reg->n++] = d;
    return SLIM_OK;
}

static slim_status add_rule_from(slim_registry *reg, const slim_fusion_desc *f, const char *origin,
                                 slim_error *err)
{
    if (!f || f->struct_size != sizeof(slim_fusion_desc))
        return slim__error(err, SLIM_EABI,
                           "fusion rule from %s has size %u, this engine expects %zu "
                           "(rebuild it against this slim's <slim/op.h>)",
                           origin, f ? f->struct_size : 0, sizeof(slim_fusion_desc));
    slim_status st = check_name("fusion rule", f->name, origin, err);
    if (st != SLIM_OK)
        return st;
    if (!f->anchor || !f->anchor[0] || !f->apply)
        return slim__error(err, SLIM_EINVAL, "fusion rule %s from %s lacks %s", f->name, origin,
                           !f->apply ? "apply" : "an anchor op");
    for (int i = 0; i < reg->n_rules; i++)
        if (strcmp(reg->rules[i]->name, f->name) == 0)
            return slim__error(err, SLIM_EEXIST,
                               "fusion rule '%s' from %s is already registered (from %s)", f->name,
                               origin, reg->rule_origin[i]);
    const slim_fusion_desc **rules =
        realloc(reg->rules, (size_t)(reg->n_rules + 1) * sizeof *rules);
    if (rules)
        reg->rules = rules;
    if (!rules || !grow_origin(&reg->rule_origin, reg->n_rules) ||
        !(reg->rule_origin[reg->n_rules] = strdup(origin)))
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    reg->rules[reg->n_rules++] = f;
    return SLIM_OK;
}

slim_status slim_registry_add_fusion(slim_registry *reg, const slim_fusion_desc *rule,
                                     slim_error *err)
{
    if (!reg)
        return slim__error(err, SLIM_EINVAL, "no registry");
    return add_rule_from(reg, rule, "the caller", err);
}

int slim_registry_fusion_count(const slim_registry *reg)
{
    return reg ? reg->n_rules : 0;
}

const slim_fusion_desc *slim_registry_fusion_at(const slim_registry *reg, int i)
{
    return reg && i >= 0 && i < reg->n_rules ? reg->rules[i] : NULL;
}

slim_status slim_registry_add(slim_registry *reg, const slim_op_desc *desc, slim_error *err)
{
    if (!reg)
        return slim__error(err, SLIM_EINVAL, "no registry");
    return add_from(reg, desc, "the caller", err);
}

/* The origin of ops registered during a plugin's init. */
static _Thread_local const char *loading_origin;

static slim_status host_register(slim_registry *reg, const slim_op_desc *d, slim_error *err)
{
    return add_from(reg, d, loading_origin ? loading_origin : "a plugin", err);
}

const char *slim_registry_onnx_op(const slim_registry *reg, const char *onnx_type)
{
    for (int i = 0; reg && onnx_type && i < reg->n_onnx; i++)
        if (strcmp(reg->onnx_types[i], onnx_type) == 0)
            return reg->onnx_ops[i];
    return NULL;
}

const char *slim__registry_onnx_type(const slim_registry *reg, const char *op)
{
    for (int i = 0; reg && op && i < reg->n_onnx; i++)
        if (strcmp(reg->onnx_ops[i], op) == 0)
            return reg->onnx_types[i];
    return NULL;
}

static slim_status host_declare_onnx(slim_registry *reg, const char *onnx_type, const char *op,
                                     slim_error *err)
{
    const char *origin = loading_origin ? loading_origin : "a plugin";
    if (!reg || !onnx_type || !onnx_type[0] || !op)
        return slim__error(err, SLIM_EINVAL, "%s: declare_onnx_op needs an ONNX op type and an op",
                           origin);
    if (!slim_registry_find(reg, op))
        return slim__error(err, SLIM_ENOTFOUND,
                           "%s declares ONNX op %s for op '%s', which is not registered (register "
                           "the op first)",
                           origin, onnx_type, op);
    const char *old = slim_registry_onnx_op(reg, onnx_type);
    if (old)
        return slim__error(err, SLIM_EEXIST,
                           "%s declares ONNX op %s, already implemented by op '%s'", origin,
                           onnx_type, old);
    if (reg->n_onnx == reg->cap_onnx) {
        int cap = reg->cap_onnx ? 2 * reg->cap_onnx : 8;
        char **t = realloc(reg->onnx_types, (size_t)cap * sizeof *t);
        if (t)
            reg->onnx_types = t;
        char **o = realloc(reg->onnx_ops, (size_t)cap * sizeof *o);
        if (o)
            reg->onnx_ops = o;
        if (!t || !o)
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        reg->cap_onnx = cap;
    }
    char *t = strdup(onnx_type), *o = strdup(op);
    if (!t || !o) {
        free(t);
        free(o);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    reg->onnx_types[reg->n_onnx] = t;
    reg->onnx_ops[reg->n_onnx++] = o;
    return SLIM_OK;
}

static slim_status host_register_fusion(slim_registry *reg, const slim_fusion_desc *f,
                                        slim_error *err)
{
    return add_rule_from(reg, f, loading_origin ? loading_origin : "a plugin", err);
}

slim_status slim_registry_new(slim_registry **out, slim_error *err)
{
    *out = NULL;
    slim_registry *reg = calloc(1, sizeof *reg);
    if (!reg)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++) {
        slim_status st = add_from(reg, builtins[i], "built-in", err);
        if (st != SLIM_OK) {
            slim_registry_free(reg);
            return st;
        }
    }
    for (size_t i = 0; i < sizeof builtin_rules / sizeof *builtin_rules; i++) {
        slim_status st = add_rule_from(reg, builtin_rules[i], "built-in", err);
        if (st != SLIM_OK) {
            slim_registry_free(reg);
            return st;
        }
    }
    *out = reg;
    return SLIM_OK;
}

void slim_registry_free(slim_registry *reg)
{
    if (!reg)
        return;
    for (int i = 0; i < reg->n; i++)
        free(reg->origin[i]);
    free(reg->origin);
    free(reg->ops);
    for (int i = 0; i < reg->n_onnx; i++) {
        free(reg->onnx_types[i]);
        free(reg->onnx_ops[i]);
    }
    free(reg->onnx_types);
    free(reg->onnx_ops);
    for (int i = 0; i < reg->n_rules; i++)
        free(reg->rule_origin[i]);
    free(reg->rule_origin);
    free(reg->rules);
    for (int i = 0; i < reg->n_handles; i++) {
        dlclose(reg->handles[i]);
        free(reg->handle_paths[i]);
    }
    free(reg->handles);
    free(reg->handle_paths);
    free(reg);
}

slim_status slim_registry_load_plugin(slim_registry *reg, const char *path, slim_error *err)
{
    if (!reg || !path)
        return slim__error(err, SLIM_EINVAL, "no registry or plugin path");
    /* the same file again (a model's plugins: list and --plugin both naming it) is a no-op */
    char *canon = realpath(path, NULL);
    for (int i = 0; canon && i < reg->n_handles; i++)
        if (strcmp(reg->handle_paths[i], canon) == 0) {
            free(canon);
            return SLIM_OK;
        }
    free(canon);
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return slim__error(err, SLIM_ENOTFOUND, "cannot load plugin %s: %s", path,
                           why ? why : "unknown dlopen error");
    }
    void *sym_info = dlsym(h, SLIM_PLUGIN_INFO_SYMBOL);
    void *sym_init = dlsym(h, SLIM_PLUGIN_INIT_SYMBOL);
    if (!sym_info || !sym_init) {
        dlclose(h);
        return slim__error(err, SLIM_ENOTFOUND,
                           "plugin %s does not export %s(): it is not a slim plugin "
                           "(define it with SLIM_EXPORT, see the plugin guide)",
                           path, !sym_info ? SLIM_PLUGIN_INFO_SYMBOL : SLIM_PLUGIN_INIT_SYMBOL);
    }
    slim_plugin_info_fn info_fn;
    slim_plugin_init_fn init_fn;
    /* POSIX guarantees object and function pointers convert through dlsym */
    memcpy(&info_fn, &sym_info, sizeof info_fn);
    memcpy(&init_fn, &sym_init, sizeof init_fn);
    const slim_plugin_info *info = info_fn();
    slim_status st = SLIM_OK;
    if (!info)
        st = slim__error(err, SLIM_EABI, "plugin %s: %s() returned NULL", path,
                         SLIM_PLUGIN_INFO_SYMBOL);
    else if (info->abi_major != SLIM_ABI_MAJOR)
        st = slim__error(err, SLIM_EABI,
                         "plugin %s (%s %s) was built for slim ABI %u.%u, this engine has ABI "
                         "%d.%d: rebuild the plugin against this slim",
                         path, info->name ? info->name : "?", info->version ? info->version : "?",
                         info->abi_major, info->abi_minor, SLIM_ABI_MAJOR, SLIM_ABI_MINOR);
    else if (info->abi_minor > SLIM_ABI_MINOR)
        st = slim__error(err, SLIM_EABI,
                         "plugin %s needs slim ABI %u.%u but this engine has only %d.%d: "
                         "upgrade slim",
                         path, info->abi_major, info->abi_minor, SLIM_ABI_MAJOR, SLIM_ABI_MINOR);
    else if (info->op_desc_size != sizeof(slim_op_desc))
        st = slim__error(err, SLIM_EABI,
                         "plugin %s: op descriptor size %u differs from the engine's %zu "
                         "(mismatched headers)",
                         path, info->op_desc_size, sizeof(slim_op_desc));
    else if (info->host_size > sizeof(slim_host))
        st = slim__error(err, SLIM_EABI,
                         "plugin %s expects a host table of %u bytes, this engine offers %zu", path,
                         info->host_size, sizeof(slim_host));
    if (st != SLIM_OK) {
        dlclose(h);
        return st;
    }
    int before = reg->n, before_onnx = reg->n_onnx, rules_before = reg->n_rules;
    loading_origin = path;
    slim_error init_err = {0};
    st = init_fn(reg, slim_host_table(), &init_err);
    loading_origin = NULL;
    if (st != SLIM_OK) {
        /* ops registered before the failure point into the plugin: drop them */
        for (int i = before; i < reg->n; i++)
            free(reg->origin[i]);
        reg->n = before;
        for (int i = before_onnx; i < reg->n_onnx; i++) {
            free(reg->onnx_types[i]);
            free(reg->onnx_ops[i]);
        }
        reg->n_onnx = before_onnx;
        for (int i = rules_before; i < reg->n_rules; i++)
            free(reg->rule_origin[i]);
        reg->n_rules = rules_before;
        dlclose(h);
        return slim__error(err, st, "plugin %s: init failed: %s", path,
                           init_err.msg[0] ? init_err.msg : slim_status_str(st));
    }
    if (reg->n_handles == reg->cap_handles) {
        int cap = reg->cap_handles ? 2 * reg->cap_handles : 4;
        void **hs = realloc(reg->handles, (size_t)cap * sizeof *hs);
        if (hs)
            reg->handles = hs;
        char **ps = realloc(reg->handle_paths, (size_t)cap * sizeof *ps);
        if (ps)
            reg->handle_paths = ps;
        if (!hs || !ps) {
            dlclose(h);
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        }
        reg->cap_handles = cap;
    }
    char *rp = realpath(path, NULL);
    reg->handle_paths[reg->n_handles] = rp ? rp : strdup(path);
    reg->handles[reg->n_handles++] = h;
    slim__log(SLIM_LOG_INFO, "loaded plugin %s (%s %s): %d ops", path,
              info->name ? info->name : "?", info->version ? info->version : "?", reg->n - before);
    return SLIM_OK;
}

/* ---- the host table ------------------------------------------------------ */

#include "core/gemm.h"

static void host_log(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    slim__log(level, "%s", buf);
}

static const slim_host host_table = {
    .size = sizeof(slim_host),
    .abi_major = SLIM_ABI_MAJOR,
    .abi_minor = SLIM_ABI_MINOR,
    .register_op = host_register,
    .sgemm = slim__sgemm,
    .log = host_log,
    .declare_onnx_op = host_declare_onnx,
    .register_fusion = host_register_fusion,
};

const slim_host *slim_host_table(void)
{
    return &host_table;
}
