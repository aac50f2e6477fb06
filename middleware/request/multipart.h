/*
 * multipart.h - the fields of a multipart/form-data body, read as PHP 8.2
 * reads them into $_POST, without I/O.
 *
 * PHP (main/rfc1867.c), Perl's CGI.pm and Python's cgi and email parsers
 * all read multipart forms, each its own way: PHP skips lines until one
 * is exactly "--boundary" and ends a value at the first "\n--boundary";
 * CGI.pm cuts at "--boundary" anywhere and drops the two bytes before it;
 * Python reads lines.  On the bodies that browsers, curl and HTTP
 * libraries send they agree; elsewhere a client could make one of them
 * read a field that another does not see.  So this reader accepts the
 * shapes on which they agree, plus the bare-LF line ends PHP and Python
 * read alike (CGI.pm reads nothing of such a body), reads those exactly
 * as PHP does, and refuses every other shape (MW_MP_REFUSE, with why),
 * before anything is counted.  Refused:
 *  - a "--boundary" anywhere but at the start of a delimiter line, in
 *    the headers of a part, at the very start of a part's content, after
 *    the closing delimiter, or followed by anything but the line end or
 *    "--" (PHP's line reader cuts long lines every 5120 bytes and reads
 *    "--boundary\0x" as a delimiter, CGI.pm finds it anywhere);
 *  - line ends that mix CRLF and bare LF, a bare CR in a header line, and
 *    any CR at all in a body whose delimiters end in bare LF;
 *  - header lines that are not "token: value" (folded lines, a blank
 *    before the colon, an empty value, control bytes), header blocks
 *    over MW_MP_HEAD_MAX, a repeated Content-Disposition, a
 *    Content-Transfer-Encoding (Python's email decodes it), a part of a
 *    multipart/ type (Python's cgi reads its parts as fields);
 *  - a Content-Disposition that is not "type *(; key=value)" with tokens
 *    and plain quoted strings: no single quotes (PHP quotes with them),
 *    no \" or \\ (escapes PHP, Python and CGI.pm read differently), no
 *    RFC 2231 key*=, name= or filename= given twice, an unquoted
 *    filename, a filename not after a space, "name=" anywhere else
 *    (CGI.pm's regular expressions would find it);
 *  - a body that ends without its closing delimiter.
 * What PHP then reads: a part with a Content-Disposition filename= (any
 * value, even empty) is a file ($_FILES), one with name= and no filename
 * a field; its value is the content up to the line end before the next
 * delimiter; a part without Content-Disposition, or without name and
 * filename, is no field.  Everything before the first delimiter line is
 * skipped.  Names are reported as they came (PHP's naming rules,
 * "u[]" as "u", are lookup.h's).  PHP's own limits (max_input_vars,
 * max_multipart_body_parts, a field after a file of the same name) only
 * make it read fewer fields than reported here.
 *
 * The boundary: CONTENT_TYPE must give it once, as the parameter
 * "boundary=" (lower case, no blank around '='), 1 to MW_MP_BOUNDARY_MAX
 * bytes of RFC 2046's bcharsnospace but ',' (PHP and CGI.pm end it at ','
 * and ';'), plain or in double quotes; "boundary" in any case before it
 * (PHP takes the first) is refused.
 *
 * Reading is incremental (mw_mp_next()): the caller hands the parser the
 * body bytes it has not consumed yet and gets one event at a time; the
 * cost is linear in the body (one memmem() pass over contents, header
 * blocks parsed once), whatever the chunking.  Two modes: with values,
 * a field is reported once its whole value has been given (the caller
 * keeps the bytes of a part until then: the guard reads a prefetched
 * body this way); without, a field is reported by name as soon as its
 * headers are read and its value is skipped like a file's, so the bytes
 * a caller must keep are bounded by MW_MP_HEAD_MAX plus the delimiter
 * (the check of a body's tail as it is forwarded).  Both modes accept
 * and refuse the same bodies and report the same parts.
 *
 * multipart.c is the body's state machine, multipart_head.c the
 * Content-Type and part header grammar.
 */
