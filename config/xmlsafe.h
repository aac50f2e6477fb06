/*
 * xmlsafe.h - how both loaders (the limits file, suspect.xml) read XML:
 * one private module, compiled into each library that loads.  Their files
 * are read by config_read_file() (readfile.h).
 *
 * A document is parsed
 * from memory with a private libxml2 context (threads may load at once),
 * options XML_PARSE_NONET | NOERROR | NOWARNING | BIG_LINES and never
 * NOENT, DTDLOAD or DTDATTR.  Two SAX callbacks of that context are
 * replaced: internalSubset, called for any <!DOCTYPE, records the line and
 * stops the parser before one declaration is read (no entity is ever
 * declared, expanded or fetched); serror keeps libxml2's first error and
 * its line, on one line, instead of printing it.  Optionally a third,
 * startElementNs, moves each element's line from the end of its start tag
 * (where libxml2 takes it) to its '<', so an element written over several
 * lines is reported at its first.
 */
#ifndef SUSPECT_XMLSAFE_H
#define SUSPECT_XMLSAFE_H

#include <stdbool.h>
#include <stddef.h>

#include <libxml/tree.h>

#include "suspect_error.h"

/* True when the len bytes at buf are only XML white space (a document
 * both loaders call empty). */
bool xmlsafe_blank(const char *buf, size_t len);

/*
 * Parses buf[0..len) into *doc (the caller's: xmlFreeDoc()).  tag_lines:
 * report elements at the line of their '<' (see xmlsafe_line()).  Fails,
 * with name and the line in err, with SUSPECT_E_PARSE for a DTD, a
 * document that is not well-formed or has no root, SUSPECT_E_CONFIG when
 * len does not fit libxml2, SUSPECT_E_NOMEM.
 */
suspect_rc_t xmlsafe_parse(const char *buf, size_t len, const char *name,
                           bool tag_lines, xmlDocPtr *doc, suspect_err_t *err);

/* The line of node, at least 1: xmlGetLineNo(), or for an element past
 * line 65535 parsed with tag_lines, the line kept aside for it. */
int xmlsafe_line(const xmlNode *node);

#endif
