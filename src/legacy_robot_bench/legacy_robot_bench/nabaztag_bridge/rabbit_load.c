/* rabbit_load: an open-loop load of many rabbits on a Nabaztag server.
 *
 *   rabbit_load HOST PORT RABBITS INTERVAL_S SECONDS
 *
 * Rabbit n (serial 0019db + n in hex) pings /vl/p4.jsp every INTERVAL_S seconds, the rabbits'
 * phases spread evenly over the interval, each ping on a connection of its own (HTTP/1.0, the
 * rabbit's headers, read to the close) as the real rabbit does. Open loop: a ping goes out at
 * its scheduled time whatever the server is doing, and its latency runs from that time to the
 * last byte of the reply, so a slow server cannot hide its queue. The first interval registers
 * the rabbits and is not measured. Prints one JSON object: counts and latency percentiles.
 * Written in C because a Python client saturates a core long before the server does.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 5.0           /* a ping unanswered this long counts as failed */
#define REPLY_MAX 4096

struct rabbit {
    int fd;                     /* -1: no ping in flight */
    double scheduled;           /* when the ping in flight was due */
    int sent;                   /* request written */
    size_t got;
    char reply[REPLY_MAX];
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct sockaddr_in server;
static char host_header[64];
static struct rabbit *rabbits;
static double *latencies;
static long measured, failed, overruns, capacity, in_flight;
static double measure_from;

static void count(double scheduled, int ok) {
    if (scheduled < measure_from) return;
    if (ok && measured < capacity)
        latencies[measured++] = now() - scheduled;
    else
        failed++;
}

static void finish(int n, int ok) {
    struct rabbit *r = &rabbits[n];
    count(r->scheduled, ok);
    close(r->fd);
    r->fd = -1;
    in_flight--;
}

static void start_ping(int epoll, int n, double scheduled) {
    struct rabbit *r = &rabbits[n];
    if (r->fd >= 0) {           /* the last ping is still out: the rabbit waits, we count it */
        if (scheduled >= measure_from) overruns++;
        return;
    }
    r->scheduled = scheduled;
    r->sent = 0;
    r->got = 0;
    r->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (r->fd < 0) { count(scheduled, 0); return; }
    in_flight++;
    if (connect(r->fd, (struct sockaddr *)&server, sizeof server) < 0 && errno != EINPROGRESS) {
        finish(n, 0);
        return;
    }
    struct epoll_event event = {.events = EPOLLOUT, .data.u32 = n};
    epoll_ctl(epoll, EPOLL_CTL_ADD, r->fd, &event);
}

static void on_ready(int epoll, int n) {
    struct rabbit *r = &rabbits[n];
    if (!r->sent) {
        int error = 0;
        socklen_t size = sizeof error;
        getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &error, &size);
        char request[512];
        int length = snprintf(request, sizeof request,
            "GET /vl/p4.jsp?sn=0019db%06x&v=65808&st=1&sd=0&tc=7fffffff&h=4 HTTP/1.0\r\n"
            "User-Agent: MTL\r\nPragma: no-cache\r\nIcy-MetaData:1\r\nHost: %s\r\n\r\n",
            n, host_header);
        if (error || write(r->fd, request, length) != length) { finish(n, 0); return; }
        r->sent = 1;
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = n};
        epoll_ctl(epoll, EPOLL_CTL_MOD, r->fd, &event);
        return;
    }
    for (;;) {
        ssize_t got = read(r->fd, r->reply + r->got, REPLY_MAX - 1 - r->got);
        if (got > 0) { r->got += got; if (r->got < REPLY_MAX - 1) continue; }
        if (got < 0 && errno == EAGAIN) return;
        r->reply[r->got] = 0;   /* the close (or a full buffer): the reply is all here */
        finish(n, got == 0 && strncmp(r->reply, "HTTP/1.0 200 ", 13) == 0);
        return;
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: rabbit_load HOST PORT RABBITS INTERVAL_S SECONDS\n");
        return 2;
    }
    int count = atoi(argv[3]);
    double interval = atof(argv[4]), seconds = atof(argv[5]);
    server.sin_family = AF_INET;
    server.sin_port = htons(atoi(argv[2]));
    if (count < 1 || interval <= 0 || seconds <= 0 || inet_pton(AF_INET, argv[1], &server.sin_addr) != 1) {
        fprintf(stderr, "rabbit_load: bad arguments (HOST is an IPv4 address)\n");
        return 2;
    }
    snprintf(host_header, sizeof host_header, "%s", argv[1]);
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);

    rabbits = calloc(count, sizeof *rabbits);
    capacity = (long)(count * (seconds / interval + 2));
    latencies = malloc(capacity * sizeof *latencies);
    for (int n = 0; n < count; n++) rabbits[n].fd = -1;
    int epoll = epoll_create1(0);
    struct epoll_event events[256];

    double start = now(), step = interval / count;
    measure_from = start + interval;
    double end = measure_from + seconds;
    long next = 0;              /* the next ping to go out: rabbit next % count */
    long scheduled_total = 0;
    double next_timeout_check = start;
    for (;;) {
        double t = now();
        while (start + next * step <= t && start + next * step < end) {
            if (start + next * step >= measure_from) scheduled_total++;
            start_ping(epoll, next % count, start + next * step);
            next++;
        }
        if (t >= next_timeout_check) {      /* a tenth of a second is fine for a 5 s limit */
            for (int n = 0; n < count; n++)
                if (rabbits[n].fd >= 0 && t - rabbits[n].scheduled > TIMEOUT_S) finish(n, 0);
            next_timeout_check = t + 0.1;
        }
        if (t >= end && in_flight == 0) break;
        double wait = t >= end ? 0.01 : start + next * step - t;
        if (wait > 0.01) wait = 0.01;
        if (wait < 0) wait = 0;
        struct timespec timeout = {0, (long)(wait * 1e9)};
        int ready = epoll_pwait2(epoll, events, 256, &timeout, NULL);
        for (int i = 0; i < ready; i++) on_ready(epoll, events[i].data.u32);
    }
    qsort(latencies, measured, sizeof *latencies, by_value);
#define AT(f) (measured ? 1000 * latencies[(long)((f) * (measured - 1))] : -1.0)
    printf("{\"rabbits\": %d, \"interval_s\": %g, \"seconds\": %g, \"scheduled\": %ld, "
           "\"answered\": %ld, \"failed\": %ld, \"overruns\": %ld, \"rate\": %.1f, "
           "\"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}\n",
           count, interval, seconds, scheduled_total, measured, failed, overruns,
           measured / seconds, AT(0.5), AT(0.9), AT(0.99), AT(1.0));
    return 0;
}
