/*
 * ctl_internal.h - what the files of suspectctl share: the run's context, the
 * exit statuses, the output helpers (ctl_out.c), loading the files and the
 * store and naming an identity (ctl_env.c), and the commands (ctl_cmds.c,
 * ctl_locked.c, ctl_simulate.c).
 *
 * Ownership: the context owns the conf snapshot, the limits snapshot, the
 * guard and the store it opened; ctl_unload() frees them.  Everything else
 * a command makes lives on its stack or is freed before it returns.
 */
#ifndef MW_CTL_INTERNAL_H
#define MW_CTL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "control/control_proto.h"
#include "guard/guard.h"
#include "conf/suspect_conf.h"
#include "limits/suspect_limits.h"
#include "setup/setup.h"
#include "suspect_store.h"

/* Exit statuses (documented in suspectctl(8)). */
enum {
    CTL_OK = 0,
    CTL_CONFIG = 1,  /* a file is invalid, or check found errors */
    CTL_USAGE = 2,   /* bad command line */
    CTL_STORE = 3,   /* the store is unreachable, or not reachable at all */
    CTL_NOTFOUND = 4 /* no such action or identity type */
};

typedef struct ctl {
    const char *conf_path;
    const char *command; /* the command's name, for messages and JSON */
    bool json;
    const char *key;    /* -k KEY: the identity by its store key */
    const char *body;   /* simulate --body */
    bool body_stdin;    /* simulate --body-stdin */
    const char *socket; /* --socket PATH: the daemon's control socket */
    bool direct;        /* --direct: the store, never the daemon */
    FILE *out;
    FILE *errs;
    int64_t now_ms;
    mw_setup_t setup; /* its store NULL until opened; stays NULL for
                         memory */
    bool daemon;      /* a suspect-fcgi answers: work through it */
    const char *via;  /* "daemon" or "store" once connected */
    const char *sock; /* the control socket tried (sock_buf) */
    char sock_buf[4096];
    int64_t daemon_pid;
} ctl_t;

/* ---- ctl_out.c ---------------------------------------------------------- */

/*
 * Reports a failure: "suspectctl: <message>" on errs and, with --json, the
 * object {"command", "ok": false, "exit", "error"} on out.  Returns code.
 */
