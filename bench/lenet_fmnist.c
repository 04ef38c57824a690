/*
 * bench/lenet_fmnist.c - train TF-Slim's LeNet on Fashion-MNIST through the C
 * API and report test accuracy per epoch, seconds per epoch and images/s.
 *
 * This is the quick start's main job until `slimrun train` exists, and the
 * Fashion-MNIST benchmark run side by side with ../shared/anchors/torch_fmnist.py
 * (same net, optimizer, batch, schedule).
 *
 * LeNet as in TF-Slim nets/lenet.py: conv 5x5x32 SAME + relu, max_pool 2x2/2,
 * conv 5x5x64 SAME + relu, max_pool 2x2/2, flatten, fc 1024 + relu,
 * dropout (keep 0.5), fc num_classes. Weights truncated normal (stddev 0.1),
 * biases zero (lenet_arg_scope). Inputs scaled to [0, 1].
 */
#include <slim/slim.h>

#include "bench/benchutil.h"
#include "datasets/idx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct opts {
    const char *dataset_dir;
    int epochs, batch, threads;
    double lr, momentum;
    uint64_t seed;
    const char *json; /* JSON lines per epoch, or NULL */
    int log_every;
} opts;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const slim_error *err)
{
    fprintf(stderr, "lenet_fmnist: %s: %s\n", what, err->msg);
    exit(1);
}

static slim_tid weights(slim_graph *g, const char *name, int rank, const int64_t *dim, bool bias)
{
    slim_error err = {0};
    slim_shape s = slim_shape_make(rank, dim);
    slim_init init = {.kind = bias ? SLIM_INIT_ZEROS : SLIM_INIT_TRUNCATED_NORMAL, .stddev = 0.1};
    slim_tid t;
    if (slim_graph_param(g, name, &s, &init, NULL, &t, &err) != SLIM_OK)
        die("build", &err);
    return t;
}

static slim_graph *lenet(slim_registry *reg, int batch, int classes)
{
    slim_error err = {0};
    slim_graph *g;
    if (slim_graph_new(reg, &g, &err) != SLIM_OK)
        die("graph", &err);
    slim_tid x, y;
    slim_shape xs = {4, {batch, 28, 28, 1}}, ys = {1, {batch}};
    slim_graph_input(g, "images", SLIM_F32, &xs, &x, &err);
    slim_graph_input(g, "labels", SLIM_I32, &ys, &y, &err);
    slim_tid h;
    h = bench_layer(
        "lenet_fmnist", g, "conv2d", "LeNet/conv1",
        (slim_tid[]){x, weights(g, "LeNet/conv1/weights", 4, (int64_t[]){5, 5, 1, 32}, false),
                     weights(g, "LeNet/conv1/biases", 1, (int64_t[]){32}, true)},
        3, "padding=SAME");
    h = bench_layer("lenet_fmnist", g, "relu", "LeNet/conv1/Relu", &h, 1, NULL);
    h = bench_layer("lenet_fmnist", g, "max_pool", "LeNet/pool1", &h, 1,
                    "ksize=[2,2]; strides=[2,2]; padding=VALID");
    h = bench_layer(
        "lenet_fmnist", g, "conv2d", "LeNet/conv2",
        (slim_tid[]){h, weights(g, "LeNet/conv2/weights", 4, (int64_t[]){5, 5, 32, 64}, false),
                     weights(g, "LeNet/conv2/biases", 1, (int64_t[]){64}, true)},
        3, "padding=SAME");
    h = bench_layer("lenet_fmnist", g, "relu", "LeNet/conv2/Relu", &h, 1, NULL);
    h = bench_layer("lenet_fmnist", g, "max_pool", "LeNet/pool2", &h, 1,
                    "ksize=[2,2]; strides=[2,2]; padding=VALID");
    h = bench_layer("lenet_fmnist", g, "flatten", "LeNet/Flatten", &h, 1, NULL);
    h = bench_layer(
        "lenet_fmnist", g, "fully_connected", "LeNet/fc3",
        (slim_tid[]){h, weights(g, "LeNet/fc3/weights", 2, (int64_t[]){7 * 7 * 64, 1024}, false),
                     weights(g, "LeNet/fc3/biases", 1, (int64_t[]){1024}, true)},
        3, NULL);
    h = bench_layer("lenet_fmnist", g, "relu", "LeNet/fc3/Relu", &h, 1, NULL);
    h = bench_layer("lenet_fmnist", g, "dropout", "LeNet/dropout3", &h, 1, "keep_prob=0.5");
    slim_tid logits = bench_layer(
        "lenet_fmnist", g, "fully_connected", "LeNet/fc4",
        (slim_tid[]){h, weights(g, "LeNet/fc4/weights", 2, (int64_t[]){1024, classes}, false),
                     weights(g, "LeNet/fc4/biases", 1, (int64_t[]){classes}, true)},
        3, NULL);
    slim_tid loss = bench_layer("lenet_fmnist", g, "softmax_cross_entropy", "loss",
                                (slim_tid[]){logits, y}, 2, NULL);
    slim_tid acc =
        bench_layer("lenet_fmnist", g, "in_top_k", "accuracy", (slim_tid[]){logits, y}, 2, "k=1");
    if (slim_graph_set_loss(g, loss, &err) || slim_graph_mark_output(g, logits, &err) ||
        slim_graph_mark_output(g, acc, &err))
        die("build", &err);
    return g;
}

