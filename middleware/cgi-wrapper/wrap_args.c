/*
 * wrap_args.c - the command line of suspect-cgi and suspect-cgi-compile
 * (wrap.h).
 *
 *   suspect-cgi [-c FILE] [-s DIR] [-v] [--] [PROGRAM [ARG...]]
 *   #!/usr/sbin/suspect-cgi -c FILE [PROGRAM]
 *   suspect-cgi -c FILE --check
 *
 * The kernel runs a #! wrapper as "suspect-cgi '-c FILE [PROGRAM]'
 * WRAPPER [ARG...]": an option argument holding blanks is split at them,
 * the wrapper path after it is dropped (running it would start
 * suspect-cgi again), and what follows, the request's own arguments, goes
 * to the program.  Options stop at the program ('+' to getopt): its own
 * arguments are not ours.  Messages are one line: they may end up in a
 * web server's error log.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "wrap.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: suspect-cgi [-c FILE] [-s DIR] [-v] [--] "
               "[PROGRAM [ARG...]]\n"
               "       suspect-cgi [-c FILE] --check\n"
               "  -c, --config FILE       suspect.xml (default $SUSPECT_CONF, "
               "else " CGI_DEFAULT_CONF ")\n"
               "  -s, --snapshot-dir DIR  where the compiled configuration "
               "lives (default\n"
               "                          $SUSPECT_SNAPSHOT_DIR, "
               "else " CGI_DEFAULT_SNAPSHOT ")\n"
               "  -t, --check             validate the files for suspect-cgi, "
               "print the routes, exit\n"
               "  -v, --verbose           log each denial\n"
               "  -V, --version           print the version\n"
               "PROGRAM defaults to $SUSPECT_CGI_TARGET, <Cgi program>, or "
               "SCRIPT_FILENAME under <Cgi root>.\n");
}

/* Whether a is the one argument the kernel makes of a #! line's options. */
static bool is_shebang_arg(const char *a)
{
    return a[0] == '-' && strpbrk(a, " \t") != NULL;
}

/*
 * o->args = argv with a #! argument split at blanks and the wrapper path
 * after it dropped.  *nopt gets how many may hold options and the
 * program: with a #! argument only its words, since what follows the
 * wrapper path are the request's arguments.  -1 when out of memory.
 */
static int expand_args(int argc, char **argv, cgi_opts_t *o, int *nopt)
{
    bool shebang = argc >= 2 && is_shebang_arg(argv[1]);
    int k = 0;

    o->args = suspect_calloc((size_t)argc + (shebang ? strlen(argv[1]) : 0) + 1,
                             sizeof(char *));
    if (o->args == NULL) {
        return -1;
    }
    o->args[k++] = argv[0];
    if (shebang) {
        char *save = NULL;

        o->split = suspect_strdup(argv[1]);
        if (o->split == NULL) {
            return -1;
        }
        for (char *w = strtok_r(o->split, " \t", &save); w != NULL;
             w = strtok_r(NULL, " \t", &save)) {
            o->args[k++] = w;
        }
    }
    *nopt = shebang ? k : argc;
    for (int i = shebang ? 3 : 1; i < argc; i++) {
        o->args[k++] = argv[i];
    }
    o->args[k] = NULL;
    return 0;
}

/* $name when set and not empty, else dflt. */
static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : dflt;
}

/* Says what is wrong with the option getopt stopped at.  -1. */
static int bad_option(const cgi_opts_t *o)
{
    if (optopt != 0) {
        fprintf(stderr,
                "suspect-cgi: bad option or missing value: '-%c' (see "
                "suspect-cgi --help)\n",
                optopt);
    } else {
        fprintf(stderr,
                "suspect-cgi: bad option or missing value: '%s' (see "
                "suspect-cgi --help)\n",
                o->args[optind - 1]);
    }
    return -1;
}

/* Defaults from the environment, then the (expanded) arguments. */
int cgi_opts_parse(int argc, char **argv, cgi_opts_t *o)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},
        {"snapshot-dir", required_argument, NULL, 's'},
        {"check", no_argument, NULL, 't'},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int nopt, ch;

    o->conf = env_or("SUSPECT_CONF", CGI_DEFAULT_CONF);
    o->snapdir = env_or("SUSPECT_SNAPSHOT_DIR", CGI_DEFAULT_SNAPSHOT);
    if (expand_args(argc, argv, o, &nopt) != 0) {
        fprintf(stderr, "suspect-cgi: out of memory\n");
        return -1;
    }
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(nopt, o->args, "+c:s:tvVh", longs, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->conf = optarg;
            break;
        case 's':
            o->snapdir = optarg;
            break;
        case 't':
            o->check = true;
            break;
        case 'v':
            o->verbose++;
            break;
        case 'V':
            printf("suspect-cgi %s\n", PACKAGE_VERSION);
            return 1;
        case 'h':
            usage(stdout);
            return 1;
        default:
            return bad_option(o);
        }
    }
    o->prog = optind < nopt ? &o->args[optind] : NULL;
    o->extra = &o->args[nopt - 1];
    return 0;
}

/* Frees what cgi_opts_parse() allocated. */
void cgi_opts_free(cgi_opts_t *o)
{
    free(o->args);
    free(o->split);
}

/* A fixed 500 response straight to stdout. */
void cgi_bare_500(void)
{
    static const char resp[] = "Status: 500 Internal Server Error\r\n"
                               "Content-Type: text/plain; charset=utf-8\r\n"
                               "Cache-Control: no-store\r\n\r\n"
                               "500 Internal Server Error\n";

    if (write(STDOUT_FILENO, resp, sizeof(resp) - 1) < 0) {
        /* Nowhere left to say it. */
    }
}
