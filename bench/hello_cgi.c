/*
 * hello_cgi.c - the smallest CGI program, for the CGI benchmarks: a header
 * block and one line, so what is measured is the spawning, not the app.
 */
#include <stdio.h>

int main(void)
{
    fputs("Content-Type: text/plain\r\n\r\nhello\n", stdout);
    return 0;
}
