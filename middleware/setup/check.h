/*
 * check.h - `suspect-fcgi --check`: validate suspect.xml and its limits
 * file as the daemon would load them, and print the effective routes and
 * limits, so an operator sees what a request will be counted as before
 * reloading a running daemon.
 */
#ifndef MW_CHECK_H
#define MW_CHECK_H

#include <stdio.h>

/*
 * Loads conf_path and the limits file it names, compiles the routes, and
 * prints the result to out; errors and warnings ("file:line: ...") go to
 * errs.  Returns the exit status: 0 when both files are valid and every
 * route's action exists in the limits file, else 1.
 */
int mw_check(const char *conf_path, FILE *out, FILE *errs);

#endif
