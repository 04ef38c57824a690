/* datasets/dataset.c - dataset descriptions as TF-Slim's dataset factories give
 * them (datasets/{mnist,cifar10,imagenet,flowers}.py: SPLITS_TO_SIZES,
 * _NUM_CLASSES, _FILE_PATTERN), plus Fashion-MNIST and CIFAR-100 in the same
 * layout, and generic folders of shards described by dataset.yaml or labels.txt. */
#include "datasets/dataset.h"
#include "datasets/tfrecord.h"
#include "datasets/yamltree.h"
#include "core/error.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef struct known {
    const char *name;
    const char *pattern; /* %s = split */
    const char *splits[3];
    int64_t sizes[3];
    int num_classes, offset_hint;
    int h, w, c;
    const char *recipe;
} known;

static const known known_sets[] = {
    {"mnist", "mnist_%s.tfrecord", {"train", "test"}, {60000, 10000}, 10, 0, 28, 28, 1, "lenet"},
    {"fashion_mnist",
     "fashion_mnist_%s.tfrecord",
     {"train", "test"},
     {60000, 10000},
     10,
     0,
     28,
     28,
     1,
     "lenet"},
    {"cifar10",
     "cifar10_%s.tfrecord",
     {"train", "test"},
     {50000, 10000},
     10,
     0,
     32,
     32,
     3,
     "cifarnet"},
    {"cifar100",
     "cifar100_%s.tfrecord",
     {"train", "test"},
     {50000, 10000},
     100,
     0,
     32,
     32,
     3,
     "cifarnet"},
    {"imagenet", "%s-*", {"train", "validation"}, {1281167, 50000}, 1001, 1, 0, 0, 3, "inception"},
    {"flowers",
     "flowers_%s_*.tfrecord",
     {"train", "validation"},
     {3320, 350},
     5,
     0,
     0,
     0,
     3,
     "inception"},
};

struct slim_dataset {
    slim_dataset_info info;
    char *name, *split, *recipe;
    char **files;
    char **labels;
    int n_labels;
};

void slim_labels_free(char **names, int n)
{
    if (!names)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

slim_status slim_labels_read(const char *path, char ***names, int *n, slim_error *err)
{
    *names = NULL;
    *n = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return slim__data_error(err, errno == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO, path,
                                "%s: cannot open: %s", path, strerror(errno));
    char **v = NULL;
    int cap = 0, count = 0, lineno = 0;
    char line[4096];
    slim_status st = SLIM_OK;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0])
            continue;
        /* TF-Slim's dataset_utils.read_label_file: "index:name". */
        char *colon = strchr(line, ':'), *end;
        long idx = colon ? strtol(line, &end, 10) : -1;
        if (!colon || end != colon || idx < 0 || idx > 1000000) {
            st = slim__error(err, SLIM_EPARSE, "%s:%d:1: expected 'index:name', got '%.60s'", path,
                             lineno, line);
            if (err) {
                snprintf(err->file, sizeof err->file, "%s", path);
                err->line = lineno;
                err->col = 1;
            }
            break;
        }
        if (idx >= cap) {
            int nc = cap ? cap : 16;
            while (nc <= idx)
                nc *= 2;
            char **nv = realloc(v, (size_t)nc * sizeof *nv);
            if (!nv) {
                st = slim__error(err, SLIM_ENOMEM, "out of memory");
                break;
            }
            memset(nv + cap, 0, (size_t)(nc - cap) * sizeof *nv);
            v = nv;
            cap = nc;
        }
        free(v[idx]);
        v[idx] = strdup(colon + 1);
        if (idx + 1 > count)
            count = (int)idx + 1;
    }
    fclose(f);
    if (st) {
        slim_labels_free(v, cap);
        return st;
    }
    *names = v;
    *n = count;
    return SLIM_OK;
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Files matching pattern (relative to dir unless absolute), sorted. */
static slim_status glob_files(const char *dir, const char *pattern, char ***out, int *n,
                              slim_error *err)
{
    char full[2048];
    if (pattern[0] == '/' || !dir)
        snprintf(full, sizeof full, "%s", pattern);
    else
        snprintf(full, sizeof full, "%s/%s", dir, pattern);
    glob_t g;
    int r = glob(full, 0, NULL, &g);
    *out = NULL;
    *n = 0;
    if (r == GLOB_NOMATCH)
        return SLIM_OK;
    if (r != 0)
        return slim__error(err, SLIM_EIO, "%s: glob failed", full);
    char **v = calloc(g.gl_pathc + 1, sizeof *v);
    if (!v) {
        globfree(&g);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < g.gl_pathc; i++)
        v[i] = strdup(g.gl_pathv[i]);
    *n = (int)g.gl_pathc;
    globfree(&g);
    qsort(v, (size_t)*n, sizeof *v, cmpstr);
    *out = v;
    return SLIM_OK;
}

