/* datasets/recipe.c - preprocessing recipes: YAML -> steps, with file:line:col errors.
 *
 *   name: inception
 *   image_size: 224
 *   channels: 3
 *   keys: {image: image/encoded, label: image/class/label, format: image/format}
 *   train:
 *     - decode: {channels: 3}
 *     - distorted_bounding_box_crop: {area_range: [0.05, 1.0]}
 *     - resize: {}
 *     - random_flip_left_right
 *   eval:
 *     - ...
 *
 * Every step is either a bare name or a one-key map {name: {params}}. Unknown
 * steps and unknown parameters are errors that list what is known. */
#include "datasets/prep.h"
#include "datasets/tfrecord.h"
#include "datasets/yamltree.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

typedef struct opinfo {
    const char *name;
    prep_op op;
    const char *params; /* comma-separated */
} opinfo;

static const opinfo ops[] = {
    {"decode", PREP_DECODE,
     "channels,exif_orientation,dct_method,fancy_upscaling,try_recover_truncated"},
    {"convert_to_float", PREP_CONVERT_TO_FLOAT, ""},
    {"to_float", PREP_TO_FLOAT, ""},
    {"central_crop", PREP_CENTRAL_CROP, "fraction"},
    {"distorted_bounding_box_crop", PREP_DISTORTED_BBOX_CROP,
     "min_object_covered,aspect_ratio_range,area_range,max_attempts"},
    {"random_crop", PREP_RANDOM_CROP, "height,width"},
    {"central_crop_to", PREP_CENTRAL_CROP_TO, "height,width"},
    {"resize", PREP_RESIZE, "height,width,method,half_pixel_centers"},
    {"aspect_preserving_resize", PREP_ASPECT_RESIZE, "side,side_min,side_max"},
    {"resize_with_crop_or_pad", PREP_CROP_OR_PAD, "height,width"},
    {"pad", PREP_PAD, "padding"},
    {"random_flip_left_right", PREP_FLIP, "probability"},
    {"random_brightness", PREP_BRIGHTNESS, "max_delta"},
    {"random_saturation", PREP_SATURATION, "lower,upper"},
    {"random_hue", PREP_HUE, "max_delta"},
    {"random_contrast", PREP_CONTRAST, "lower,upper"},
    {"distort_color", PREP_DISTORT_COLOR, "fast_mode,color_ordering"},
    {"clip", PREP_CLIP, "min,max"},
    {"normalize", PREP_NORMALIZE, "subtract,multiply,divide"},
    {"subtract_mean", PREP_SUBTRACT_MEAN, "mean"},
    {"per_image_standardization", PREP_STANDARDIZE, ""},
    {"rgb_to_grayscale", PREP_GRAYSCALE, ""},
};
#define N_OPS ((int)(sizeof ops / sizeof *ops))

const char *slim__prep_op_name(prep_op op)
{
    for (int i = 0; i < N_OPS; i++)
        if (ops[i].op == op)
            return ops[i].name;
    return "?";
}

static bool has_param(const char *list, const char *p)
{
    size_t n = strlen(p);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t k = e ? (size_t)(e - s) : strlen(s);
        if (k == n && !strncmp(s, p, n))
            return true;
        s += k + (e ? 1 : 0);
    }
    return false;
}

static void step_defaults(prep_step *s)
{
    s->fraction = 0.875;
    s->min_covered = 0.1;
    s->aspect[0] = 0.75;
    s->aspect[1] = 1.33;
    s->area[0] = 0.05;
    s->area[1] = 1.0;
    s->max_attempts = 100;
    s->p = 0.5;
    s->fast_mode = true;
    s->ordering = -1;
    s->lo = 0;
    s->hi = 1;
    s->mul[0] = 1;
    s->nmul = 1;
    s->nv = 1;
}

static slim_status int_param(const yt_doc *d, const yt_node *v, int lo, int hi, int *out,
                             slim_error *err)
{
    int64_t x;
    slim_status st = slim__yt_int(d, v, &x, err);
    if (st)
        return st;
    if (x < lo || x > hi)
        return slim__yt_error(d, v, err, "%lld is out of range [%d, %d]", (long long)x, lo, hi);
    *out = (int)x;
    return SLIM_OK;
}

