/*
 * redisslot.h - what a Redis Cluster client computes without a server
 * (redisslot.c): the slot of a key, and what an error reply asks of the
 * client.  Private to the library; no I/O, no hiredis.
 */
#ifndef SUSPECT_REDISSLOT_H
#define SUSPECT_REDISSLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REDIS_SLOTS 16384

/* CRC16-XMODEM (polynomial 0x1021, initial 0), Redis Cluster's. */
uint16_t redis_crc16(const char *buf, size_t len);

/* The slot of key: CRC16 of the text inside its first {...} when that
 * text is not empty, else of the whole key, modulo 16384. */
int redis_key_slot(const char *key, size_t len);

/* What an error reply means to a router. */
typedef enum redis_errkind {
    REDIS_ERRK_NONE = 0,    /* no error reply */
    REDIS_ERRK_OTHER,       /* anything below does not apply */
    REDIS_ERRK_MOVED,       /* -MOVED slot host:port: the slot moved */
    REDIS_ERRK_ASK,         /* -ASK slot host:port: ask there once */
    REDIS_ERRK_TRYAGAIN,    /* -TRYAGAIN: keys split by a resharding */
    REDIS_ERRK_CLUSTERDOWN, /* -CLUSTERDOWN: a slot has no master */
    REDIS_ERRK_READONLY,    /* -READONLY: a replica (a demoted master) */
    REDIS_ERRK_MASTERDOWN,  /* -MASTERDOWN: a replica without its master */
    REDIS_ERRK_LOADING      /* -LOADING: a server still reading its data */
} redis_errkind_t;

/* The kind of the error reply text ("" = none). */
redis_errkind_t redis_error_kind(const char *text);

/* Reads "MOVED <slot> <host>:<port>" or "ASK ..." (text as the server
 * sent it): *slot, the host (*host, *host_len, not NUL-terminated, in
 * text; an IPv6 address without brackets) and *port.  False when text is
 * not such a redirection. */
bool redis_redirect_parse(const char *text, int *slot, const char **host,
                          size_t *host_len, int *port);

#endif