void slim_dataset_free(slim_dataset *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->info.n_files; i++)
        free(d->files[i]);
    free(d->files);
    slim_labels_free(d->labels, d->n_labels);
    free(d->name);
    free(d->split);
    free(d->recipe);
    free(d);
}

const slim_dataset_info *slim_dataset_get_info(const slim_dataset *d)
{
    return &d->info;
}

static void finish_info(slim_dataset *d)
{
    d->info.name = d->name;
    d->info.split = d->split;
    d->info.files = (const char *const *)d->files;
    d->info.default_recipe = d->recipe;
    if (d->labels && d->n_labels > 0) {
        /* label_names has num_classes entries. */
        if (d->info.num_classes > d->n_labels) {
            char **nv = realloc(d->labels, (size_t)d->info.num_classes * sizeof *nv);
            if (nv) {
                memset(nv + d->n_labels, 0,
                       (size_t)(d->info.num_classes - d->n_labels) * sizeof *nv);
                d->labels = nv;
                d->n_labels = d->info.num_classes;
            }
        }
        d->info.label_names = (const char *const *)d->labels;
    }
}

/* dataset.yaml:
 *   name: flowers
 *   num_classes: 5
 *   recipe: inception
 *   splits:
 *     train: {pattern: "flowers_train_*.tfrecord", size: 3320}
 *     validation: {pattern: "flowers_validation_*.tfrecord", size: 350} */