static slim_status range_param(const yt_doc *d, const yt_node *v, double out[2], slim_error *err)
{
    int n;
    double t[2];
    slim_status st = slim__yt_floats(d, v, t, 2, &n, err);
    if (st)
        return st;
    if (n != 2 || t[0] > t[1])
        return slim__yt_error(d, v, err, "expected a range [low, high] with low <= high");
    out[0] = t[0];
    out[1] = t[1];
    return SLIM_OK;
}

static slim_status parse_param(const yt_doc *d, prep_step *s, const char *key, const yt_node *v,
                               slim_error *err)
{
    slim_status st = SLIM_OK;
    if (!strcmp(key, "channels")) {
        st = int_param(d, v, 0, 3, &s->channels, err);
        if (!st && s->channels == 2)
            st = slim__yt_error(d, v, err, "channels must be 1 or 3");
    } else if (!strcmp(key, "exif_orientation")) {
        st = slim__yt_bool(d, v, &s->exif, err);
    } else if (!strcmp(key, "dct_method")) {
        /* tf.image.decode_jpeg's names; "" is TensorFlow's default (accurate) */
        const char *m = slim__yt_str(v);
        if (m && (!strcmp(m, "INTEGER_ACCURATE") || !*m))
            s->fast_dct = false;
        else if (m && !strcmp(m, "INTEGER_FAST"))
            s->fast_dct = true;
        else
            st = slim__yt_error(d, v, err, "dct_method must be INTEGER_ACCURATE or INTEGER_FAST");
    } else if (!strcmp(key, "fancy_upscaling")) {
        bool fancy = true;
        st = slim__yt_bool(d, v, &fancy, err);
        s->plain_upsampling = !fancy;
    } else if (!strcmp(key, "try_recover_truncated")) {
        st = slim__yt_bool(d, v, &s->recover_truncated, err);
    } else if (!strcmp(key, "fraction")) {
        st = slim__yt_float(d, v, &s->fraction, err);
        if (!st && (s->fraction <= 0 || s->fraction > 1))
            st = slim__yt_error(d, v, err, "fraction must be in (0, 1]");
    } else if (!strcmp(key, "min_object_covered")) {
        st = slim__yt_float(d, v, &s->min_covered, err);
        if (!st && (s->min_covered < 0 || s->min_covered > 1))
            st = slim__yt_error(d, v, err, "min_object_covered must be in [0, 1]");
    } else if (!strcmp(key, "aspect_ratio_range")) {
        st = range_param(d, v, s->aspect, err);
        if (!st && s->aspect[0] <= 0)
            st = slim__yt_error(d, v, err, "aspect ratios must be positive");
    } else if (!strcmp(key, "area_range")) {
        st = range_param(d, v, s->area, err);
        if (!st && (s->area[0] <= 0 || s->area[1] > 1))
            st = slim__yt_error(d, v, err, "area_range must lie in (0, 1]");
    } else if (!strcmp(key, "max_attempts")) {
        st = int_param(d, v, 1, 100000, &s->max_attempts, err);
    } else if (!strcmp(key, "height")) {
        st = int_param(d, v, 1, 1 << 16, &s->height, err);
    } else if (!strcmp(key, "width")) {
        st = int_param(d, v, 1, 1 << 16, &s->width, err);
    } else if (!strcmp(key, "method")) {
        const char *m = slim__yt_str(v);
        if (!m || strcmp(m, "bilinear"))
            st = slim__yt_error(d, v, err,
                                "only method 'bilinear' is implemented (TF-Slim's fast_mode)");
    } else if (!strcmp(key, "half_pixel_centers")) {
        st = slim__yt_bool(d, v, &s->half_pixel, err);
    } else if (!strcmp(key, "side")) {
        st = int_param(d, v, 1, 1 << 16, &s->side_min, err);
        s->side_max = s->side_min;
    } else if (!strcmp(key, "side_min")) {
        st = int_param(d, v, 1, 1 << 16, &s->side_min, err);
    } else if (!strcmp(key, "side_max")) {
        st = int_param(d, v, 1, 1 << 16, &s->side_max, err);
    } else if (!strcmp(key, "padding")) {
        st = int_param(d, v, 0, 1 << 12, &s->pad, err);
    } else if (!strcmp(key, "probability")) {
        st = slim__yt_float(d, v, &s->p, err);
        if (!st && (s->p < 0 || s->p > 1))
            st = slim__yt_error(d, v, err, "probability must be in [0, 1]");
    } else if (!strcmp(key, "max_delta")) {
        st = slim__yt_float(d, v, &s->delta, err);
        if (!st && s->delta < 0)
            st = slim__yt_error(d, v, err, "max_delta must be >= 0");
    } else if (!strcmp(key, "lower") || !strcmp(key, "min")) {
        st = slim__yt_float(d, v, &s->lo, err);
    } else if (!strcmp(key, "upper") || !strcmp(key, "max")) {
        st = slim__yt_float(d, v, &s->hi, err);
    } else if (!strcmp(key, "fast_mode")) {
        st = slim__yt_bool(d, v, &s->fast_mode, err);
    } else if (!strcmp(key, "color_ordering")) {
        const char *t = slim__yt_str(v);
        if (t && !strcmp(t, "random"))
            s->ordering = -1;
        else
            st = int_param(d, v, 0, 3, &s->ordering, err);
    } else if (!strcmp(key, "subtract") || !strcmp(key, "mean")) {
        st = slim__yt_floats(d, v, s->v, 4, &s->nv, err);
    } else if (!strcmp(key, "multiply")) {
        st = slim__yt_floats(d, v, s->mul, 4, &s->nmul, err);
    } else if (!strcmp(key, "divide")) {
        st = slim__yt_floats(d, v, s->mul, 4, &s->nmul, err);
        for (int i = 0; !st && i < s->nmul; i++) {
            if (s->mul[i] == 0)
                st = slim__yt_error(d, v, err, "division by zero");
            else
                s->mul[i] = 1.0 / s->mul[i];
        }
    } else {
        st = slim__yt_error(d, v, err, "internal: unhandled parameter %s", key);
    }
    return st;
}

