/* tools/flags.c - flag tables and YAML run files (see flags.h). */
#include <stdio.h>

#include "tools/flags.h"

#include "dsl/dsl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static const flag_def *find(const flag_def *defs, int n, const char *name, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(defs[i].name) == len && strncmp(defs[i].name, name, len) == 0)
            return &defs[i];
    return NULL;
}

/* Levenshtein distance, for "did you mean". */
static int distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    int d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c)
                c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c)
                c = d[i][j - 1] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

static bool parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "1") || !strcmp(v, "yes")) {
        *out = true;
        return true;
    }
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "0") || !strcmp(v, "no")) {
        *out = false;
        return true;
    }
    return false;
}

/* The FLAG_LIST flag d's values: res->list[k], k its rank among the table's lists. */
static const char **list_of(const flag_def *defs, const flag_def *d, flags_result *res)
{
    int k = 0;
    for (const flag_def *x = defs; x < d; x++)
        k += x->type == FLAG_LIST || x->type == FLAG_DEFINES;
    return k < FLAGS_MAX_LISTS ? res->list[k] : NULL;
}

static int set_value(const flag_def *defs, const flag_def *d, void *base, const char *v,
                     flags_result *res, char *err, size_t n)
{
    char *end = NULL;
    void *p = (char *)base + d->off;
    errno = 0;
    switch (d->type) {
    case FLAG_STR:
    case FLAG_STR_BARE: *(const char **)p = v; return 0;
    case FLAG_INT: {
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno || x < -2147483647L || x > 2147483647L)
            break;
        *(int *)p = (int)x;
        return 0;
    }
    case FLAG_I64: {
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno)
            break;
        *(int64_t *)p = x;
        return 0;
    }
    case FLAG_U64: {
        unsigned long long x = strtoull(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-')
            break;
        *(uint64_t *)p = x;
        return 0;
    }
    case FLAG_DBL: {
        double x = strtod(v, &end);
        if (end == v || *end || errno)
            break;
        *(double *)p = x;
        return 0;
    }
    case FLAG_BOOL:
        if (parse_bool(v, (bool *)p))
            return 0;
        snprintf(err, n, "--%s=%s: expected true or false", d->name, v);
        return 2;
    case FLAG_NOTE_BOOL:
    case FLAG_NOTE: {
        bool b;
        if (d->type == FLAG_NOTE_BOOL && !parse_bool(v, &b)) {
            snprintf(err, n, "--%s=%s: expected true or false", d->name, v);
            return 2;
        }
        size_t l = strlen(res->notes);
        snprintf(res->notes + l, sizeof res->notes - l, "%s--%s=%s (%s)", l ? "\n" : "", d->name, v,
                 d->help);
        return 0;
    }
    case FLAG_DEFINES:
    case FLAG_LIST: {
        int *cnt = (int *)((char *)base + d->off2);
        const char **list = list_of(defs, d, res);
        const char *eq = strchr(v, '=');
        if (d->type == FLAG_DEFINES && (!eq || eq == v)) {
            snprintf(err, n, "--%s %s: expected NAME=VALUE", d->name, v);
            return 2;
        }
        for (int k = 0; d->type == FLAG_DEFINES && list && k < *cnt; k++)
            if (!strncmp(list[k], v, (size_t)(eq - v) + 1)) { /* the command line's wins */
                list[k] = v;
                return 0;
            }
        if (*cnt >= FLAGS_MAX_LIST || !list) {
            snprintf(err, n, "--%s: at most %d values", d->name, list ? FLAGS_MAX_LIST : 0);
            return 2;
        }
        list[*cnt] = v;
        (*cnt)++;
        *(const char *const **)p = list;
        return 0;
    }
    }
    snprintf(err, n, "--%s=%s: expected %s", d->name, v,
             d->type == FLAG_DBL ? "a number" : "an integer");
    return 2;
}