static slim_status from_yaml(slim_dataset *d, const char *path, const char *dir, const char *split,
                             slim_error *err)
{
    yt_doc doc;
    slim_status st = slim__yt_load(path, NULL, &doc, err);
    if (st)
        return st;
    const yt_node *root = doc.root;
    if (!root || root->kind != YT_MAP) {
        st = slim__yt_error(&doc, root, err, "dataset.yaml is a map: name, num_classes, splits");
        goto out;
    }
    for (int k = 0; k < root->n && !st; k++) {
        const char *key = slim__yt_str(root->items[2 * k]);
        const yt_node *v = root->items[2 * k + 1];
        if (!key) {
            st = slim__yt_error(&doc, root->items[2 * k], err, "expected a key");
        } else if (!strcmp(key, "name")) {
            if (slim__yt_str(v)) {
                free(d->name);
                d->name = strdup(v->text);
            }
        } else if (!strcmp(key, "num_classes")) {
            int64_t x;
            st = slim__yt_int(&doc, v, &x, err);
            if (!st && (x < 1 || x > INT_MAX))
                st = slim__yt_error(&doc, v, err, "num_classes must be from 1 to %d, got %lld",
                                    INT_MAX, (long long)x);
            d->info.num_classes = st ? 0 : (int)x;
        } else if (!strcmp(key, "labels_offset")) {
            int64_t x;
            st = slim__yt_int(&doc, v, &x, err);
            if (!st && (x < 0 || x > INT_MAX))
                st = slim__yt_error(&doc, v, err, "labels_offset must be from 0 to %d, got %lld",
                                    INT_MAX, (long long)x);
            d->info.label_offset_hint = st ? 0 : (int)x;
        } else if (!strcmp(key, "recipe")) {
            if (slim__yt_str(v)) {
                free(d->recipe);
                d->recipe = strdup(v->text);
            }
        } else if (!strcmp(key, "image_size")) {
            double t[3];
            int n;
            st = slim__yt_floats(&doc, v, t, 3, &n, err);
            for (int i = 0; !st && i < 3; i++)
                if (n != 3 || !(t[i] >= 0 && t[i] <= 65536) || t[i] != (int)t[i])
                    st = slim__yt_error(&doc, v, err,
                                        "image_size is [height, width, channels], whole numbers "
                                        "from 0 (any) to 65536");
            if (!st) {
                d->info.image_height = (int)t[0];
                d->info.image_width = (int)t[1];
                d->info.channels = (int)t[2];
            }
        } else if (!strcmp(key, "splits")) {
            const yt_node *sp = slim__yt_get(v, split);
            if (v->kind != YT_MAP) {
                st = slim__yt_error(&doc, v, err,
                                    "splits is a map of split name -> {pattern, size}");
            } else if (!sp) {
                st = slim__yt_error(&doc, v, err, "no split '%s' in this dataset", split);
            } else {
                const yt_node *pat = slim__yt_get(sp, "pattern"), *size = slim__yt_get(sp, "size");
                if (!slim__yt_str(pat)) {
                    st = slim__yt_error(&doc, sp, err, "split '%s' needs a pattern", split);
                } else {
                    int n;
                    st = glob_files(dir, pat->text, &d->files, &n, err);
                    d->info.n_files = n;
                }
                if (!st && size)
                    st = slim__yt_int(&doc, size, &d->info.num_examples, err);
                if (!st && size && d->info.num_examples < 0)
                    st = slim__yt_error(&doc, size, err, "size must be 0 or more, got %lld",
                                        (long long)d->info.num_examples);
            }
        } else if (strcmp(key, "description") != 0) {
            st = slim__yt_error(&doc, root->items[2 * k], err,
                                "unknown key '%s'; known: name, description, num_classes, "
                                "labels_offset, recipe, image_size, splits",
                                key);
        }
    }
out:
    slim__yt_free(&doc);
    return st;
}

slim_status slim_dataset_open(const char *name, const char *dir, const char *split,
                              slim_dataset **out, slim_error *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return slim__error(err, SLIM_EINVAL, "a dataset needs a dataset_dir");
    if (!split || !*split)
        split = "train";
    slim_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    d->split = strdup(split);
    slim_status st = SLIM_OK;
    const known *k = NULL;
    for (size_t i = 0; name && i < sizeof known_sets / sizeof *known_sets; i++)
        if (!strcmp(name, known_sets[i].name) ||
            (!strcmp(known_sets[i].name, "fashion_mnist") && !strcmp(name, "fashion-mnist")))
            k = &known_sets[i];
    char path[2048];
    if (k) {
        int si = -1;
        for (int i = 0; i < 3 && k->splits[i]; i++)
            if (!strcmp(k->splits[i], split))
                si = i;
        if (si < 0) {
            st = slim__error(err, SLIM_EINVAL, "dataset %s has no split '%s' (splits: %s, %s)",
                             k->name, split, k->splits[0], k->splits[1]);
            goto done;
        }
        d->name = strdup(k->name);
        d->recipe = strdup(k->recipe);
        d->info.num_examples = k->sizes[si];
        d->info.num_classes = k->num_classes;
        d->info.label_offset_hint = k->offset_hint;
        d->info.image_height = k->h;
        d->info.image_width = k->w;
        d->info.channels = k->c;
        char pat[256];
        snprintf(pat, sizeof pat, k->pattern, split);
        int n;
        st = glob_files(dir, pat, &d->files, &n, err);
        d->info.n_files = n;
        if (!st && n == 0)
            st = slim__error(err, SLIM_ENOTFOUND,
                             "dataset %s, split %s: no files match %s/%s (convert the data first: "
                             "slimrun convert --dataset_name=%s --dataset_dir=%s ...)",
                             k->name, split, dir, pat, k->name, dir);
    } else {
        d->name = strdup(name && *name ? name : "folder");
        snprintf(path, sizeof path, "%s/dataset.yaml", dir);
        if (access(path, R_OK) == 0) {
            st = from_yaml(d, path, dir, split, err);
        } else {
            /* TF-Slim/ImageNet shard names: SPLIT-00000-of-01024, or *SPLIT*.tfrecord. */
            char pat[256];
            int n;
            snprintf(pat, sizeof pat, "%s-*", split);
            st = glob_files(dir, pat, &d->files, &n, err);
            if (!st && n == 0) {
                snprintf(pat, sizeof pat, "*%s*.tfrecord*", split);
                st = glob_files(dir, pat, &d->files, &n, err);
            }
            d->info.n_files = n;
        }
        if (!st && d->info.n_files == 0)
            st = slim__error(err, SLIM_ENOTFOUND,
                             "%s: no TFRecord files for split '%s' (looked for dataset.yaml, %s-*, "
                             "*%s*.tfrecord*)",
                             dir, split, split, split);
        if (!d->recipe)
            d->recipe = strdup("inception");
    }
    if (st)
        goto done;
    snprintf(path, sizeof path, "%s/labels.txt", dir);
    if (access(path, R_OK) == 0) {
        st = slim_labels_read(path, &d->labels, &d->n_labels, err);
        if (!st && d->info.num_classes == 0)
            d->info.num_classes = d->n_labels;
    }
    if (!st)
        finish_info(d);
done:
    if (st) {
        slim_dataset_free(d);
        return st;
    }
    *out = d;
    return SLIM_OK;
}

