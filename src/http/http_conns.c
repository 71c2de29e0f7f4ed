/* http_conns: every open connection with what it is doing, so that a client
 * that holds connections cannot lock others out. Past half of the 503
 * reserve over --max-connections (or --max-connections-per-ip from one
 * address) a new connection closes the oldest idle one (of that address)
 * instead of MHD's hard limit refusing everyone; and a watchdog closes a connection whose request
 * line and headers have not all arrived within the idle timeout, which MHD 0.9.75 measures per byte
 * only (a header sent a byte a second never timed out), and one whose client shut its side down in
 * the middle of the body. Closing is shutdown(2) on the socket: MHD sees the end and cleans up. */
#include "http_int.h"

#include <microhttpd.h>

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum conn_phase {
    CONN_WAITING, /* no request yet, or between requests: the next head is due */
    CONN_HEAD,    /* the request line is in, the headers are not */
    CONN_BODY,    /* headers in, the body coming (its rate is checked elsewhere) */
    CONN_ACTIVE,  /* the request is in: the handler and the reply */
};

struct http__conn {
    struct http__conn *prev, *next; /* oldest first */
    int fd;
    unsigned char addr[16];
    int family;
    enum conn_phase phase;
    int64_t since_us; /* when the current phase began */
    bool closing;     /* shut down already */
};

struct http__conns {
    pthread_mutex_t lock; /* guards the list and every entry */
    pthread_cond_t wake;  /* the watchdog's sleep; signalled at free */
    struct http__conn *head, *tail;
    int64_t head_deadline_us;
    bool stop;
    pthread_t watchdog;
};

static void conn_shutdown_locked(struct http__conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    shutdown(c->fd, SHUT_RDWR);
}

bool http__conns_peer_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) != 1)
        return false;
    if (p.revents & (POLLHUP | POLLERR))
        return true;
    /* POLLRDHUP comes with the FIN, which may sit behind body bytes not yet
     * read (a client that sent all of it, then shut its write side down). */
    int pending = 0;
    return (p.revents & POLLRDHUP) && ioctl(fd, FIONREAD, &pending) == 0 && pending == 0;
}

/* A client that shut its side down in the middle of its body sends no more:
 * MHD 0.9.75 then waits for the rest until the idle timeout, the upload
 * half-written. */
static bool peer_gone(const struct http__conn *c)
{
    return !c->closing && http__conns_peer_gone(c->fd);
}

