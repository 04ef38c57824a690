/*
 * dsl/yaml.c - YAML text to a document tree with source positions, through
 * libyaml's event parser, plus the arena and the error formatting every DSL
 * file uses.
 *
 * The tree is built without recursion (an explicit stack), so nesting depth
 * costs no C stack; it is still capped, because every later pass walks it.
 */
#include "dsl/dsl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- arena ------------------------------------------------------------------ */

struct dsl_chunk {
    dsl_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *dsl_alloc(dsl_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    if (a->limit && (n > a->limit || a->total > a->limit - n))
        return NULL;
    dsl_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

char *dsl_strndup(dsl_arena *a, const char *s, size_t n)
{
    char *p = dsl_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

char *dsl_strdup(dsl_arena *a, const char *s)
{
    return dsl_strndup(a, s, strlen(s));
}

char *dsl_printf(dsl_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n >= 0 ? dsl_alloc(a, (size_t)n + 1) : NULL;
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void dsl_arena_free(dsl_arena *a)
{
    if (!a)
        return;
    dsl_chunk *c = a->head;
    while (c) {
        dsl_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

/* ---- errors ----------------------------------------------------------------- */

slim_status dsl_vfail(slim_error *err, const dnode *at, int col_offset, slim_status code,
                      const char *fmt, va_list ap)
{
    if (!err)
        return code;
    char msg[sizeof err->msg - sizeof err->file - 32];
    vsnprintf(msg, sizeof msg, fmt, ap);
    err->code = code;
    if (at) {
        snprintf(err->file, sizeof err->file, "%s", at->file ? at->file : "");
        err->line = at->line;
        err->col = at->col + col_offset;
        snprintf(err->msg, sizeof err->msg, "%s:%d:%d: %s", err->file, err->line, err->col, msg);
    } else {
        err->file[0] = 0;
        err->line = err->col = 0;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return code;
}

slim_status dsl_fail(slim_error *err, const dnode *at, slim_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slim_status st = dsl_vfail(err, at, 0, code, fmt, ap);
    va_end(ap);
    return st;
}

static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            prev = cur;
        }
    }
    return row[lb];
}

const char *dsl_suggest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int bd = 99;
    size_t lw = strlen(word);
    for (int i = 0; i < n; i++) {
        if (!cands[i] || !strcmp(cands[i], word))
            continue;
        int dist = edit_distance(word, cands[i]);
        if (dist < bd) {
            bd = dist;
            best = cands[i];
        }
    }
    /* a typo: at most 2 edits, and fewer than a third of the word */
    if (best && bd <= 2 && (size_t)bd * 3 <= lw + 1)
        return best;
    return NULL;
}

slim_status dsl_check_keys(slim_error *err, const dnode *map, const char *const *keys, int n,
                           const char *what)
{
    for (int i = 0; i < map->n; i++) {
        bool ok = false;
        for (int j = 0; j < n && !ok; j++)
            ok = !strcmp(map->keys[i]->str, keys[j]);
        if (ok)
            continue;
        const char *sug = dsl_suggest(map->keys[i]->str, keys, n);
        if (sug)
            return dsl_fail(err, map->keys[i], SLIM_EINVAL,
                            "unknown key '%s' in %s, did you mean '%s'?", map->keys[i]->str, what,
                            sug);
        char list[400];
        size_t used = 0;
        list[0] = 0;
        for (int j = 0; j < n; j++)
            used +=
                (size_t)snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "", keys[j]);
        return dsl_fail(err, map->keys[i], SLIM_EINVAL,
                        "unknown key '%s' in %s, expected one of: %s", map->keys[i]->str, what,
                        list);
    }
    return SLIM_OK;
}

/* ---- the tree ----------------------------------------------------------------- */

const dnode *dnode_get(const dnode *map, const char *key)
{
    if (!map || map->kind != DN_MAP)
        return NULL;
    for (int i = 0; i < map->n; i++)
        if (strcmp(map->keys[i]->str, key) == 0)
            return map->items[i];
    return NULL;
}

const dnode *dnode_key(const dnode *map, const char *key)
{
    if (!map || map->kind != DN_MAP)
        return NULL;
    for (int i = 0; i < map->n; i++)
        if (strcmp(map->keys[i]->str, key) == 0)
            return map->keys[i];
    return NULL;
}

const char *dnode_kind_str(const dnode *n)
{
    if (!n)
        return "nothing";
    switch (n->kind) {
    case DN_SEQ: return "a list";
    case DN_MAP: return "a mapping";
    case DN_SCALAR: break;
    }
    return "a scalar";
}

#define MAX_NEST 200

typedef struct open_node {
    dnode *n;
    int cap;
    dnode *pending_key; /* a mapping's key waiting for its value */
} open_node;

static slim_status append(dsl_arena *a, open_node *o, dnode *child, slim_error *err)
{
    dnode *n = o->n;
    if (n->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 8;
        dnode **items = dsl_alloc(a, (size_t)cap * sizeof *items);
        dnode **keys = n->kind == DN_MAP ? dsl_alloc(a, (size_t)cap * sizeof *keys) : NULL;
        if (!items || (n->kind == DN_MAP && !keys))
            return dsl_fail(err, child, SLIM_ENOMEM, "out of memory reading the model file");
        if (n->n) {
            memcpy(items, n->items, (size_t)n->n * sizeof *items);
            if (keys)
                memcpy(keys, n->keys, (size_t)n->n * sizeof *keys);
        }
        n->items = items;
        n->keys = keys;
        o->cap = cap;
    }
    if (n->kind == DN_SEQ) {
        n->items[n->n++] = child;
        return SLIM_OK;
    }
    if (!o->pending_key) {
        if (child->kind != DN_SCALAR)
            return dsl_fail(err, child, SLIM_EPARSE,
                            "found %s as a mapping key, expected a plain name",
                            dnode_kind_str(child));
        for (int i = 0; i < n->n; i++)
            if (strcmp(n->keys[i]->str, child->str) == 0)
                return dsl_fail(err, child, SLIM_EPARSE,
                                "duplicate key '%s' (first written at %d:%d), expected each key "
                                "once per mapping",
                                child->str, n->keys[i]->line, n->keys[i]->col);
        o->pending_key = child;
        return SLIM_OK;
    }
    n->keys[n->n] = o->pending_key;
    n->items[n->n++] = child;
    o->pending_key = NULL;
    return SLIM_OK;
}

void slim__yaml_problem(const char *problem, const char *context, size_t pl, size_t pc, size_t cl,
                        size_t cc, char *what, size_t n, int *line, int *col)
{
    const char *pr = problem ? problem : "malformed YAML";
    *line = (int)pl + 1;
    *col = (int)pc + 1;
    bool flow = context && (strstr(context, "flow sequence") || strstr(context, "flow mapping"));
    bool quote = context && strstr(context, "quoted scalar");
    if (context && strstr(context, "simple key") && cl < pl) { /* "b 2": the line of the key */
        *line = (int)cl + 1;
        *col = (int)cc + 1;
        snprintf(what, n, "YAML syntax error: no ':' after this key (KEY: VALUE); %s", pr);
    } else if ((flow || quote) && cl < pl) { /* where the unclosed thing opened */
        *line = (int)cl + 1;
        *col = (int)cc + 1;
        snprintf(what, n, "YAML syntax error: this %s is not closed (%s by line %zu)",
                 quote                              ? "quoted string"
                 : strstr(context, "flow sequence") ? "[ list"
                                                    : "{ mapping",
                 quote ? "no closing quote" : pr, pl + 1);
    } else if (context) {
        snprintf(what, n, "YAML syntax error: %s (%s at %zu:%zu)", pr, context, cl + 1, cc + 1);
    } else {
        snprintf(what, n, "YAML syntax error: %s", pr);
    }
}

const char *slim__yaml_not_text(const char *file, const char *text, size_t len)
{
    size_t n = len < 4096 ? len : 4096;
    (void)file;
    bool binary = false;
    for (size_t i = 0; i < n && !binary; i++)
        binary = text[i] == 0 || (text[i] > 0 && text[i] < 32 && !strchr("\t\n\r\f\v\b", text[i]));
    if (!binary)
        return NULL;
    if (memmem(text, n, "slim-checkpoint", 15))
        return "a slim checkpoint, not a model file (YAML): give it as --checkpoint_path (or "
               "CHECKPOINT to predict), with the model it was trained from";
    if (n >= 3 && (unsigned char)text[0] == 0xff && (unsigned char)text[1] == 0xd8)
        return "a JPEG image, not a model file (YAML)";
    if (n >= 8 && !memcmp(text, "\x89PNG", 4))
        return "a PNG image, not a model file (YAML)";
    return "a binary file, not a model file (YAML text, README: The model language; an ONNX "
           "model is read from a file named *.onnx)";
}

static slim_status yaml_problem(yaml_parser_t *p, const char *file, slim_error *err)
{
    if (p->error == YAML_MEMORY_ERROR) {
        dnode at = {.file = file,
                    .line = (int)p->problem_mark.line + 1,
                    .col = (int)p->problem_mark.column + 1};
        return dsl_fail(err, &at, SLIM_ENOMEM, "out of memory reading the model file");
    }
    char what[600];
    dnode at = {.file = file};
    slim__yaml_problem(p->problem, p->context, p->problem_mark.line, p->problem_mark.column,
                       p->context_mark.line, p->context_mark.column, what, sizeof what, &at.line,
                       &at.col);
    return dsl_fail(err, &at, SLIM_EPARSE, "%s", what);
}

slim_status dsl_yaml_parse(dsl_arena *a, const char *file, const char *text, size_t len,
                           dnode **root, slim_error *err)
{
    *root = NULL;
    const char *bin = slim__yaml_not_text(file, text, len);
    if (bin)
        return dsl_fail(err, NULL, SLIM_EPARSE, "%s is %s", file, bin);
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return dsl_fail(err, NULL, SLIM_ENOMEM, "%s: cannot start the YAML parser", file);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    open_node *stack = malloc(MAX_NEST * sizeof *stack);
    if (!stack) {
        yaml_parser_delete(&p);
        return dsl_fail(err, NULL, SLIM_ENOMEM, "out of memory");
    }
    int depth = 0, docs = 0;
    slim_status st = SLIM_OK;
    bool done = false;
    while (!done && st == SLIM_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = yaml_problem(&p, file, err);
            break;
        }
        dnode *n = NULL;
        dnode at = {.file = file,
                    .line = (int)ev.start_mark.line + 1,
                    .col = (int)ev.start_mark.column + 1};
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                st = dsl_fail(err, &at, SLIM_EPARSE,
                              "found a second YAML document, expected one model per file");
            break;
        case YAML_ALIAS_EVENT:
            st = dsl_fail(err, &at, SLIM_EPARSE,
                          "found an alias (*%s), expected plain values: share settings with "
                          "defaults: or blocks: instead",
                          ev.data.alias.anchor ? (const char *)ev.data.alias.anchor : "");
            break;
        case YAML_SCALAR_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            n = dsl_alloc(a, sizeof *n);
            if (!n) {
                st = dsl_fail(err, &at, SLIM_ENOMEM, "out of memory reading the model file");
                break;
            }
            *n = at;
            if (ev.type == YAML_SCALAR_EVENT) {
                n->kind = DN_SCALAR;
                size_t sl = ev.data.scalar.length;
                const char *sv = (const char *)ev.data.scalar.value;
                if (memchr(sv, 0, sl)) {
                    st = dsl_fail(err, &at, SLIM_EPARSE,
                                  "found a NUL character in a scalar, expected text");
                    break;
                }
                n->str = dsl_strndup(a, sv, sl);
                if (!n->str) {
                    st = dsl_fail(err, &at, SLIM_ENOMEM, "out of memory reading the model file");
                    break;
                }
                n->quoted = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
                n->plain_multiline = !n->quoted && ev.end_mark.line != ev.start_mark.line;
            } else {
                n->kind = ev.type == YAML_SEQUENCE_START_EVENT ? DN_SEQ : DN_MAP;
            }
            if (depth > 0)
                st = append(a, &stack[depth - 1], n, err);
            else if (!*root)
                *root = n;
            if (st == SLIM_OK && n->kind != DN_SCALAR) {
                if (depth == MAX_NEST) {
                    st =
                        dsl_fail(err, &at, SLIM_EPARSE,
                                 "found lists or mappings nested %d deep, expected less", MAX_NEST);
                    break;
                }
                stack[depth++] = (open_node){.n = n};
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0)
                depth--;
            break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    free(stack);
    yaml_parser_delete(&p);
    if (st == SLIM_OK && !*root) {
        dnode at = {.file = file, .line = 1, .col = 1};
        st =
            dsl_fail(err, &at, SLIM_EPARSE, "the file is empty, expected a model (name:, layers:)");
    }
    return st;
}
