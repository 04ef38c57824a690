/*
 * tests/fuzz/dataset.c - any bytes as a dataset folder's description: its
 * dataset.yaml or its labels.txt, opened as `--dataset_dir` is (beside three
 * empty shards, train-00000-of-00002, train-00001-of-00002 and
 * flowers_validation_00000.tfrecord).
 *
 * data[0] is the options, the rest the file:
 *   bit 0     0: dataset.yaml, 1: labels.txt
 *   bits 1-2  the split asked for: train, validation, test, none (the default)
 *   bit 3     the other file too (a fixed labels.txt beside the fuzzed
 *             dataset.yaml; a fixed dataset.yaml beside the fuzzed labels.txt)
 * Properties: an error says why; an opened dataset's files exist, are sorted
 * and as many as it says; its class names, when given, are num_classes
 * entries; a labels file read, written back as index:name lines and read
 * again gives the same names.
 */
#include "tests/fuzz/fuzz.h"

#include <slim/data.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char fixed_yaml[] = "name: fixed\nnum_classes: 3\nrecipe: cifarnet\n"
                                 "splits:\n  train: {pattern: \"train-*\", size: 10}\n"
                                 "  validation: {pattern: \"flowers_validation_*\", size: 2}\n";
static const char fixed_labels[] = "0:zero\n1:one\n2:two\n";

static void labels_round_trip(const char *path)
{
    char **names;
    int n;
    slim_error err = {0};
    if (slim_labels_read(path, &names, &n, &err)) {
        FUZZ_CHECK(strstr(err.msg, path), "labels errors name the file: %s", err.msg);
        return;
    }
    FUZZ_CHECK(n >= 0 && n <= 1000001, "%d labels", n);
    char again[700];
    snprintf(again, sizeof again, "%s.again", path);
    FILE *f = fopen(again, "w");
    int written = 0;
    for (int i = 0; i < n; i++)
        if (names[i] && !strpbrk(names[i], "\r\n")) {
            fprintf(f, "%d:%s\n", i, names[i]);
            written = i + 1;
        }
    fclose(f);
    char **back;
    int nb;
    FUZZ_CHECK(slim_labels_read(again, &back, &nb, &err) == SLIM_OK, "written back: %s", err.msg);
    FUZZ_CHECK(nb == written, "%d names written back, %d read", written, nb);
    for (int i = 0; i < nb; i++)
        FUZZ_CHECK((!names[i] && !back[i]) || (names[i] && back[i] && !strcmp(names[i], back[i])),
                   "name %d reads back", i);
    slim_labels_free(back, nb);
    slim_labels_free(names, n);
}

static int one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    fuzz_clear_tmpdir();
    char dir[512], path[600], other[600];
    fuzz_path("ds", dir, sizeof dir);
    mkdir(dir, 0700);
    static const char *const shards[] = {"train-00000-of-00002", "train-00001-of-00002",
                                         "flowers_validation_00000.tfrecord"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, shards[i]);
        fuzz_write_file(path, "", 0);
    }
    bool labels = opt & 1;
    snprintf(path, sizeof path, "%s/%s", dir, labels ? "labels.txt" : "dataset.yaml");
    fuzz_write_file(path, data + 1, size - 1);
    if (opt & 8) {
        snprintf(other, sizeof other, "%s/%s", dir, labels ? "dataset.yaml" : "labels.txt");
        if (labels)
            fuzz_write_file(other, fixed_yaml, sizeof fixed_yaml - 1);
        else
            fuzz_write_file(other, fixed_labels, sizeof fixed_labels - 1);
    }
    if (labels)
        labels_round_trip(path);

    static const char *const splits[] = {"train", "validation", "test", NULL};
    slim_dataset *d;
    slim_error err = {0};
    if (slim_dataset_open(NULL, dir, splits[(opt >> 1) & 3], &d, &err)) {
        FUZZ_CHECK(err.msg[0], "a failed open says why");
        return 0;
    }
    const slim_dataset_info *info = slim_dataset_get_info(d);
    FUZZ_CHECK(info->n_files >= 0 && info->num_examples >= 0, "%d files, %lld examples",
               info->n_files, (long long)info->num_examples);
    for (int i = 0; i < info->n_files; i++) {
        FUZZ_CHECK(info->files[i] && access(info->files[i], F_OK) == 0, "file %d exists", i);
        FUZZ_CHECK(i == 0 || strcmp(info->files[i - 1], info->files[i]) <= 0, "files sorted");
    }
    if (info->label_names)
        for (int i = 0; i < info->num_classes; i++)
            (void)(info->label_names[i] ? info->label_names[i][0] : 0);
    FUZZ_CHECK(info->default_recipe && info->name, "a recipe and a name");
    slim_dataset_free(d);
    return 0;
}

static void seeds(fuzz_seeds *s)
{
    static const char yaml[] =
        "name: flowers\ndescription: five kinds\nnum_classes: 5\nlabels_offset: 0\n"
        "recipe: inception\nimage_size: [0, 0, 3]\n"
        "splits:\n  train: {pattern: \"train-*\", size: 3320}\n"
        "  validation: {pattern: \"flowers_validation_*.tfrecord\", size: 350}\n";
    for (int opt = 0; opt < 16; opt += 2)
        fuzz_seed_opt(s, (uint8_t)opt, yaml, sizeof yaml - 1);
    fuzz_seed_opt(s, 0, fixed_yaml, sizeof fixed_yaml - 1);
    for (int opt = 1; opt < 16; opt += 2) {
        fuzz_seed_opt(s, (uint8_t)opt, fixed_labels, sizeof fixed_labels - 1);
        fuzz_seed_opt(s, (uint8_t)opt, "0:background\r\n1:tench, Tinca tinca\n\n1000:last\n", 46);
    }
    /* the ImageNet synset list, cut short */
    char path[1024];
    size_t n;
    uint8_t *b = fuzz_read_file(
        fuzz_shared("imagenet-meta/imagenet_lsvrc_2015_synsets.txt", path, sizeof path), &n);
    if (b) {
        fuzz_seed_opt(s, 1, b, n > 400 ? 400 : n);
        free(b);
    }
}

FUZZ_TARGET(dataset, .one = one, .seeds = seeds, .max_len = 4096)
