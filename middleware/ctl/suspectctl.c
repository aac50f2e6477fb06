/*
 * suspectctl.c - suspectctl, the operator's tool for Suspect.
 *
 *   suspectctl [-c suspect.xml] [--json] COMMAND [OPERAND...]
 *
 *   check                                  suspect-fcgi --check
 *   status  ACTION IDENTITY [TYPE]         hits, remaining, lock
 *   unblock ACTION IDENTITY [TYPE]         let it in on its next request
 *   reset   ACTION IDENTITY [TYPE]         drop the lock and the hits
 *   block   ACTION IDENTITY SECONDS [TYPE] lock now
 *   locked  [ACTION]                       the identities locked now
 *   simulate [VAR=value ...]               a request, decided, not counted
 *   stats                                  the daemon's decisions since start
 *   reload                                 the daemon reloads both files now
 *
 * It reads the same suspect.xml and limits file as suspect-fcgi and works
 * through the running daemon's control socket when one answers, for every
 * store, else on the store suspect.xml configures (lmdb or redis; the
 * memory store lives inside the daemon).  This file is the command line:
 * the options, a table of commands, and the exit status (ctl_internal.h: 0 ok,
 * 1 configuration, 2 usage, 3 store, 4 not found).  The commands live in
 * ctl_cmds.c, ctl_locked.c, ctl_simulate.c and ctl_daemon.c; loading and
 * the store in ctl_env.c; the daemon in ctl_remote.c; output in
 * ctl_out.c.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "ctl_internal.h"

#define DEFAULT_CONF "/etc/suspect/suspect.xml"

typedef struct command {
    const char *name;
    int (*run)(ctl_t *c, int argc, char **argv);
} command_t;

/* Each command checks its operands, then loads what it needs, so a bad
 * command line is exit 2 whatever the files hold. */
static const command_t commands[] = {
    {"check", ctl_cmd_check},       {"status", ctl_cmd_status},
    {"unblock", ctl_cmd_unblock},   {"reset", ctl_cmd_reset},
    {"block", ctl_cmd_block},       {"locked", ctl_cmd_locked},
    {"simulate", ctl_cmd_simulate}, {"stats", ctl_cmd_stats},
    {"reload", ctl_cmd_reload}};

static void usage(FILE *f)
{
    fputs("usage: suspectctl [-c FILE] [--json] COMMAND [OPERAND...]\n"
          "  check                                  validate suspect.xml and "
          "the limits\n"
          "  status  ACTION IDENTITY [TYPE]         hits, remaining, lock of "
          "an identity\n"
          "  unblock ACTION IDENTITY [TYPE]         let it in on its next "
          "request\n"
          "  reset   ACTION IDENTITY [TYPE]         drop its lock and hits\n"
          "  block   ACTION IDENTITY SECONDS [TYPE] lock it for SECONDS\n"
          "  locked  [ACTION]                       identities locked now\n"
          "  simulate [VAR=value ...]               decide a request without "
          "counting it\n"
          "  stats                                  the daemon's decisions "
          "since it started\n"
          "  reload                                 the daemon reloads both "
          "files now\n"
          "options:\n"
          "  -c, --config FILE  suspect.xml (default " DEFAULT_CONF ")\n"
          "  -j, --json         one JSON object per command\n"
          "  -k, --key KEY      name the identity by its key (as `locked` "
          "lists it)\n"
          "                     instead of ACTION IDENTITY [TYPE]\n"
          "  --body STRING      simulate: the request body\n"
          "  --body-stdin       simulate: read the request body from stdin\n"
          "  --socket PATH      the daemon's control socket (default: from "
          "suspect.xml)\n"
          "  --direct           work on the store itself, not through the "
          "daemon\n"
          "  -h, --help         this help;  -V, --version  the version\n"
          "exit: 0 ok, 1 configuration invalid, check failed or reload\n"
          "      rejected, 2 usage,\n"
          "      3 store unreachable or not supported, 4 not found\n",
          f);
}

enum { OPT_BODY = 256, OPT_BODY_STDIN, OPT_SOCKET, OPT_DIRECT };

/* Parses the options; returns -1 to exit with CTL_USAGE, 1 to exit 0. */
static int parse_opts(int argc, char **argv, ctl_t *c)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"key", required_argument, NULL, 'k'},
        {"body", required_argument, NULL, OPT_BODY},
        {"body-stdin", no_argument, NULL, OPT_BODY_STDIN},
        {"socket", required_argument, NULL, OPT_SOCKET},
        {"direct", no_argument, NULL, OPT_DIRECT},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int ch;

    while ((ch = getopt_long(argc, argv, "c:jk:hV", longs, NULL)) != -1) {
        switch (ch) {
        case 'c':
            c->conf_path = optarg;
            break;
        case 'j':
            c->json = true;
            break;
        case 'k':
            c->key = optarg;
            break;
        case OPT_BODY:
            c->body = optarg;
            break;
        case OPT_BODY_STDIN:
            c->body_stdin = true;
            break;
        case OPT_SOCKET:
            c->socket = optarg;
            break;
        case OPT_DIRECT:
            c->direct = true;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case 'V':
            printf("suspectctl %s\n", PACKAGE_VERSION);
            return 1;
        default:
            return -1;
        }
    }
    return 0;
}

static const command_t *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

/* Options, then the command; the exit status is the command's. */
int main(int argc, char **argv)
{
    const command_t *cmd;
    ctl_t c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.conf_path = DEFAULT_CONF;
    c.out = stdout;
    c.errs = stderr;
    c.command = "suspectctl";
    rc = parse_opts(argc, argv, &c);
    if (rc != 0) {
        if (rc < 0) {
            usage(stderr);
        }
        return rc < 0 ? CTL_USAGE : CTL_OK;
    }
    if (optind >= argc) {
        usage(stderr);
        return CTL_USAGE;
    }
    cmd = find_command(argv[optind]);
    if (cmd == NULL) {
        return ctl_fail(&c, CTL_USAGE,
                        "unknown command '%s' (check, status, unblock, "
                        "reset, block, locked, simulate, stats, reload)",
                        argv[optind]);
    }
    c.command = cmd->name;
    if ((c.body != NULL || c.body_stdin) && strcmp(cmd->name, "simulate")) {
        return ctl_usage(&c, "--body and --body-stdin are for simulate");
    }
    if (c.body != NULL && c.body_stdin) {
        return ctl_usage(&c, "simulate: --body or --body-stdin, not both");
    }
    c.now_ms = wall_ms();
    rc = cmd->run(&c, argc - optind - 1, argv + optind + 1);
    ctl_unload(&c);
    return rc;
}