static void *watchdog_main(void *arg)
{
    struct http__conns *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        struct timespec ts;
        fr_mono_deadline(&ts, 1000);
        pthread_cond_timedwait(&t->wake, &t->lock, &ts);
        int64_t now = fr_mono_us();
        for (struct http__conn *c = t->head; c; c = c->next) {
            if (c->phase < CONN_BODY && now - c->since_us > t->head_deadline_us)
                conn_shutdown_locked(c);
            else if (c->phase == CONN_BODY && now - c->since_us > 2000000 && peer_gone(c))
                conn_shutdown_locked(c);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

struct http__conns *http__conns_new(unsigned head_timeout_s)
{
    struct http__conns *t = fr_xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    fr_cond_init_mono(&t->wake);
    t->head_deadline_us = (int64_t)head_timeout_s * 1000000;
    if (pthread_create(&t->watchdog, NULL, watchdog_main, t) != 0) {
        FR_LOG(FR_LOG_ERROR, "cannot start the connection watchdog");
        abort(); /* bookkeeping: like an allocation that failed */
    }
    return t;
}

void http__conns_free(struct http__conns *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->watchdog, NULL);
    while (t->head) {
        struct http__conn *c = t->head;
        t->head = c->next;
        free(c);
    }
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static void conn_peer(struct MHD_Connection *conn, struct http__conn *c)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr)
        return;
    const struct sockaddr *sa = info->client_addr;
    c->family = sa->sa_family;
    if (sa->sa_family == AF_INET)
        memcpy(c->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    else if (sa->sa_family == AF_INET6)
        memcpy(c->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

static bool same_peer(const struct http__conn *a, const struct http__conn *b)
{
    return a->family == b->family && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* Closes the oldest connection waiting for a request (of c's address when
 * same_ip), other than c. */
static void evict_locked(struct http__conns *t, const struct http__conn *c, bool same_ip)
{
    for (struct http__conn *o = t->head; o; o = o->next) {
        if (o != c && !o->closing && o->phase == CONN_WAITING && (!same_ip || same_peer(o, c))) {
            conn_shutdown_locked(o);
            return;
        }
    }
}

void http__conns_opened(struct http__conns *t, struct MHD_Connection *conn, void **socket_context,
                        bool over_total, bool over_ip)
{
    struct http__conn *c = fr_xcalloc(1, sizeof(*c));
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = info ? info->connect_fd : -1;
    conn_peer(conn, c);
    c->phase = CONN_WAITING;
    c->since_us = fr_mono_us();
    pthread_mutex_lock(&t->lock);
    c->prev = t->tail;
    if (t->tail)
        t->tail->next = c;
    else
        t->head = c;
    t->tail = c;
    if (c->fd < 0)
        c->closing = true; /* nothing to shut down */
    if (over_ip)
        evict_locked(t, c, true);
    else if (over_total)
        evict_locked(t, c, false);
    pthread_mutex_unlock(&t->lock);
    *socket_context = c;
}

void http__conns_closed(struct http__conns *t, void **socket_context)
{
    struct http__conn *c = *socket_context;
    if (!c)
        return;
    *socket_context = NULL;
    pthread_mutex_lock(&t->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        t->tail = c->prev;
    pthread_mutex_unlock(&t->lock);
    free(c);
}

/* The head's deadline runs from the end of the previous request (or the
 * connection's start) to the end of the headers: the request line does not
 * restart it. */
static void conn_phase(struct http__conns *t, struct MHD_Connection *conn, enum conn_phase phase)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct http__conn *c = info ? info->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&t->lock);
    if (phase != CONN_HEAD)
        c->since_us = fr_mono_us();
    c->phase = phase;
    pthread_mutex_unlock(&t->lock);
}

void http__conns_head_started(struct http__conns *t, struct MHD_Connection *conn)
{
    conn_phase(t, conn, CONN_HEAD);
}

void http__conns_head_done(struct http__conns *t, struct MHD_Connection *conn)
{
    conn_phase(t, conn, CONN_BODY);
}

/* A chunk of the body reached the handler: the peer-gone check waits a tick
 * from here, since the rest of the body may still sit in MHD's buffer after
 * the socket was read dry (the FIN then looks like a peer gone mid-body). */
void http__conns_body_progress(struct http__conns *t, struct MHD_Connection *conn)
{
    conn_phase(t, conn, CONN_BODY);
}

void http__conns_body_done(struct http__conns *t, struct MHD_Connection *conn)
{
    conn_phase(t, conn, CONN_ACTIVE);
}

void http__conns_request_done(struct http__conns *t, struct MHD_Connection *conn)
{
    conn_phase(t, conn, CONN_WAITING);
}

/* Connections past max_conns still get an answer (503), up to this many
 * more; past those, MHD closes new connections without a word. At least 64:
 * eviction starts past half of it, and in a burst of connects the evicted
 * sockets close a little later than the new ones arrive. */
unsigned http__conn_reserve(unsigned max_conns)
{
    return max_conns / 16 > 64 ? max_conns / 16 : 64;
}

/* Each connection is a descriptor: make room for them (and for the files
 * the server opens) or serve fewer, with a warning, rather than fail accepts. */
unsigned http__fit_fd_limit(unsigned want)
{
    const rlim_t spare = 128;
    struct rlimit rl;
    rlim_t need = (rlim_t)want + http__conn_reserve(want) + spare;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return want;
    struct rlimit raised = {need < rl.rlim_max ? need : rl.rlim_max, rl.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
        rl = raised;
    if (rl.rlim_cur >= need)
        return want;
    rlim_t room = rl.rlim_cur > 2 * spare ? rl.rlim_cur - spare : spare;
    unsigned fit = (unsigned)(room - room / 17);
    FR_LOG(FR_LOG_WARN, "open file limit %llu: serving %u connections, not %u",
           (unsigned long long)rl.rlim_cur, fit, want);
    return fit;
}