slim_status slim__dataset_from_files(const char *pattern, int num_classes, slim_dataset **out,
                                     slim_error *err)
{
    *out = NULL;
    slim_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    d->name = strdup("files");
    d->split = strdup("");
    d->recipe = strdup("inception");
    d->info.num_classes = num_classes;
    /* Comma-separated globs. */
    char *copy = strdup(pattern), *save = NULL;
    slim_status st = SLIM_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        char **v;
        int n;
        st = glob_files(NULL, tok, &v, &n, err);
        if (st)
            break;
        if (n == 0) {
            st = slim__error(err, SLIM_ENOTFOUND, "no files match '%s'", tok);
            break;
        }
        char **nv = realloc(d->files, (size_t)(d->info.n_files + n + 1) * sizeof *nv);
        if (!nv) {
            slim_labels_free(v, n);
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        d->files = nv;
        memcpy(d->files + d->info.n_files, v, (size_t)n * sizeof *v);
        d->info.n_files += n;
        free(v);
    }
    free(copy);
    if (!st) {
        /* A labels.txt beside the first file names the classes. */
        char path[2048];
        snprintf(path, sizeof path, "%s", d->files[0]);
        char *slash = strrchr(path, '/');
        if (slash)
            strcpy(slash + 1, "labels.txt");
        else
            strcpy(path, "labels.txt");
        if (access(path, R_OK) == 0) {
            st = slim_labels_read(path, &d->labels, &d->n_labels, err);
            if (!st && d->info.num_classes == 0)
                d->info.num_classes = d->n_labels;
        }
    }
    if (!st)
        finish_info(d);
    if (st) {
        slim_dataset_free(d);
        return st;
    }
    *out = d;
    return SLIM_OK;
}

const char *slim_recipe_for_model(const char *m)
{
    /* TF-Slim preprocessing/preprocessing_factory.py. */
    static const struct {
        const char *prefix, *recipe;
    } map[] = {{"cifarnet", "cifarnet"},   {"lenet", "lenet"},      {"inception", "inception"},
               {"mobilenet", "inception"}, {"nasnet", "inception"}, {"pnasnet", "inception"},
               {"resnet_v2", "inception"}, {"resnet_v1", "vgg"},    {"vgg", "vgg"},
               {"alexnet", "vgg"},         {"overfeat", "vgg"},     {"i3d", "inception"}};
    if (!m)
        return NULL;
    /* Case-blind: zoo files name their scope as TF-Slim's nets do ("LeNet",
     * "CifarNet", "InceptionV3", "MobilenetV1", "resnet_v1_50"). */
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strncasecmp(m, map[i].prefix, strlen(map[i].prefix)))
            return map[i].recipe;
    return NULL;
}
