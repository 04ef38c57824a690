/* datasets/yamltree.c - libyaml events into a tree of nodes with line:col. */
#include "datasets/yamltree.h"
#include "datasets/tfrecord.h"
#include "core/error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static void node_free(yt_node *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->cnt; i++)
        node_free(n->items[i]);
    free(n->items);
    free(n->text);
    free(n);
}

void slim__yt_free(yt_doc *doc)
{
    if (!doc)
        return;
    node_free(doc->root);
    free(doc->path);
    doc->root = NULL;
    doc->path = NULL;
}

static int push(yt_node *p, yt_node *c)
{
    int k = p->cnt;
    /* items grows by doubling from 4 */
    if (k >= 4 && (k & (k - 1)) == 0) {
        yt_node **it = realloc(p->items, (size_t)(2 * k) * sizeof *it);
        if (!it)
            return -1;
        p->items = it;
    } else if (k == 0) {
        p->items = malloc(4 * sizeof *p->items);
        if (!p->items)
            return -1;
    }
    p->items[k] = c;
    p->cnt++;
    p->n = p->kind == YT_MAP ? p->cnt / 2 : p->cnt;
    return 0;
}

slim_status slim__yt_error(const yt_doc *doc, const yt_node *n, slim_error *err, const char *fmt,
                           ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = n ? n->line : 1, col = n ? n->col : 1;
    slim__error(err, SLIM_EPARSE, "%s:%d:%d: %s", doc->path, line, col, msg);
    if (err) {
        snprintf(err->file, sizeof err->file, "%s", doc->path);
        err->line = line;
        err->col = col;
    }
    return SLIM_EPARSE;
}

slim_status slim__yt_load(const char *path, const char *text, yt_doc *doc, slim_error *err)
{
    memset(doc, 0, sizeof *doc);
    doc->path = strdup(path);
    if (!doc->path)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    FILE *f = NULL;
    if (!text) {
        f = fopen(path, "rbe");
        if (!f) {
            slim_status st = slim__data_error(err, errno == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO,
                                              path, "%s: cannot open: %s", path, strerror(errno));
            slim__yt_free(doc);
            return st;
        }
    }
    yaml_parser_t ps;
    yaml_parser_initialize(&ps);
    if (f)
        yaml_parser_set_input_file(&ps, f);
    else
        yaml_parser_set_input_string(&ps, (const unsigned char *)text, strlen(text));
    yt_node *stack[64];
    int depth = 0;
    slim_status st = SLIM_OK;
    bool done = false;
    while (!done && !st) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&ps, &ev)) {
            yt_node at = {.line = (int)ps.problem_mark.line + 1,
                          .col = (int)ps.problem_mark.column + 1};
            st = slim__yt_error(doc, &at, err, "YAML syntax error: %s%s%s",
                                ps.problem ? ps.problem : "unknown", ps.context ? " " : "",
                                ps.context ? ps.context : "");
            break;
        }
        yt_node *n = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
        case YAML_DOCUMENT_END_EVENT: done = ev.type == YAML_STREAM_END_EVENT || depth == 0; break;
        case YAML_ALIAS_EVENT: {
            yt_node at = {.line = (int)ev.start_mark.line + 1,
                          .col = (int)ev.start_mark.column + 1};
            st = slim__yt_error(doc, &at, err, "YAML aliases are not supported here");
            break;
        }
        case YAML_SCALAR_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            n = calloc(1, sizeof *n);
            if (!n) {
                st = slim__error(err, SLIM_ENOMEM, "out of memory");
                break;
            }
            n->line = (int)ev.start_mark.line + 1;
            n->col = (int)ev.start_mark.column + 1;
            if (ev.type == YAML_SCALAR_EVENT) {
                n->kind = YT_SCALAR;
                n->text = strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
                if (!n->text) {
                    free(n);
                    st = slim__error(err, SLIM_ENOMEM, "out of memory");
                    break;
                }
                n->quoted = ev.data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                            ev.data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
            } else {
                n->kind = ev.type == YAML_SEQUENCE_START_EVENT ? YT_SEQ : YT_MAP;
            }
            if (depth == 0) {
                node_free(doc->root);
                doc->root = n;
            } else {
                yt_node *p = stack[depth - 1];
                /* A key written twice: an error, as in model files (the
                 * last would win silently). */
                const yt_node *first = NULL;
                if (p->kind == YT_MAP && p->cnt % 2 == 0 && n->kind == YT_SCALAR && n->text)
                    for (int i = 0; i < p->cnt && !first; i += 2)
                        if (p->items[i]->kind == YT_SCALAR && !strcmp(p->items[i]->text, n->text))
                            first = p->items[i];
                if (first) {
                    st = slim__yt_error(doc, n, err,
                                        "duplicate key '%s' (first written at %d:%d), expected "
                                        "each key once per mapping",
                                        n->text, first->line, first->col);
                    node_free(n);
                    break;
                }
                if (push(p, n)) {
                    node_free(n);
                    st = slim__error(err, SLIM_ENOMEM, "out of memory");
                    break;
                }
            }
            if (n->kind != YT_SCALAR) {
                if (depth >= 63) {
                    st = slim__yt_error(doc, n, err, "nesting is too deep");
                    break;
                }
                stack[depth++] = n;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&ps);
    if (f)
        fclose(f);
    if (st)
        slim__yt_free(doc);
    return st;
}

