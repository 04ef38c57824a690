/* bench/delayline.c - a network link with a fixed one-way delay, for kernels
 * without netem (CONFIG_NET_SCH_NETEM). bench/mpi_netns.sh uses it to give
 * its "hosts" latency as well as a rate.
 *
 *     delayline NETNS INNER OUTER DELAY_FILE
 *
 * makes two TAP devices, INNER inside the network namespace NETNS (its
 * "eth0") and OUTER in the caller's namespace (a bridge port), and copies
 * every frame from one to the other DELAY microseconds after it arrived,
 * in order, in both directions. DELAY is read from DELAY_FILE at start and
 * again on SIGHUP. The devices exist while the process runs; SIGTERM ends it.
 *
 * Frames carry the virtio-net header (IFF_VNET_HDR) and both devices accept
 * TCP segmentation offload, so a 64 KB TCP burst crosses as one frame, as
 * over veth: the copy costs one read and one write per burst rather than per
 * 1500-byte packet. The rate is left to tc (tbf on the devices); a frame
 * that finds its direction's queue full is dropped, as a full device queue
 * would. Linux only; root. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum { SLOTS = 256, FRAME = 65536 + 64 };

struct queue {
    unsigned char *buf; /* SLOTS frames of FRAME bytes */
    int len[SLOTS];
    int64_t due[SLOTS];  /* monotonic ns */
    unsigned head, tail; /* head: next to send; tail: next free */
    long sent, dropped;
};

static volatile sig_atomic_t reload = 1, stop;
static void on_hup(int sig)
{
    (void)sig;
    reload = 1;
}
static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int open_tap(const char *name)
{
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        perror("delayline: /dev/net/tun");
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    unsigned off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
    if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETOFFLOAD, off) < 0) {
        fprintf(stderr, "delayline: tap %s: %s\n", name, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* A TAP device belongs to the namespace its creator is in at TUNSETIFF. */
static int open_tap_in(const char *netns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/var/run/netns/%s", netns);
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int target = open(path, O_RDONLY | O_CLOEXEC);
    if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) < 0) {
        fprintf(stderr, "delayline: namespace %s: %s\n", netns, strerror(errno));
        return -1;
    }
    int fd = open_tap(name);
    if (setns(self, CLONE_NEWNET) < 0) {
        perror("delayline: back to own namespace");
        fd = -1;
    }
    close(self);
    close(target);
    return fd;
}

static int64_t read_delay(const char *file)
{
    FILE *f = fopen(file, "r");
    double us = 0;
    if (!f || fscanf(f, "%lf", &us) != 1 || us < 0 || us > 10e6) {
        fprintf(stderr, "delayline: %s: want a delay in microseconds (0 to 1e7)\n", file);
        us = 0;
    }
    if (f)
        fclose(f);
    return (int64_t)(us * 1000);
}

/* Read every frame waiting on fd into q, due at now + delay. */
static void take(int fd, struct queue *q, int64_t delay)
{
    for (;;) {
        unsigned char *slot = q->buf + (size_t)(q->tail % SLOTS) * FRAME;
        if (q->tail - q->head == SLOTS) {
            static unsigned char sink[FRAME];
            if (read(fd, sink, sizeof sink) <= 0)
                return;
            q->dropped++;
            continue;
        }
        ssize_t n = read(fd, slot, FRAME);
        if (n <= 0)
            return;
        q->len[q->tail % SLOTS] = (int)n;
        q->due[q->tail % SLOTS] = now_ns() + delay;
        q->tail++;
    }
}

/* Write the frames now due to fd; returns ns until the next is due, or -1. */
static int64_t give(int fd, struct queue *q)
{
    int64_t t = now_ns();
    while (q->head != q->tail) {
        unsigned i = q->head % SLOTS;
        if (q->due[i] > t)
            return q->due[i] - t;
        /* a device that is down refuses the frame: it is lost, as on a wire */
        if (write(fd, q->buf + (size_t)i * FRAME, (size_t)q->len[i]) < 0 && errno == EAGAIN)
            return 20000; /* its queue is full: retry shortly, in order */
        q->sent++;
        q->head++;
    }
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: delayline NETNS INNER OUTER DELAY_FILE\n");
        return 2;
    }
    int in = open_tap_in(argv[1], argv[2]);
    int out = in < 0 ? -1 : open_tap(argv[3]);
    if (in < 0 || out < 0)
        return 1;
    prctl(PR_SET_TIMERSLACK, 1UL); /* wake at the frame's time, not 50 us late */
    struct queue q[2];             /* 0: inner -> outer, 1: outer -> inner */
    memset(q, 0, sizeof q);
    for (int d = 0; d < 2; d++)
        if (!(q[d].buf = malloc((size_t)SLOTS * FRAME))) {
            fprintf(stderr, "delayline: out of memory\n");
            return 1;
        }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int64_t delay = 0;
    while (!stop) {
        if (reload) {
            reload = 0;
            delay = read_delay(argv[4]);
        }
        int64_t w0 = give(out, &q[0]), w1 = give(in, &q[1]);
        int64_t w = w0 < 0 ? w1 : w1 < 0 ? w0 : w0 < w1 ? w0 : w1;
        struct pollfd p[2] = {{in, POLLIN, 0}, {out, POLLIN, 0}};
        struct timespec ts = {w / 1000000000, w % 1000000000};
        int r = ppoll(p, 2, w < 0 ? NULL : &ts, NULL);
        if (r < 0 && errno != EINTR) {
            perror("delayline: ppoll");
            return 1;
        }
        if (r > 0) {
            if (p[0].revents & POLLIN)
                take(in, &q[0], delay);
            if (p[1].revents & POLLIN)
                take(out, &q[1], delay);
        }
    }
    fprintf(stderr, "delayline %s: %ld frames in, %ld out; %ld and %ld dropped (queue full)\n",
            argv[1], q[0].sent, q[1].sent, q[0].dropped, q[1].dropped);
    return 0;
}