static slim_status parse_steps(const yt_doc *d, const yt_node *seq, prep_step **out, int *n_out,
                               slim_error *err)
{
    if (seq->kind != YT_SEQ)
        return slim__yt_error(d, seq, err, "expected a list of steps");
    prep_step *steps = calloc((size_t)(seq->n ? seq->n : 1), sizeof *steps);
    if (!steps)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slim_status st = SLIM_OK;
    for (int i = 0; i < seq->n && !st; i++) {
        const yt_node *it = seq->items[i];
        const yt_node *name = it, *params = NULL;
        if (it->kind == YT_MAP) {
            if (it->n != 1) {
                st = slim__yt_error(d, it, err,
                                    "a step is one name with its parameters, e.g. "
                                    "'- resize: {height: 224}'");
                break;
            }
            name = it->items[0];
            params = it->items[1];
            if (params->kind == YT_SCALAR && !params->quoted && !strcmp(params->text, ""))
                params = NULL; /* "- flip:" with nothing after */
            else if (params->kind != YT_MAP) {
                st = slim__yt_error(d, params, err,
                                    "the parameters of a step are a map, e.g. {height: 224}");
                break;
            }
        } else if (it->kind != YT_SCALAR) {
            st = slim__yt_error(d, it, err, "expected a step name or {name: {params}}");
            break;
        }
        const opinfo *oi = NULL;
        for (int k = 0; k < N_OPS; k++)
            if (!strcmp(ops[k].name, name->text))
                oi = &ops[k];
        if (!oi) {
            char known[1024] = "";
            for (int k = 0; k < N_OPS; k++) {
                strcat(known, k ? ", " : "");
                strcat(known, ops[k].name);
            }
            st = slim__yt_error(d, name, err, "unknown step '%s'; known steps: %s", name->text,
                                known);
            break;
        }
        prep_step *s = &steps[i];
        step_defaults(s);
        s->op = oi->op;
        s->line = name->line;
        s->col = name->col;
        if (oi->op == PREP_CLIP || oi->op == PREP_SATURATION || oi->op == PREP_CONTRAST) {
            s->lo = oi->op == PREP_CLIP ? 0.0 : 0.5;
            s->hi = oi->op == PREP_CLIP ? 1.0 : 1.5;
        }
        if (oi->op == PREP_NORMALIZE)
            s->v[0] = 0;
        for (int k = 0; params && k < params->n && !st; k++) {
            const yt_node *key = params->items[2 * k], *val = params->items[2 * k + 1];
            const char *ks = slim__yt_str(key);
            if (!ks || !has_param(oi->params, ks)) {
                st = slim__yt_error(d, key, err, "unknown parameter '%s' of step '%s'%s%s",
                                    ks ? ks : "?", oi->name,
                                    *oi->params ? "; known: " : " (it takes none)", oi->params);
                break;
            }
            st = parse_param(d, s, ks, val, err);
        }
        if (!st && s->op == PREP_ASPECT_RESIZE && (!s->side_min || s->side_max < s->side_min))
            st = slim__yt_error(d, name, err,
                                "aspect_preserving_resize needs side, or side_min <= side_max");
        if (!st && (s->op == PREP_SATURATION || s->op == PREP_CONTRAST) && s->lo > s->hi)
            st = slim__yt_error(d, name, err, "lower must be <= upper");
    }
    if (st) {
        free(steps);
        return st;
    }
    *out = steps;
    *n_out = seq->n;
    return SLIM_OK;
}