const yt_node *slim__yt_get(const yt_node *map, const char *key)
{
    if (!map || map->kind != YT_MAP)
        return NULL;
    for (int i = 0; i < map->n; i++) {
        const yt_node *k = map->items[2 * i];
        if (k->kind == YT_SCALAR && !strcmp(k->text, key))
            return map->items[2 * i + 1];
    }
    return NULL;
}

const char *slim__yt_str(const yt_node *n)
{
    return n && n->kind == YT_SCALAR ? n->text : NULL;
}

slim_status slim__yt_int(const yt_doc *d, const yt_node *n, int64_t *out, slim_error *err)
{
    if (!n || n->kind != YT_SCALAR || n->quoted)
        return slim__yt_error(d, n, err, "expected an integer");
    char *end;
    errno = 0;
    long long v = strtoll(n->text, &end, 10);
    if (errno || end == n->text || *end)
        return slim__yt_error(d, n, err, "expected an integer, got '%s'", n->text);
    *out = v;
    return SLIM_OK;
}

slim_status slim__yt_float(const yt_doc *d, const yt_node *n, double *out, slim_error *err)
{
    if (!n || n->kind != YT_SCALAR || n->quoted)
        return slim__yt_error(d, n, err, "expected a number");
    char *end;
    errno = 0;
    double v = strtod(n->text, &end);
    /* "32/255" style fractions are convenient in recipes (TF-Slim writes 32. / 255.). */
    if (!errno && end != n->text && *end == '/') {
        char *e2;
        double den = strtod(end + 1, &e2);
        if (e2 != end + 1 && !*e2 && den != 0) {
            *out = v / den;
            return SLIM_OK;
        }
    }
    if (errno || end == n->text || *end || !isfinite(v))
        return slim__yt_error(d, n, err, "expected a number, got '%s'", n->text);
    *out = v;
    return SLIM_OK;
}

slim_status slim__yt_bool(const yt_doc *d, const yt_node *n, bool *out, slim_error *err)
{
    const char *s = slim__yt_str(n);
    if (s && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "yes") || !strcmp(s, "on"))) {
        *out = true;
        return SLIM_OK;
    }
    if (s &&
        (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "no") || !strcmp(s, "off"))) {
        *out = false;
        return SLIM_OK;
    }
    return slim__yt_error(d, n, err, "expected true or false%s%s%s", s ? ", got '" : "", s ? s : "",
                          s ? "'" : "");
}

slim_status slim__yt_floats(const yt_doc *d, const yt_node *n, double *out, int max, int *n_out,
                            slim_error *err)
{
    if (n && n->kind == YT_SEQ) {
        if (n->n > max)
            return slim__yt_error(d, n, err, "expected at most %d numbers, got %d", max, n->n);
        for (int i = 0; i < n->n; i++) {
            slim_status st = slim__yt_float(d, n->items[i], &out[i], err);
            if (st)
                return st;
        }
        *n_out = n->n;
        return SLIM_OK;
    }
    *n_out = 1;
    return slim__yt_float(d, n, &out[0], err);
}