bool flags_is_flag(const char *a)
{
    return !strncmp(a, "--", 2) || !strcmp(a, "-h");
}

bool flags_given(const flags_result *res, const char *name)
{
    size_t l = strlen(name);
    for (const char *s = res->settings; *s;) {
        if (strncmp(s, name, l) == 0 && s[l] == '=')
            return true;
        s = strchr(s, '\n');
        if (!s)
            break;
        s++;
    }
    return false;
}

static int parse(const flag_def *defs, int n_defs, void *base, int argc, char **argv, int first,
                 flags_result *res, char *err, size_t err_size, int *bad);

int flags_parse(const flag_def *defs, int n_defs, void *base, int argc, char **argv, int first,
                flags_result *res, char *err, size_t err_size)
{
    int bad = -1;
    int rc = parse(defs, n_defs, base, argc, argv, first, res, err, err_size, &bad);
    const char *w = rc && bad >= 0 ? runfile_where(argv[bad]) : NULL;
    if (w) { /* a run file's value: its place in the file first */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", err);
        snprintf(err, err_size, "%s: %s", w, msg);
    }
    return rc;
}

static int parse(const flag_def *defs, int n_defs, void *base, int argc, char **argv, int first,
                 flags_result *res, char *err, size_t err_size, int *bad)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        *bad = i;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            res->help = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (!strcmp(a, "--")) {
                for (i++; i < argc && res->n_pos < FLAGS_MAX_POS; i++)
                    res->pos[res->n_pos++] = argv[i];
                break;
            }
            if (res->n_pos >= FLAGS_MAX_POS) {
                snprintf(err, err_size, "too many arguments");
                return 2;
            }
            res->pos[res->n_pos++] = a;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const flag_def *d = find(defs, n_defs, name, len);
        const char *value = eq ? eq + 1 : NULL;
        if (!d && !eq && len > 2 && strncmp(name, "no", 2) == 0) {
            const flag_def *b = find(defs, n_defs, name + 2, len - 2);
            if (b && (b->type == FLAG_BOOL || b->type == FLAG_NOTE_BOOL)) {
                d = b;
                value = "false";
            }
        }
        if (!d) {
            const char *best = NULL;
            int bd = 4;
            for (int k = 0; k < n_defs; k++) {
                int dd = distance(name, len, defs[k].name);
                if (dd < bd) {
                    bd = dd;
                    best = defs[k].name;
                }
            }
            snprintf(err, err_size, "unknown flag --%.*s%s%s%s", (int)len, name,
                     best ? " (did you mean --" : "", best ? best : "", best ? "?)" : "");
            return 2;
        }
        if (!value) {
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            if (d->type == FLAG_BOOL || d->type == FLAG_NOTE_BOOL)
                value = "true"; /* absl: a boolean flag alone is true */
            else if (next && !flags_is_flag(next))
                value = argv[++i];
            else if (d->type == FLAG_STR_BARE)
                value = "";  /* alone: the command's default */
            else if (next) { /* `--trace_dir --steps=3` must not eat --steps */
                snprintf(err, err_size,
                         "--%s needs a value, and the next argument, %s, is a flag "
                         "(write --%s=%s if that is the value)",
                         d->name, next, d->name, next);
                return 2;
            } else {
                snprintf(err, err_size, "--%s needs a value", d->name);
                return 2;
            }
        }
        int rc = set_value(defs, d, base, value, res, err, err_size);
        if (rc)
            return rc;
        size_t l = strlen(res->settings);
        snprintf(res->settings + l, sizeof res->settings - l, "%s=%s\n", d->name, value);
    }
    return 0;
}

void flags_usage(FILE *f, const char *usage, const flag_def *defs, int n_defs)
{
    fprintf(f, "%s\n", usage);
    for (int i = 0; i < n_defs; i++) {
        if (!defs[i].help || !defs[i].help[0] || defs[i].type == FLAG_NOTE ||
            defs[i].type == FLAG_NOTE_BOOL)
            continue;
        if (defs[i].type == FLAG_STR && defs[i].name[0] == 0) { /* a section heading */
            fprintf(f, "\n%s\n", defs[i].help);
            continue;
        }
        fprintf(f, "  --%-34s %s\n", defs[i].name, defs[i].help);
    }
}