#ifndef MW_MULTIPART_H
#define MW_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

#include "suspect_error.h"

/* Longest boundary read (RFC 2046 allows 70; Python's cgi 200). */
#define MW_MP_BOUNDARY_MAX 200
/* Longest header block of one part (its lines and the empty line). */
#define MW_MP_HEAD_MAX 8192

/*
 * The boundary of a multipart CONTENT_TYPE type[0..len) into buf
 * (MW_MP_BOUNDARY_MAX bytes; not NUL-terminated), its length in *blen.
 * SUSPECT_OK, or SUSPECT_E_PARSE with *why (a static text) when the type
 * gives none, or gives it in a way parsers read differently (see the file
 * comment).  The media type itself is not checked: the caller decided
 * the body is multipart.
 */
suspect_rc_t mw_mp_boundary(const char *type, size_t len, char *buf,
                            size_t *blen, const char **why);

typedef enum mw_mp_ev {
    MW_MP_MORE,  /* give the parser more bytes (or the end) */
    MW_MP_FIELD, /* a part PHP reads into $_POST */
    MW_MP_FILE,  /* a part PHP reads into $_FILES */
    MW_MP_END,   /* the body ended; everything in it was read */
    MW_MP_REFUSE /* a shape parsers read differently: see why */
} mw_mp_ev_t;

/* A part, as an event reports it; pointers into the caller's bytes. */
typedef struct mw_mp_part {
    const char *name; /* NULL: a file without name= */
    size_t name_len;
    const char *value; /* MW_MP_FIELD with values; else NULL */
    size_t value_len;
    unsigned long long start; /* body offset of its delimiter line */
} mw_mp_part_t;

/* The parser's state; mw_mp_init() sets it up.  Fields are private. */
typedef struct mw_mp {
    char delim[MW_MP_BOUNDARY_MAX + 2]; /* "--" + the boundary */
    size_t dlen;
    bool values;
    int state;
    int eol;                  /* 0 not known yet, 1 bare LF, 2 CRLF */
    bool cr_seen;             /* a CR in the bytes before the first delimiter */
    unsigned long long off;   /* body offset of the next byte given */
    unsigned long long start; /* the current part's delimiter */
    unsigned long long content; /* the current part's content */
    unsigned long long scan_to; /* no delimiter starts before this */
    unsigned long long cr_to;   /* no CR before this (bare LF bodies) */
    size_t head_off;            /* the delimiter line before the block */
    size_t head_scan;           /* header block searched up to here */
    size_t head_len;            /* a value's part: its header block */
    size_t name_off, name_len;  /* ... and its name in that block */
    const char *why;
} mw_mp_t;

/* Sets p up for the body of boundary[0..len) (1 to MW_MP_BOUNDARY_MAX
 * bytes, as mw_mp_boundary() gives it); values: report field values. */
void mw_mp_init(mw_mp_t *p, const char *boundary, size_t len, bool values);

/*
 * The next event of the body.  buf[0..len) are the body's bytes from the
 * first one not consumed yet (none consumed: its first byte); at_end says
 * that nothing follows them.  *used gets how many of them the call
 * consumed: the next call starts after them, and the caller may drop them
 * once it has handled the event (whose pointers lie in buf).
 *   MW_MP_MORE    what could be consumed was; call again with more bytes
 *                 (never returned with at_end);
 *   MW_MP_FIELD   *part: name and, with values, value;
 *   MW_MP_FILE    *part: name (NULL for a file without one);
 *   MW_MP_END     the whole body was read (a body without any delimiter
 *                 line holds no field); every later call returns it;
 *   MW_MP_REFUSE  see mw_mp_why(); every later call returns it.
 */
mw_mp_ev_t mw_mp_next(mw_mp_t *p, const char *buf, size_t len, bool at_end,
                      size_t *used, mw_mp_part_t *part);

/* Why the body was refused (a static text), or NULL. */
const char *mw_mp_why(const mw_mp_t *p);

/* The body offset before which every part has been reported: a part
 * that starts there or later is still to come. */
unsigned long long mw_mp_done_to(const mw_mp_t *p);

#endif
