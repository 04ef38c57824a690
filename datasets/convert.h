/* datasets/convert.h - converters to TFRecord shards of tf.train.Example
 * (what TF-Slim's download_and_convert_*.py and Inception's
 * build_imagenet_data.py write), used by `slimrun convert`. */
#ifndef SLIM_DATASETS_CONVERT_H
#define SLIM_DATASETS_CONVERT_H

#include <slim/data.h>

/* Progress: called from one thread at most a few times a second and at the end. */
typedef void (*convert_progress_fn)(int shards_done, int shards, int64_t images_done,
                                    int64_t images, int64_t skipped, void *user);

typedef struct convert_opts {
    const char *input_dir;      /* folder: class folders of images (or images, with image_labels) */
    const char *output_dir;     /* dataset_dir */
    const char *dataset_name;   /* output names NAME_SPLIT_00000-of-00005.tfrecord; NULL:
                                   SPLIT-00000-of-00005 */
    const char *split;          /* default "train" */
    int shards;                 /* > 0: this many shards */
    int64_t size_per_record;    /* shard size in bytes when shards == 0 (default 50 MB) */
    int validation_size;        /* > 0: also write a "validation" split of this many images (TF-Slim
                                   flowers) */
    const char *synsets;        /* ImageNet synset list: label = 1 + line index (0 = background) */
    const char *metadata;       /* imagenet_metadata.txt: synset -> human-readable text */
    const char *image_labels;   /* flat folder: one synset per sorted image (ImageNet validation) */
    const char *bounding_boxes; /* CSV "file,xmin,ymin,xmax,ymax" per box (ImageNet's
                                 * process_bounding_boxes.py): the image/object/bbox lists */
    int num_threads;
    uint64_t seed; /* shuffle of the images (default 0, as TF-Slim's random.seed(0)) */
    bool no_shuffle;
    bool verify_decode;   /* decode every image fully (default: header check) */
    bool keep_jpeg_bytes; /* store JPEGs as they are (default: losslessly transcoded with a restart
                             marker after every MCU, so random crops decode only what they need) */
    bool overwrite;       /* discard a previous conversion with another plan */
    slim_on_error on_error;
    slim_compression compression;
    /* IDX / CIFAR: */
    const char *image_format; /* "png" (TF-Slim) or "raw" */
    convert_progress_fn progress;
    void *progress_user;
} convert_opts;

typedef struct convert_result {
    int64_t images;  /* written */
    int64_t skipped; /* unreadable images (on_error skip) */
    int shards, shards_resumed;
    int num_classes;
    int64_t indexed,
        kept; /* --input_records: JPEGs made restart-indexed, records kept as they are */
    char first_skip[1024];
} convert_result;

slim_status slim__convert_folder(const convert_opts *o, convert_result *res, slim_error *err);
/* mnist / fashion_mnist: train-images-idx3-ubyte(.gz) etc. in input_dir. */
slim_status slim__convert_idx(const char *name, const convert_opts *o, convert_result *res,
                              slim_error *err);
/* cifar10 / cifar100: the binary version (data_batch_N.bin / train.bin). */
slim_status slim__convert_cifar(const char *name, const convert_opts *o, convert_result *res,
                                slim_error *err);

/* TFRecord shards of tf.train.Example -> the same shards (names, records,
 * features, order) in o->output_dir with each JPEG under image_key (default
 * image/encoded) restart-indexed; o->num_threads shards at a time, shards
 * already in the output kept, labels.txt and dataset.yaml copied. A corrupt
 * record fails (names the file, record and byte), or with SLIM_ON_ERROR_SKIP
 * ends its file there (counted in skipped); a record whose image cannot be
 * transcoded is kept as it is. */
slim_status slim__convert_records(const char *const *files, int n, const char *image_key,
                                  const convert_opts *o, convert_result *res, slim_error *err);

/* Shared helpers (convert.c). */
/* A shard written to tmp: with st an error, dropped (returns st); else
 * closed (flushed, fsynced) and renamed to final. */
slim_status slim__shard_commit(slim_tfrecord_writer *w, slim_status st, const char *tmp,
                               const char *final, slim_error *err);
char **slim__read_lines(const char *path, int *n); /* non-empty lines, trimmed; NULL on failure */
void slim__free_lines(char **v, int n);
slim_status slim__write_labels(const char *dir, const char *const *names, int n, int first,
                               slim_error *err); /* DIR/labels.txt, "index:name" */

#endif
