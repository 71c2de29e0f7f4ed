/* http_limits: open connections counted per client address, so that a client
 * past --max-connections-per-ip gets a 503 problem instead of the silent
 * close libmicrohttpd gives (its own per-IP limit is set a little higher and
 * stays the hard stop). One table under one lock: the number of distinct
 * addresses is bounded by the connection limit. */
#include "http_int.h"

#include <microhttpd.h>

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct ip_key {
    unsigned char bytes[16]; /* IPv4 in the first 4, IPv6 in all 16 */
    int family;
};

struct ip_count {
    struct ip_key key;
    int n;
};

struct http__ip_counts {
    pthread_mutex_t lock; /* guards the array */
    struct ip_count *items;
    int len, cap;
};

struct http__ip_counts *http__ip_counts_new(void)
{
    struct http__ip_counts *t = fr_xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

void http__ip_counts_free(struct http__ip_counts *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->items);
    free(t);
}

/* The key of a connection's peer; false when MHD cannot tell (then the
 * connection is not counted: MHD's own limit still applies). */
static bool peer_key(struct MHD_Connection *conn, struct ip_key *key)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    memset(key, 0, sizeof(*key));
    if (!info || !info->client_addr)
        return false;
    const struct sockaddr *sa = info->client_addr;
    key->family = sa->sa_family;
    if (sa->sa_family == AF_INET) {
        memcpy(key->bytes, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(key->bytes, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        return true;
    }
    return false;
}

static int find_locked(struct http__ip_counts *t, const struct ip_key *key)
{
    for (int i = 0; i < t->len; i++) {
        if (memcmp(&t->items[i].key, key, sizeof(*key)) == 0)
            return i;
    }
    return -1;
}

void http__ip_counts_add(struct http__ip_counts *t, struct MHD_Connection *conn, int delta)
{
    struct ip_key key;
    if (!peer_key(conn, &key))
        return;
    pthread_mutex_lock(&t->lock);
    int i = find_locked(t, &key);
    if (i < 0 && delta > 0) {
        if (t->len == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 16;
            t->items = fr_xrealloc(t->items, (size_t)t->cap * sizeof(*t->items));
        }
        i = t->len++;
        t->items[i] = (struct ip_count){.key = key, .n = 0};
    }
    if (i >= 0) {
        t->items[i].n += delta;
        if (t->items[i].n <= 0) /* gone: the last entry takes its place */
            t->items[i] = t->items[--t->len];
    }
    pthread_mutex_unlock(&t->lock);
}

int http__ip_counts_get(struct http__ip_counts *t, struct MHD_Connection *conn)
{
    struct ip_key key;
    if (!peer_key(conn, &key))
        return 0;
    pthread_mutex_lock(&t->lock);
    int i = find_locked(t, &key);
    int n = i >= 0 ? t->items[i].n : 0;
    pthread_mutex_unlock(&t->lock);
    return n;
}