static void load(const char *dir, const char *stem, slim_idx *images, slim_idx *labels)
{
    slim_error err = {0};
    char path[1024];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, stem);
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, stem);
    if (slim_idx_read(path, images, &err) != SLIM_OK)
        die("read images", &err);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, stem);
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, stem);
    if (slim_idx_read(path, labels, &err) != SLIM_OK)
        die("read labels", &err);
    if (images->shape.rank != 3 || images->shape.dim[1] != 28 || images->shape.dim[2] != 28 ||
        labels->shape.rank != 1 || labels->shape.dim[0] != images->shape.dim[0]) {
        fprintf(stderr, "lenet_fmnist: %s: expected N x 28 x 28 images and N labels\n", dir);
        exit(1);
    }
}

/* Copy examples idx[0..batch) into the program's inputs. */
static void feed(slim_program *p, const slim_idx *im, const slim_idx *lb, const int64_t *idx,
                 int batch)
{
    slim_error err = {0};
    slim_tensor x, y;
    if (slim_program_input(p, "images", &x, &err) || slim_program_input(p, "labels", &y, &err))
        die("inputs", &err);
    float *xd = x.data;
    int32_t *yd = y.data;
    for (int n = 0; n < batch; n++) {
        const uint8_t *src = im->data + idx[n] * 784;
        for (int i = 0; i < 784; i++)
            xd[n * 784 + i] = src[i] * (1.0f / 255.0f);
        yd[n] = lb->data[idx[n]];
    }
}