/* ---- YAML run files ------------------------------------------------------------- */

/* The run files loaded (slimrun run has one, two with its eval: section's
 * inheritance): runfile_where looks arguments up in them. */
static runfile *live[4];

const char *runfile_where(const char *arg)
{
    for (int k = 0; k < 4; k++) {
        const runfile *rf = live[k];
        for (int i = 0; rf && i < rf->argc; i++)
            if (rf->argv[i] == arg)
                return rf->where[i];
        for (int i = 0; rf && i < rf->eval_argc; i++)
            if (rf->eval_argv[i] == arg)
                return rf->eval_where[i];
    }
    return NULL;
}

/* Does msg hold word w delimited (start, space, quote, =, or : around it)? */
static bool has_word(const char *msg, const char *w, size_t wl)
{
    if (wl == 0)
        return false;
    for (const char *p = msg; (p = strstr(p, w)) != NULL; p++) {
        char before = p == msg ? ' ' : p[-1], after = p[wl];
        if (strchr(" '\"`=(,:", before) && (after == 0 || strchr(" '\"`:,;)=/\n", after)))
            return true;
    }
    return false;
}

const char *runfile_where_in(const char *msg)
{
    const char *best = NULL;
    size_t best_len = 0;
    for (int k = 0; k < 4; k++) {
        const runfile *rf = live[k];
        for (int e = 0; rf && e < 2; e++) {
            int n = e ? rf->eval_argc : rf->argc;
            char **a = e ? rf->eval_argv : rf->argv, **w = e ? rf->eval_where : rf->where;
            for (int i = 0; i < n; i++) {
                const char *eq = strchr(a[i], '='); /* "--name=value" */
                size_t nl = (size_t)(eq - a[i]);
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)nl, a[i]);
                if (has_word(msg, name, strlen(name)))
                    return w[i]; /* "--batch_size=..." */
                size_t vl = strlen(eq + 1);
                if (vl > best_len && has_word(msg, eq + 1, vl)) {
                    best = w[i];
                    best_len = vl;
                }
            }
        }
    }
    /* a short value ("8", "true") quoted in a message is too likely someone else's */
    return best_len >= 3 ? best : NULL;
}

static int push_arg(int *argc, char ***argv, char ***where, const char *key, const char *val,
                    const char *path, const yaml_mark_t *m)
{
    char **a = realloc(*argv, (size_t)(*argc + 2) * sizeof *a);
    if (!a)
        return -1;
    *argv = a;
    char **w = realloc(*where, (size_t)(*argc + 2) * sizeof *w);
    if (!w)
        return -1;
    *where = w;
    a[*argc] = w[*argc] = NULL;
    a[*argc + 1] = w[*argc + 1] = NULL;
    size_t n = strlen(key) + strlen(val) + 4, wn = strlen(path) + 48;
    a[*argc] = malloc(n);
    w[*argc] = malloc(wn);
    if (!a[*argc] || !w[*argc]) {
        free(a[*argc]);
        free(w[*argc]);
        a[*argc] = w[*argc] = NULL;
        return -1;
    }
    snprintf(a[*argc], n, "--%s=%s", key, val);
    snprintf(w[*argc], wn, "%s:%zu:%zu", path, m->line + 1, m->column + 1);
    (*argc)++;
    return 0;
}

void runfile_free(runfile *rf)
{
    for (int i = 0; i < rf->argc; i++) {
        free(rf->argv[i]);
        free(rf->where[i]);
    }
    for (int i = 0; i < rf->eval_argc; i++) {
        free(rf->eval_argv[i]);
        free(rf->eval_where[i]);
    }
    free(rf->argv);
    free(rf->eval_argv);
    free(rf->where);
    free(rf->eval_where);
    free(rf->command);
    for (int k = 0; k < 4; k++)
        if (live[k] == rf)
            live[k] = NULL;
    memset(rf, 0, sizeof *rf);
}