slim_status slim__recipe_add_grayscale(slim__recipe *r, bool training, slim_error *err)
{
    prep_step **steps = training ? &r->train : &r->eval;
    int *n = training ? &r->n_train : &r->n_eval;
    prep_step *s = realloc(*steps, (size_t)(*n + 1) * sizeof *s);
    if (!s)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    *steps = s;
    int at = *n;
    for (int i = 0; i < *n; i++)
        if (s[i].op == PREP_NORMALIZE || s[i].op == PREP_SUBTRACT_MEAN ||
            s[i].op == PREP_STANDARDIZE) {
            at = i;
            break;
        }
    memmove(s + at + 1, s + at, (size_t)(*n - at) * sizeof *s);
    memset(&s[at], 0, sizeof s[at]);
    s[at].op = PREP_GRAYSCALE;
    (*n)++;
    return SLIM_OK;
}

void slim__recipe_free(slim__recipe *r)
{
    if (!r)
        return;
    free(r->name);
    free(r->path);
    free(r->image_key);
    free(r->label_key);
    free(r->format_key);
    free(r->bbox_key);
    free(r->train);
    free(r->eval);
    free(r);
}

static char *dup_or(const char *s, const char *def)
{
    return strdup(s ? s : def);
}

slim_status slim__recipe_parse(const char *path, const char *text, slim__recipe **out,
                               slim_error *err)
{
    *out = NULL;
    yt_doc d;
    slim_status st = slim__yt_load(path, text, &d, err);
    if (st)
        return st;
    slim__recipe *r = calloc(1, sizeof *r);
    if (!r) {
        slim__yt_free(&d);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    r->path = strdup(path);
    r->image_size = 224;
    r->channels = 3;
    bool bbox_set = false;
    const yt_node *root = d.root;
    if (!root || root->kind != YT_MAP) {
        st = slim__yt_error(&d, root, err,
                            "a recipe is a map with name, image_size, train and eval");
        goto done;
    }
    static const char *const top[] = {"name", "description", "image_size", "channels",
                                      "keys", "image_shape", "train",      "eval"};
    for (int k = 0; k < root->n && !st; k++) {
        const yt_node *key = root->items[2 * k], *v = root->items[2 * k + 1];
        const char *ks = slim__yt_str(key);
        size_t t;
        for (t = 0; t < sizeof top / sizeof *top; t++)
            if (ks && !strcmp(ks, top[t]))
                break;
        if (t == sizeof top / sizeof *top) {
            st = slim__yt_error(&d, key, err,
                                "unknown key '%s'; known: name, description, "
                                "image_size, channels, keys, image_shape, train, eval",
                                ks ? ks : "?");
            break;
        }
        if (!strcmp(ks, "image_size"))
            st = int_param(&d, v, 1, 1 << 14, &r->image_size, err);
        else if (!strcmp(ks, "channels")) {
            st = int_param(&d, v, 1, 3, &r->channels, err);
            if (!st && r->channels == 2)
                st = slim__yt_error(&d, v, err, "channels must be 1 or 3");
        } else if (!strcmp(ks, "name")) {
            if (!slim__yt_str(v))
                st = slim__yt_error(&d, v, err, "name must be a string");
            else
                r->name = strdup(v->text);
        } else if (!strcmp(ks, "image_shape")) {
            double t3[3];
            int n;
            st = slim__yt_floats(&d, v, t3, 3, &n, err);
            if (!st && n != 3)
                st = slim__yt_error(&d, v, err, "image_shape is [height, width, channels]");
            for (int i = 0; !st && i < 3; i++)
                r->image_shape[i] = (int)t3[i];
        } else if (!strcmp(ks, "keys")) {
            if (v->kind != YT_MAP) {
                st = slim__yt_error(&d, v, err,
                                    "keys is a map {image: ..., label: ..., format: ...}");
                break;
            }
            for (int j = 0; j < v->n && !st; j++) {
                const char *kk = slim__yt_str(v->items[2 * j]),
                           *vv = slim__yt_str(v->items[2 * j + 1]);
                if (!vv)
                    st =
                        slim__yt_error(&d, v->items[2 * j + 1], err, "a key name must be a string");
                else if (kk && !strcmp(kk, "image"))
                    r->image_key = strdup(vv);
                else if (kk && !strcmp(kk, "label"))
                    r->label_key = strdup(vv);
                else if (kk && !strcmp(kk, "format"))
                    r->format_key = strdup(vv);
                else if (kk && !strcmp(kk, "bbox")) {
                    bbox_set = true;
                    r->bbox_key = strcmp(vv, "none") ? strdup(vv) : NULL;
                } else
                    st = slim__yt_error(&d, v->items[2 * j], err,
                                        "unknown key '%s'; known: image, label, format, bbox",
                                        kk ? kk : "?");
            }
        } else if (!strcmp(ks, "train")) {
            st = parse_steps(&d, v, &r->train, &r->n_train, err);
        } else if (!strcmp(ks, "eval")) {
            st = parse_steps(&d, v, &r->eval, &r->n_eval, err);
        }
    }
    if (!st && !r->train && !r->eval)
        st = slim__yt_error(&d, root, err, "a recipe needs a train or an eval section");
done:
    if (!st) {
        if (!r->name) {
            const char *b = strrchr(path, '/');
            b = b ? b + 1 : path;
            r->name = strndup(b, strcspn(b, "."));
        }
        r->image_key = r->image_key ? r->image_key : dup_or(NULL, "image/encoded");
        r->label_key = r->label_key ? r->label_key : dup_or(NULL, "image/class/label");
        r->format_key = r->format_key ? r->format_key : dup_or(NULL, "image/format");
        if (!bbox_set)
            r->bbox_key = dup_or(NULL, "image/object/bbox");
    }
    slim__yt_free(&d);
    if (st) {
        slim__recipe_free(r);
        return st;
    }
    *out = r;
    return SLIM_OK;
}

static bool readable(const char *p)
{
    return access(p, R_OK) == 0;
}

slim_status slim__recipe_load(const char *name, const char *dir, slim__recipe **out,
                              slim_error *err)
{
    size_t n = strlen(name);
    if (strchr(name, '/') || (n > 5 && !strcmp(name + n - 5, ".yaml")))
        return slim__recipe_parse(name, NULL, out, err);
    char path[1024];
    const char *dirs[4] = {dir, getenv("SLIM_PIPELINES"), SLIM_SOURCE_PIPELINES,
                           SLIM_INSTALLED_PIPELINES};
    for (int i = 0; i < 4; i++) {
        if (!dirs[i] || !*dirs[i])
            continue;
        snprintf(path, sizeof path, "%s/%s.yaml", dirs[i], name);
        if (readable(path))
            return slim__recipe_parse(path, NULL, out, err);
    }
    return slim__error(err, SLIM_ENOTFOUND,
                       "no preprocessing recipe '%s' (looked for %s.yaml in %s%s%s%s%s); recipes "
                       "are inception, vgg, cifarnet, lenet, torchvision or a path to a YAML file",
                       name, name, dir ? dir : "", dir ? ", " : "",
                       getenv("SLIM_PIPELINES") ? "$SLIM_PIPELINES, " : "",
                       SLIM_SOURCE_PIPELINES ", ", SLIM_INSTALLED_PIPELINES);
}

/* ---- compile a section ------------------------------------------------- */

static bool is_geometry(prep_op op)
{
    switch (op) {
    case PREP_CENTRAL_CROP:
    case PREP_DISTORTED_BBOX_CROP:
    case PREP_RANDOM_CROP:
    case PREP_CENTRAL_CROP_TO:
    case PREP_RESIZE:
    case PREP_ASPECT_RESIZE:
    case PREP_CROP_OR_PAD:
    case PREP_PAD:
    case PREP_FLIP: return true;
    default: return false;
    }
}

slim_status slim__prep_init(slim__prep *p, const slim__recipe *r, bool training, int out_h,
                            int out_w, int channels, bool roi, bool dct, slim_error *err)
{
    memset(p, 0, sizeof *p);
    p->recipe = r;
    p->steps = training ? r->train : r->eval;
    p->n = training ? r->n_train : r->n_eval;
    if (!p->steps) {
        /* A recipe with one section uses it for both (lenet's is the same). */
        p->steps = training ? r->eval : r->train;
        p->n = training ? r->n_eval : r->n_train;
    }
    p->out_h = out_h > 0 ? out_h : r->image_size;
    p->out_w = out_w > 0 ? out_w : r->image_size;
    p->channels = channels > 0 ? channels : r->channels;
    p->roi = roi;
    p->dct = dct;
    if (p->channels != 1 && p->channels != 3)
        return slim__error(err, SLIM_EINVAL, "%s: channels must be 1 or 3 (got %d)", r->path,
                           p->channels);
    /* Geometry first: after a pixel step other than a pure scaling, no crop,
     * pad, resize or flip (the executor resamples once, then runs pixel passes). */
    int resizes = 0;
    bool nonscale = false;
    for (int i = 0; i < p->n; i++) {
        const prep_step *s = &p->steps[i];
        if (s->op == PREP_DECODE && i != 0)
            return slim__error(err, SLIM_EINVAL, "%s:%d:%d: decode must be the first step", r->path,
                               s->line, s->col);
        if (s->op == PREP_RESIZE || s->op == PREP_ASPECT_RESIZE) {
            if (++resizes > 1)
                return slim__error(err, SLIM_EUNSUPPORTED,
                                   "%s:%d:%d: only one resize step per recipe section is supported",
                                   r->path, s->line, s->col);
        }
        if (is_geometry(s->op) && nonscale)
            return slim__error(err, SLIM_EUNSUPPORTED,
                               "%s:%d:%d: %s after a pixel step: put crops, pads, resizes and "
                               "flips before color and normalization steps",
                               r->path, s->line, s->col, slim__prep_op_name(s->op));
        /* TF's adjust_saturation and adjust_hue need RGB: so do they here (on
         * one channel they would read and write three floats a pixel). */
        if (p->channels != 3 &&
            (s->op == PREP_SATURATION || s->op == PREP_HUE || s->op == PREP_DISTORT_COLOR))
            return slim__error(err, SLIM_EINVAL,
                               "%s:%d:%d: %s needs 3 channels (RGB), but the images here have %d "
                               "(the model's input or the recipe's channels); drop the step or "
                               "use a 3-channel recipe and model",
                               r->path, s->line, s->col, slim__prep_op_name(s->op), p->channels);
        /* Per-channel values must match the channels (TF's _mean_image_subtraction). */
        if ((s->op == PREP_SUBTRACT_MEAN || s->op == PREP_NORMALIZE) &&
            ((s->nv > 1 && s->nv != p->channels) || (s->nmul > 1 && s->nmul != p->channels)))
            return slim__error(err, SLIM_EINVAL,
                               "%s:%d:%d: %s has %d per-channel values, but the images here have "
                               "%d channels",
                               r->path, s->line, s->col, slim__prep_op_name(s->op),
                               s->nv > 1 && s->nv != p->channels ? s->nv : s->nmul, p->channels);
        if (s->op == PREP_DISTORTED_BBOX_CROP)
            p->wants_boxes = r->bbox_key != NULL;
        if (!is_geometry(s->op) && s->op != PREP_DECODE && s->op != PREP_CONVERT_TO_FLOAT &&
            s->op != PREP_TO_FLOAT)
            nonscale = true;
    }
    return SLIM_OK;
}
