/*
 * xmlsafe.c - parsing a document with a private libxml2 context that
 * refuses any DTD: see xmlsafe.h.
 *
 * libxml2 wants one xmlInitParser() before threads share it (pthread_once).
 * Element lines past 65535 do not fit xmlNode.line; with tag_lines they go
 * to psvi, unused without schema validation, where xmlsafe_line() finds
 * them (xmlGetLineNo() only knows big lines of text nodes).
 */
#include "xmlsafe.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#define PARSE_OPTIONS                                                          \
    (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |               \
     XML_PARSE_BIG_LINES)

/* ---- parsing -------------------------------------------------------------
 */

/* What the private callbacks saw during one parse (ctxt->_private). */
typedef struct parse_state {
    startElementNsSAX2Func start; /* libxml2's own, called by on_start */
    int dtd_line;                 /* line of <!DOCTYPE, 0 when none */
    int err_set;                  /* err_* hold libxml2's first error */
    int err_code;                 /* its xmlParserErrors code */
    int err_line;
    char err_text[SUSPECT_ERR_TEXT_MAX];
} parse_state_t;

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init(void)
{
    xmlInitParser();
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* serror callback: keeps libxml2's first error (not its warnings), on one
 * line: inner line breaks become spaces, trailing ones go. */
static void on_xml_error(void *ctx, xmlErrorPtr e)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state_t *st = ctxt->_private;
    size_t n;

    if (e == NULL || e->level < XML_ERR_ERROR || st->err_set) {
        return;
    }
    st->err_set = 1;
    st->err_code = e->code;
    st->err_line = e->line;
    snprintf(st->err_text, sizeof(st->err_text), "%s",
             e->message != NULL ? e->message : "unknown error");
    n = strlen(st->err_text);
    while (n > 0 && is_space(st->err_text[n - 1])) {
        st->err_text[--n] = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        if (st->err_text[i] == '\n' || st->err_text[i] == '\r') {
            st->err_text[i] = ' ';
        }
    }
}

/* Generic error handler for the duration of a parse: libxml2 reports
 * some errors without a parser context (an encoding conversion failing on
 * UCS-4 input, say) through the thread's generic handler, which prints to
 * stderr, the daemons' log.  The parse still fails through serror. */
static void on_generic_error(void *ctx, const char *fmt, ...)
{
    (void)ctx;
    (void)fmt;
}

/* internalSubset callback: any DOCTYPE stops the parse, unread. */
static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *ext_id,
                       const xmlChar *sys_id)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state_t *st = ctxt->_private;

    (void)name;
    (void)ext_id;
    (void)sys_id;
    st->dtd_line =
        ctxt->input != NULL && ctxt->input->line > 0 ? ctxt->input->line : 1;
    xmlStopParser(ctxt);
}

/* The line of the '<' of the start tag being parsed, or 0.  The parser
 * is at (or just before) the tag's end, the whole tag in its buffer, and an
 * attribute value cannot hold a raw '<', so the tag starts at the last '<'
 * before cur. */
static int tag_start_line(xmlParserCtxtPtr ctxt)
{
    const xmlChar *base = ctxt->input->base, *p = ctxt->input->cur;
    int lines = 0;

    if (base == NULL || p == NULL) {
        return 0;
    }
    while (p > base && *--p != '<') {
        lines += *p == '\n';
    }
    return *p == '<' && ctxt->input->line > lines ? ctxt->input->line - lines
                                                  : 0;
}

/* startElementNs callback: libxml2's own, then the element's line moved
 * to its '<' (past 65535: kept in psvi). */
static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix,
                     const xmlChar *uri, int nns, const xmlChar **ns,
                     int nattrs, int ndefaulted, const xmlChar **attrs)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state_t *st = ctxt->_private;
    int line = tag_start_line(ctxt);
    xmlNodePtr node;

    st->start(ctx, localname, prefix, uri, nns, ns, nattrs, ndefaulted, attrs);
    node = ctxt->node;
    if (line <= 0 || node == NULL || node->type != XML_ELEMENT_NODE ||
        !xmlStrEqual(node->name, localname)) {
        return;
    }
    if (line < 65535) {
        node->line = (unsigned short)line;
    } else {
        node->line = 65535;
        node->psvi = (void *)(ptrdiff_t)line;
    }
}

int xmlsafe_line(const xmlNode *node)
{
    long line = xmlGetLineNo(node);

    if (node->type == XML_ELEMENT_NODE && node->line == 65535 &&
        node->psvi != NULL) {
        line = (long)(ptrdiff_t)node->psvi;
    }
    return line > 0 && line <= INT_MAX ? (int)line : 1;
}

/* Turns what the parser saw into an error, or SUSPECT_OK for a document
 * that is well-formed, DTD-free and has a root. */
static suspect_rc_t check_document(xmlParserCtxtPtr ctxt, xmlDocPtr doc,
                                   const parse_state_t *st, const char *name,
                                   suspect_err_t *err)
{
    if (st->dtd_line > 0 ||
        (doc != NULL && (doc->intSubset != NULL || doc->extSubset != NULL))) {
        return suspect_err_set(err, SUSPECT_E_PARSE, name,
                               st->dtd_line > 0 ? st->dtd_line : 1,
                               "DTD not allowed");
    }
    if (st->err_set && st->err_code == XML_ERR_NO_MEMORY) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    if (st->err_set) {
        return suspect_err_set(err, SUSPECT_E_PARSE, name, st->err_line,
                               "not well-formed XML: %s", st->err_text);
    }
    if (doc == NULL || !ctxt->wellFormed || xmlDocGetRootElement(doc) == NULL) {
        return suspect_err_set(err, SUSPECT_E_PARSE, name, 0,
                               "not well-formed XML: no document");
    }
    return SUSPECT_OK;
}

suspect_rc_t xmlsafe_parse(const char *buf, size_t len, const char *name,
                           bool tag_lines, xmlDocPtr *doc, suspect_err_t *err)
{
    parse_state_t st;
    xmlParserCtxtPtr ctxt;
    xmlGenericErrorFunc gen_fn;
    void *gen_ctx;
    suspect_rc_t rc;

    *doc = NULL;
    if (len > INT_MAX) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, name, 0,
                               "file is too large (%zu bytes, at most %d)", len,
                               INT_MAX);
    }
    pthread_once(&xml_once, xml_init);
    ctxt = xmlNewParserCtxt();
    if (ctxt == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    memset(&st, 0, sizeof(st));
    ctxt->_private = &st;
    ctxt->sax->internalSubset = on_doctype;
    ctxt->sax->serror = on_xml_error;
    st.start = ctxt->sax->startElementNs;
    if (tag_lines && st.start != NULL) {
        ctxt->sax->startElementNs = on_start;
    }
    gen_fn = xmlGenericError;
    gen_ctx = xmlGenericErrorContext;
    xmlSetGenericErrorFunc(NULL, on_generic_error);
    *doc = xmlCtxtReadMemory(ctxt, buf, (int)len, NULL, NULL, PARSE_OPTIONS);
    xmlSetGenericErrorFunc(gen_ctx, gen_fn);
    rc = check_document(ctxt, *doc, &st, name, err);
    if (rc != SUSPECT_OK) {
        xmlFreeDoc(*doc);
        *doc = NULL;
    }
    xmlFreeParserCtxt(ctxt);
    return rc;
}

bool xmlsafe_blank(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r' &&
            buf[i] != '\n') {
            return false;
        }
    }
    return true;
}