/* The document as a tree, then walked: mapping at the top, scalars (or
 * sequences of scalars) as values, one nested mapping `eval:`. */
static int walk_map(yaml_document_t *doc, yaml_node_t *map, const char *path, runfile *rf,
                    bool in_eval, char *err, size_t n)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        if (!k || k->type != YAML_SCALAR_NODE) {
            snprintf(err, n, "%s:%zu:%zu: keys must be flag names", path,
                     k ? k->start_mark.line + 1 : 0, k ? k->start_mark.column + 1 : 0);
            return 2;
        }
        const char *key = (const char *)k->data.scalar.value;
        int *argc = in_eval ? &rf->eval_argc : &rf->argc;
        char ***argv = in_eval ? &rf->eval_argv : &rf->argv;
        char ***where = in_eval ? &rf->eval_where : &rf->where;
        if (!in_eval && !strcmp(key, "command") && v->type == YAML_SCALAR_NODE) {
            free(rf->command);
            rf->command = strdup((const char *)v->data.scalar.value);
            snprintf(rf->command_where, sizeof rf->command_where, "%s:%zu:%zu", path,
                     v->start_mark.line + 1, v->start_mark.column + 1);
            continue;
        }
        if (!in_eval && !strcmp(key, "eval") && v->type == YAML_MAPPING_NODE) {
            rf->has_eval = true;
            int rc = walk_map(doc, v, path, rf, true, err, n);
            if (rc)
                return rc;
            continue;
        }
        if (v->type == YAML_SCALAR_NODE) {
            if (push_arg(argc, argv, where, key, (const char *)v->data.scalar.value, path,
                         &k->start_mark))
                goto oom;
        } else if (v->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top; it++) {
                yaml_node_t *e = yaml_document_get_node(doc, *it);
                if (!e || e->type != YAML_SCALAR_NODE) {
                    snprintf(err, n, "%s:%zu:%zu: '%s' takes a list of plain values", path,
                             v->start_mark.line + 1, v->start_mark.column + 1, key);
                    return 2;
                }
                if (push_arg(argc, argv, where, key, (const char *)e->data.scalar.value, path,
                             &e->start_mark))
                    goto oom;
            }
        } else {
            snprintf(err, n, "%s:%zu:%zu: '%s' must be a plain value%s", path,
                     v->start_mark.line + 1, v->start_mark.column + 1, key,
                     in_eval ? "" : " (only 'eval:' holds a mapping)");
            return 2;
        }
    }
    return 0;
oom:
    snprintf(err, n, "out of memory");
    return 1;
}

int runfile_load(const char *path, runfile *rf, char *err, size_t n)
{
    memset(rf, 0, sizeof *rf);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, n, "cannot open %s: %s", path, strerror(errno));
        return 1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    int rc = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        char what[600];
        int line, col;
        slim__yaml_problem(parser.problem, parser.context, parser.problem_mark.line,
                           parser.problem_mark.column, parser.context_mark.line,
                           parser.context_mark.column, what, sizeof what, &line, &col);
        snprintf(err, n, "%s:%d:%d: %s", path, line, col, what);
        yaml_parser_delete(&parser);
        fclose(f);
        return 2;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        snprintf(err, n,
                 "%s:1:1: a run file is a mapping of flag names to values "
                 "(model_name: lenet ...)",
                 path);
        rc = 2;
    } else {
        rc = walk_map(&doc, root, path, rf, false, err, n);
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    if (rc) {
        runfile_free(rf);
        return rc;
    }
    for (int k = 0; k < 4; k++)
        if (!live[k]) {
            live[k] = rf;
            break;
        }
    return 0;
}