static double evaluate(slim_program *p, const slim_idx *im, const slim_idx *lb, int batch,
                       int classes)
{
    slim_error err = {0};
    int64_t n = im->shape.dim[0], correct = 0;
    int64_t *idx = malloc((size_t)batch * sizeof *idx);
    for (int64_t start = 0; start < n; start += batch) {
        int valid = (int)(n - start < batch ? n - start : batch);
        for (int i = 0; i < batch; i++)
            idx[i] = start + (i < valid ? i : 0); /* pad the last batch, count only valid rows */
        feed(p, im, lb, idx, batch);
        if (slim_program_run(p, &(slim_run_opts){0}, &err))
            die("eval", &err);
        slim_tensor lg;
        slim_program_output(p, "LeNet/fc4", &lg, &err);
        const float *l = lg.data;
        for (int i = 0; i < valid; i++) {
            int best = 0;
            for (int c = 1; c < classes; c++)
                if (l[i * classes + c] > l[i * classes + best])
                    best = c;
            correct += best == lb->data[start + i];
        }
    }
    free(idx);
    return (double)correct / (double)n;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: lenet_fmnist [--dataset_dir=DIR] [--num_epochs=N] [--batch_size=N]\n"
            "                    [--learning_rate=X] [--momentum=X] [--num_threads=N] [--seed=N]\n"
            "                    [--log_every_n_steps=N] [--json=FILE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    opts o = {.dataset_dir = "/usr/share/datasets/fashion-mnist",
              .epochs = 3,
              .batch = 64,
              .threads = 2,
              .lr = 0.01,
              .momentum = 0.9,
              .seed = 0,
              .log_every = 100};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = strchr(a, '=');
        if (!v)
            usage();
        v++;
        if (!strncmp(a, "--dataset_dir=", 14))
            o.dataset_dir = v;
        else if (!strncmp(a, "--num_epochs=", 13))
            o.epochs = atoi(v);
        else if (!strncmp(a, "--batch_size=", 13))
            o.batch = atoi(v);
        else if (!strncmp(a, "--learning_rate=", 16))
            o.lr = atof(v);
        else if (!strncmp(a, "--momentum=", 11))
            o.momentum = atof(v);
        else if (!strncmp(a, "--num_threads=", 14))
            o.threads = atoi(v);
        else if (!strncmp(a, "--seed=", 7))
            o.seed = strtoull(v, NULL, 10);
        else if (!strncmp(a, "--log_every_n_steps=", 20))
            o.log_every = atoi(v);
        else if (!strncmp(a, "--json=", 7))
            o.json = v;
        else
            usage();
    }
    if (o.epochs < 1 || o.batch < 1 || o.threads < 1 || o.log_every < 1)
        usage();
    const int classes = 10;
    slim_idx tr_im, tr_lb, te_im, te_lb;
    load(o.dataset_dir, "train", &tr_im, &tr_lb);
    load(o.dataset_dir, "t10k", &te_im, &te_lb);
    slim_error err = {0};
    slim_registry *reg;
    if (slim_registry_new(&reg, &err))
        die("registry", &err);
    slim_graph *g = lenet(reg, o.batch, classes);
    slim_graph_init_params(g, o.seed, &err);
    slim_attrs *oa = slim_attrs_new();
    slim_attrs_set_float(oa, "momentum", o.momentum);
    slim_program *train, *eval;
    slim_compile_opts co = {.training = true,
                            .num_threads = o.threads,
                            .optimizer = "momentum_update",
                            .optimizer_attrs = oa};
    if (slim_graph_compile(g, &co, &train, &err))
        die("compile (train)", &err);
    co.training = false;
    if (slim_graph_compile(g, &co, &eval, &err))
        die("compile (eval)", &err);
    slim_attrs_free(oa);
    slim_program_stats st;
    slim_program_get_stats(train, &st);
    printf("LeNet on Fashion-MNIST (%lld train, %lld test images), batch %d, %d threads, "
           "momentum %.2f, learning rate %g\n",
           (long long)tr_im.shape.dim[0], (long long)te_im.shape.dim[0], o.batch, o.threads,
           o.momentum, o.lr);
    printf("planned training memory: %.1f MiB activations+gradients (%.1f MiB without reuse), "
           "%.1f MiB parameters, %.1f MiB optimizer slots\n",
           st.arena_bytes / 1048576.0, st.naive_bytes / 1048576.0, st.param_bytes / 1048576.0,
           st.slot_bytes / 1048576.0);
    fflush(stdout);
    FILE *js = o.json ? fopen(o.json, "w") : NULL;
    int64_t n = tr_im.shape.dim[0], steps_per_epoch = n / o.batch, step = 0;
    int64_t total_steps = steps_per_epoch * o.epochs;
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    double t_start = now(), acc = 0;
    bool tty = isatty(fileno(stderr));
    for (int ep = 0; ep < o.epochs; ep++) {
        /* shuffle: a Fisher-Yates permutation drawn from (seed, epoch) */
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)(slim_rand_u64(o.seed, 0x5eed0000u + (uint64_t)ep, (uint64_t)i) %
                                  (uint64_t)(i + 1));
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        double t_ep = now(), loss_sum = 0, acc_sum = 0;
        int64_t seen = 0;
        for (int64_t s = 0; s < steps_per_epoch; s++, step++) {
            feed(train, &tr_im, &tr_lb, perm + s * o.batch, o.batch);
            slim_run_opts ro = {.learning_rate = (float)o.lr, .step = step, .seed = o.seed};
            if (slim_program_run(train, &ro, &err))
                die("train", &err);
            slim_tensor l, a;
            slim_program_output(train, "loss", &l, &err);
            slim_program_output(train, "accuracy", &a, &err);
            loss_sum += ((float *)l.data)[0];
            acc_sum += ((float *)a.data)[0];
            seen++;
            if ((step + 1) % o.log_every == 0 || s + 1 == steps_per_epoch) {
                double el = now() - t_start;
                double ips = (double)(step + 1) * o.batch / el;
                double eta = (double)(total_steps - step - 1) * o.batch / ips;
                fprintf(stderr,
                        "%sstep %lld/%lld  epoch %d  loss %.4f  accuracy %.3f  lr %g  "
                        "%.0f images/s  ETA %.0fs%s",
                        tty ? "\r" : "", (long long)step + 1, (long long)total_steps, ep + 1,
                        loss_sum / seen, acc_sum / seen, o.lr, ips, eta, tty ? "   " : "\n");
            }
        }
        double train_s = now() - t_ep;
        double t_eval = now();
        acc = evaluate(eval, &te_im, &te_lb, o.batch, classes);
        double eval_s = now() - t_eval;
        fprintf(stderr, "%s", tty ? "\n" : "");
        printf("epoch %d: train loss %.4f, test accuracy %.2f%%, %.1f s/epoch (%.0f images/s), "
               "eval %.2f s\n",
               ep + 1, loss_sum / seen, 100 * acc, train_s,
               (double)steps_per_epoch * o.batch / train_s, eval_s);
        fflush(stdout);
        if (js) {
            fprintf(js,
                    "{\"epoch\": %d, \"train_loss\": %.5f, \"test_accuracy\": %.5f, "
                    "\"train_seconds\": %.3f, \"images_per_second\": %.1f, \"eval_seconds\": %.3f, "
                    "\"threads\": %d, \"batch\": %d}\n",
                    ep + 1, loss_sum / seen, acc, train_s,
                    (double)steps_per_epoch * o.batch / train_s, eval_s, o.threads, o.batch);
            fflush(js);
        }
    }
    printf("test accuracy: %.2f%% after %d epochs (%.0f s)\n", 100 * acc, o.epochs,
           now() - t_start);
    if (js)
        fclose(js);
    free(perm);
    slim_program_free(train);
    slim_program_free(eval);
    slim_graph_free(g);
    slim_registry_free(reg);
    slim_idx_fini(&tr_im);
    slim_idx_fini(&tr_lb);
    slim_idx_fini(&te_im);
    slim_idx_fini(&te_lb);
    return 0;
}