int ctl_fail(ctl_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ctl_fail() with a library error: "<what>: <file:line: text>". */
int ctl_fail_err(ctl_t *c, int code, const char *what,
                 const suspect_err_t *err);

/* ctl_fail(CTL_USAGE) with "usage: suspectctl <synopsis>". */
int ctl_usage(ctl_t *c, const char *synopsis);

/* Epoch ms as local time ("2026-11-03 12:00:00 +0100") into buf. */
const char *ctl_time(int64_t ms, char buf[48]);

#define CTL_JSON_DEPTH 8

/* A JSON writer: one object, nested objects and arrays; strings escaped
 * (control characters, quotes, backslashes; invalid UTF-8 as U+FFFD). */
typedef struct ctl_json {
    FILE *f;
    int depth;
    bool more[CTL_JSON_DEPTH];  /* a value was written at this depth */
    char close[CTL_JSON_DEPTH]; /* '}' or ']' */
} ctl_json_t;

/* Starts the top object with "command", "ok" (exit == 0) and "exit". */
void cj_begin(ctl_json_t *j, const ctl_t *c, int exit);
/* Ends every open object and array, then a newline. */
void cj_finish(ctl_json_t *j);
/* Opens an object or an array (key NULL inside an array). */
void cj_obj(ctl_json_t *j, const char *key);
void cj_arr(ctl_json_t *j, const char *key);
/* Closes the innermost object or array. */
void cj_end(ctl_json_t *j);
/* Values; a NULL string is null. */
void cj_str(ctl_json_t *j, const char *key, const char *s);
void cj_strn(ctl_json_t *j, const char *key, const char *s, size_t len);
void cj_int(ctl_json_t *j, const char *key, int64_t v);
void cj_bool(ctl_json_t *j, const char *key, bool v);
/* epoch ms as "<key>_ms" and, when not 0, "<key>" in local time, else
 * null. */
void cj_time(ctl_json_t *j, const char *key, int64_t ms);

/* ---- ctl_env.c ---------------------------------------------------------- */

/* Loads suspect.xml, the limits file and the guard: CTL_OK or CTL_CONFIG
 * (reported).  Commands call it once their operands are checked. */
int ctl_load(ctl_t *c);

/* Loads suspect.xml alone (what finds the daemon): CTL_OK or CTL_CONFIG
 * (reported). */
int ctl_load_conf(ctl_t *c);

/*
 * Opens the store of suspect.xml, bare (no fail mode: an error is an
 * error): CTL_OK, or CTL_STORE (reported) when it cannot be reached.
 * The memory store lives inside the daemon: with memory_ok it leaves
 * c->setup.store NULL and returns CTL_OK, else it fails with CTL_STORE.
 */
int ctl_open_store(ctl_t *c, bool memory_ok);

/* Frees what ctl_load() and ctl_open_store() made. */
void ctl_unload(ctl_t *c);

/* "lmdb", "redis" or "memory". */
const char *ctl_store_name(const ctl_t *c);

/* One identity of one action, as an operator names it. */
typedef struct ctl_target {
    const char *action;
    const char *type;           /* NULL when the key does not need it */
    const char *identity;       /* as given; NULL with -k */
    const suspect_rule_t *rule; /* NULL only with -k and an action that
                                   is not in the limits file */
    char abuf[SUSPECT_ACTION_MAX + 1];
    char tbuf[SUSPECT_ACTION_MAX + 1];
    suspect_key_t key;
} ctl_target_t;

/*
 * Builds t from ACTION IDENTITY [TYPE] (type may be NULL) as the guard
 * would (key format and prefix of suspect.xml; a composite identity's
 * parts joined with '_'), or from c->key when -k was given (action and
 * IDENTITY then NULL).  need_rule: the action must be in the limits file
 * also with -k.  Returns CTL_OK, CTL_USAGE or CTL_NOTFOUND (reported).
 */
int ctl_target(ctl_t *c, const char *action, const char *identity,
               const char *type, bool need_rule, ctl_target_t *t);

/* A window key cut into its parts (borrowed from the key). */
typedef struct ctl_keyparts {
    const char *action;
    size_t action_len;
    const char *type; /* typed format only, else NULL */
    size_t type_len;
    const char *value; /* escaped, as in the key */
    size_t value_len;
} ctl_keyparts_t;

/* Cuts key[0..len) by the key format of suspect.xml; false when it is not
 * such a key (no prefix, no ':'). */
bool ctl_key_split(const ctl_t *c, const char *key, size_t len,
                   ctl_keyparts_t *p);

/* Undoes the key escaping of value into buf (size bytes, NUL-terminated;
 * *out_len bytes, which may hold a NUL); false when the value was capped
 * (its raw form is lost), is not an escaped value, or does not fit. */
bool ctl_key_unescape(const char *value, size_t len, char *buf, size_t size,
                      size_t *out_len);

/* ---- ctl_remote.c ------------------------------------------------------- */

/*
 * Chooses where counts are read and changed: the suspect-fcgi that answers
 * on the control socket of suspect.xml (or --socket) and runs this
 * suspect.xml, else the store itself (ctl_open_store(), memory_ok as
 * there).  CTL_OK, or CTL_STORE (reported).  Call after ctl_load().
 */
int ctl_connect(ctl_t *c, bool memory_ok);

/* The operations on one target, from the daemon or the store alike;
 * CTL_OK or a failure reported.  status also gives the rule the answer
 * was computed with (the daemon's own limits when it answered). */
int ctl_op_status(ctl_t *c, const ctl_target_t *t, suspect_rule_t *rule,
                  suspect_status_t *st);
int ctl_op_unblock(ctl_t *c, const ctl_target_t *t, suspect_unblock_t *u);
int ctl_op_reset(ctl_t *c, const ctl_target_t *t);
int ctl_op_block(ctl_t *c, const ctl_target_t *t, uint32_t secs,
                 int64_t *until_ms);

/* The daemon's live locks whose key starts with prefix (NULL: all),
 * through fn; only when c->daemon. */
int ctl_op_locked(ctl_t *c, const char *prefix, suspect_locked_fn fn,
                  void *arg);

/* A command without operands to the daemon (stats, reload): CTL_OK with
 * its "ok" reply in *r (free it with mw_ctl_msg_free()), or a failure
 * reported. */
int ctl_op_call(ctl_t *c, const char *command, mw_ctl_msg_t *r);

/* ---- the commands (operands after the command name) --------------------- */

int ctl_cmd_check(ctl_t *c, int argc, char **argv);
int ctl_cmd_status(ctl_t *c, int argc, char **argv);
int ctl_cmd_unblock(ctl_t *c, int argc, char **argv);
int ctl_cmd_reset(ctl_t *c, int argc, char **argv);
int ctl_cmd_block(ctl_t *c, int argc, char **argv);
int ctl_cmd_locked(ctl_t *c, int argc, char **argv);
int ctl_cmd_simulate(ctl_t *c, int argc, char **argv);
int ctl_cmd_stats(ctl_t *c, int argc, char **argv);
int ctl_cmd_reload(ctl_t *c, int argc, char **argv);

#endif
