/* core/init.c - parameter initializers, with TensorFlow's definitions
 * (tf.compat.v1 initializers, used by TF-Slim):
 *   truncated normal: redraw samples beyond 2 standard deviations;
 *   glorot (xavier) uniform: limit sqrt(6 / (fan_in + fan_out));
 *   glorot normal: stddev sqrt(2 / (fan_in + fan_out)) (untruncated here, as TF-Slim's
 *     xavier_initializer(uniform=False));
 *   variance scaling: scale = factor / n with n = fan_in, fan_out or their mean;
 *     uniform: limit sqrt(3 * scale); normal: truncated normal with
 *     stddev sqrt(scale) / 0.87962566103423978 (TF >= 1.14 corrects for truncation).
 * Values depend only on the seed given (a hash of the run seed and the name). */
#include "core/init.h"

#include <math.h>
#include <string.h>

/* Numbers of fan-in and fan-out for variance-scaling initializers, as TF:
 * the last dim is fan-out, the one before fan-in, the rest the receptive field. */
static void fans(const slim_shape *s, double *fan_in, double *fan_out)
{
    if (s->rank == 0) {
        *fan_in = *fan_out = 1;
        return;
    }
    if (s->rank == 1) {
        *fan_in = *fan_out = (double)s->dim[0];
        return;
    }
    double receptive = 1;
    for (int i = 0; i < s->rank - 2; i++)
        receptive *= (double)s->dim[i];
    *fan_in = (double)s->dim[s->rank - 2] * receptive;
    *fan_out = (double)s->dim[s->rank - 1] * receptive;
}

static double uniform01(uint64_t seed, uint64_t i)
{
    /* 53 random bits in (0, 1) */
    return ((double)(slim_rand_u64(seed, 0x1417, i) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Box-Muller on counter-based uniforms: sample k of the stream. */
static double normal01(uint64_t seed, uint64_t k)
{
    double u1 = uniform01(seed, 2 * k), u2 = uniform01(seed, 2 * k + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static double truncated01(uint64_t seed, uint64_t i)
{
    /* redraw beyond 2 sigma: each element owns a sub-stream of draws */
    for (uint64_t attempt = 0;; attempt++) {
        double z = normal01(seed ^ (attempt * 0x9E3779B97F4A7C15ull), i);
        if (fabs(z) <= 2.0)
            return z;
    }
}

void slim__init_fill(const slim_init *init, const slim_shape *s, float *data, uint64_t seed)
{
    int64_t n = slim_shape_numel(s);
    double fan_in, fan_out;
    fans(s, &fan_in, &fan_out);
    switch (init->kind) {
    case SLIM_INIT_DATA: memcpy(data, init->data, (size_t)n * sizeof(float)); break;
    case SLIM_INIT_ZEROS:
        for (int64_t i = 0; i < n; i++)
            data[i] = 0;
        break;
    case SLIM_INIT_CONSTANT:
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)init->value;
        break;
    case SLIM_INIT_UNIFORM:
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)(init->lo + (init->hi - init->lo) * uniform01(seed, (uint64_t)i));
        break;
    case SLIM_INIT_NORMAL:
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)(init->mean + init->stddev * normal01(seed, (uint64_t)i));
        break;
    case SLIM_INIT_TRUNCATED_NORMAL:
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)(init->mean + init->stddev * truncated01(seed, (uint64_t)i));
        break;
    case SLIM_INIT_XAVIER_UNIFORM: {
        double limit = sqrt(6.0 / (fan_in + fan_out));
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)(limit * (2 * uniform01(seed, (uint64_t)i) - 1));
        break;
    }
    case SLIM_INIT_XAVIER_NORMAL: {
        double sd = sqrt(2.0 / (fan_in + fan_out));
        for (int64_t i = 0; i < n; i++)
            data[i] = (float)(sd * normal01(seed, (uint64_t)i));
        break;
    }
    case SLIM_INIT_VARIANCE_SCALING: {
        double fan = init->mode == SLIM_FAN_IN    ? fan_in
                     : init->mode == SLIM_FAN_OUT ? fan_out
                                                  : (fan_in + fan_out) / 2;
        double factor = init->factor > 0 ? init->factor : 2.0;
        double scale = factor / (fan > 1 ? fan : 1);
        if (init->uniform) {
            double limit = sqrt(3.0 * scale);
            for (int64_t i = 0; i < n; i++)
                data[i] = (float)(limit * (2 * uniform01(seed, (uint64_t)i) - 1));
        } else {
            double sd = sqrt(scale) / 0.87962566103423978;
            for (int64_t i = 0; i < n; i++)
                data[i] = (float)(sd * truncated01(seed, (uint64_t)i));
        }
        break;
    }
    }
}
